#pragma once
// User errors are typed exceptions carrying the numbers that explain them; internal bugs are
// asserts that also throw (the library never aborts). Only the CLI's main turns them into exit codes.

#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>

namespace tally {

/// Base of every error tally raises.
class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& msg) : std::runtime_error(msg) {}
};
/// A value (shape, size, dtype combination) is not acceptable for the operation.
class ValueError : public Error { using Error::Error; };
/// An index or dimension is out of range.
class IndexError : public Error { using Error::Error; };
/// A dtype is not supported by the operation.
class TypeError : public Error { using Error::Error; };
/// The operation exists in PyTorch but is not implemented here for these arguments.
class NotImplementedError : public Error { using Error::Error; };
/// The allocator could not get the memory a tensor needs (PyTorch's OutOfMemoryError).
class OutOfMemoryError : public Error { using Error::Error; };
/// Tensors on different devices in one op, or a device this build or machine does not have
/// (PyTorch raises RuntimeError for both).
class DeviceError : public Error { using Error::Error; };
/// A file could not be read or written.
class IOError : public Error { using Error::Error; };
/// A collective between processes failed, or the job's ranks disagree (torch's DistBackendError).
class DistError : public Error { using Error::Error; };
/// A broken invariant inside tally: a bug, not a user mistake.
class InternalError : public Error { using Error::Error; };

namespace detail {
template <class... Args>
std::string str_cat(const Args&... args) {
  std::ostringstream os;
  (os << ... << args);
  return os.str();
}
}  // namespace detail

}  // namespace tally

/// Raise `Type` with the streamed message parts unless `cond` holds.
#define TALLY_CHECK_TYPE(Type, cond, ...)                              \
  do {                                                                 \
    if (!(cond)) [[unlikely]]                                          \
      throw Type(::tally::detail::str_cat(__VA_ARGS__));               \
  } while (0)

#define TALLY_CHECK(cond, ...) TALLY_CHECK_TYPE(::tally::ValueError, cond, __VA_ARGS__)
#define TALLY_CHECK_INDEX(cond, ...) TALLY_CHECK_TYPE(::tally::IndexError, cond, __VA_ARGS__)
#define TALLY_CHECK_TYPE_ERROR(cond, ...) TALLY_CHECK_TYPE(::tally::TypeError, cond, __VA_ARGS__)

/// A condition that only a bug in tally can break.
#define TALLY_INTERNAL_ASSERT(cond, ...)                                              \
  TALLY_CHECK_TYPE(::tally::InternalError, cond, "internal assert failed at ", __FILE__, \
                   ":", __LINE__, ": " #cond " ", ##__VA_ARGS__)
