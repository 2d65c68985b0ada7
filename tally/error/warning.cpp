#include "tally/error/warning.h"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace tally {

namespace {

bool enabled_by_environment() {
  const char* v = std::getenv("TALLY_WARNINGS");
  return v == nullptr || std::strcmp(v, "0") != 0;
}

std::atomic<bool> g_enabled{enabled_by_environment()};

struct Handler {
  std::mutex mu;  // one warning at a time: threads' lines do not interleave
  WarningHandler handler;
};

Handler& handler() {
  static Handler* h = new Handler();  // never destroyed: ops may warn from static destructors
  return *h;
}

}  // namespace

WarningHandler set_warning_handler(WarningHandler h) {
  Handler& current = handler();
  std::lock_guard lock(current.mu);
  std::swap(current.handler, h);
  return h;
}

void set_warnings_enabled(bool enabled) { g_enabled.store(enabled, std::memory_order_relaxed); }

bool warnings_enabled() { return g_enabled.load(std::memory_order_relaxed); }

void warn(const std::string& message) {
  if (!warnings_enabled()) return;
  Handler& current = handler();
  std::lock_guard lock(current.mu);
  if (current.handler) current.handler(message);
  else std::fprintf(stderr, "tally warning: %s\n", message.c_str());
}

}  // namespace tally
