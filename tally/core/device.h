#pragma once
// Device: where a tensor's bytes live (libtorch: c10::Device). "cpu", "cuda:N" or "meta". An op
// is defined once for every device: its checks, shape rule, cost and backward rule are shared, and
// only the kernel it calls depends on where its operands are. A meta tensor has sizes, strides
// and a dtype but no bytes: ops on it run their meta step only (Note [Meta device] in ops/apply.h).

#include <cstdint>
#include <ostream>
#include <string>
#include <string_view>

namespace tally {

/// The kind of memory and processor (libtorch: c10::DeviceType).
enum class DeviceType : uint8_t { CPU, CUDA, Meta };
inline constexpr DeviceType kCPU = DeviceType::CPU;
inline constexpr DeviceType kCUDA = DeviceType::CUDA;
inline constexpr DeviceType kMeta = DeviceType::Meta;

/// A device type and, for CUDA, an index; "cuda" without an index means the current device (0).
class Device {
 public:
  /// A device of `type`; `index` -1 means the current one (always 0 for CPU).
  Device(DeviceType type = kCPU, int index = -1);  // NOLINT: implicit, as c10::Device
  /// Parse "cpu", "cuda", "cuda:N" or "meta" (libtorch's spelling); ValueError names what it expected.
  Device(std::string_view spec);  // NOLINT
  Device(const char* spec) : Device(std::string_view(spec)) {}  // NOLINT

  DeviceType type() const { return type_; }
  /// The index: 0 for CPU and meta, and for a CUDA device given without one.
  int index() const { return index_; }
  bool is_cpu() const { return type_ == kCPU; }
  bool is_cuda() const { return type_ == kCUDA; }
  bool is_meta() const { return type_ == kMeta; }
  /// "cpu", "cuda:N" or "meta", as PyTorch prints devices.
  std::string str() const;

  bool operator==(const Device& o) const { return type_ == o.type_ && index_ == o.index_; }
  bool operator!=(const Device& o) const { return !(*this == o); }

 private:
  DeviceType type_;
  int index_;
};

inline std::ostream& operator<<(std::ostream& os, const Device& d) { return os << d.str(); }

}  // namespace tally
