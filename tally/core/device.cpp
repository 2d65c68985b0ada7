#include "tally/core/device.h"

#include <charconv>

#include "tally/error/error.h"

namespace tally {

Device::Device(DeviceType type, int index) : type_(type), index_(index < 0 ? 0 : index) {
  TALLY_CHECK(type == kCUDA || index <= 0, type == kCPU ? "CPU" : "meta", " device index must be -1 or zero, got ", index);
}

Device::Device(std::string_view spec) : type_(kCPU), index_(0) {
  std::string_view kind = spec.substr(0, spec.find(':'));
  if (kind == "cpu") type_ = kCPU;
  else if (kind == "cuda") type_ = kCUDA;
  else if (kind == "meta") type_ = kMeta;
  else TALLY_CHECK(false, "Expected one of cpu, cuda, meta device type at start of device string: ", spec);
  if (kind.size() == spec.size()) return;
  std::string_view digits = spec.substr(kind.size() + 1);
  int value = -1;
  auto [end, err] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
  TALLY_CHECK(!digits.empty() && err == std::errc() && end == digits.data() + digits.size() && value >= 0,
              "Invalid device string: '", spec, "'");
  TALLY_CHECK(type_ == kCUDA || value == 0, type_ == kCPU ? "CPU" : "meta", " device index must be -1 or zero, got ", value);
  index_ = value;
}

std::string Device::str() const {
  switch (type_) {
    case kCPU: return "cpu";
    case kMeta: return "meta";
    case kCUDA: break;
  }
  return "cuda:" + std::to_string(index_);
}

}  // namespace tally
