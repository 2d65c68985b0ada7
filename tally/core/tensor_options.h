#pragma once
// TensorOptions: the dtype and device a factory function makes a tensor with, as in libtorch:
// `ones({2, 3}, TensorOptions().dtype(kBFloat16).device(Device("cuda:0")))`, or just
// `ones({2, 3}, kBFloat16)` / `ones({2, 3}, kCUDA)`. What is left unset takes the function's
// default (float32, or the like-tensor's dtype and device).

#include <optional>

#include "tally/core/device.h"
#include "tally/dtype/dtype.h"

namespace tally {

class TensorOptions {
 public:
  TensorOptions() = default;
  TensorOptions(Dtype dtype) : dtype_(dtype) {}                      // NOLINT: implicit, as libtorch
  TensorOptions(std::optional<Dtype> dtype) : dtype_(dtype) {}       // NOLINT
  TensorOptions(std::nullopt_t) {}                                   // NOLINT
  TensorOptions(Device device) : device_(device) {}                  // NOLINT
  TensorOptions(DeviceType type) : device_(Device(type)) {}          // NOLINT

  /// A copy with the dtype set.
  TensorOptions dtype(Dtype d) const { TensorOptions o = *this; o.dtype_ = d; return o; }
  /// A copy with the device set.
  TensorOptions device(Device d) const { TensorOptions o = *this; o.device_ = d; return o; }

  /// The dtype, if set.
  std::optional<Dtype> dtype_opt() const { return dtype_; }
  /// The device, if set.
  std::optional<Device> device_opt() const { return device_; }
  /// The dtype, or `fallback` when unset.
  Dtype dtype_or(Dtype fallback) const { return dtype_.value_or(fallback); }
  /// The device, or `fallback` (the CPU unless given) when unset.
  Device device_or(Device fallback = Device(kCPU)) const { return device_.value_or(fallback); }

 private:
  std::optional<Dtype> dtype_;
  std::optional<Device> device_;
};

}  // namespace tally
