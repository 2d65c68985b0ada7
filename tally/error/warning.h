#pragma once
// Warnings: input that is legal but most likely a mistake (PyTorch's TORCH_WARN and
// TORCH_WARN_ONCE). tally warns wherever PyTorch does, with PyTorch's words; a program that
// means it can silence them or route them elsewhere.

#include <functional>
#include <mutex>
#include <string>

#include "tally/error/error.h"

namespace tally {

/// Receives each warning tally gives (the role of c10::WarningHandler).
using WarningHandler = std::function<void(const std::string& message)>;
/// Install `handler` for the whole process and return the one it replaces; an empty handler
/// restores the default, which prints "tally warning: <message>" to stderr.
WarningHandler set_warning_handler(WarningHandler handler);
/// Turn every warning off, or back on, for the whole process. TALLY_WARNINGS=0 in the
/// environment starts a process with them off.
void set_warnings_enabled(bool enabled);
/// Whether warnings are given at all.
bool warnings_enabled();
/// Hand `message` to the handler, if warnings are enabled.
void warn(const std::string& message);

}  // namespace tally

/// Warn with the streamed message parts, every time.
#define TALLY_WARN(...) ::tally::warn(::tally::detail::str_cat(__VA_ARGS__))

/// Warn with the streamed message parts the first time this line is reached while warnings are
/// enabled, and never again in the process (TORCH_WARN_ONCE).
#define TALLY_WARN_ONCE(...)                                                     \
  do {                                                                           \
    if (::tally::warnings_enabled()) {                                           \
      static std::once_flag tally_warned_once_;                                  \
      std::call_once(tally_warned_once_, [&] { TALLY_WARN(__VA_ARGS__); });      \
    }                                                                            \
  } while (0)
