// bfloat16 has no NumPy dtype: reference.py stores its bits as uint16, so the descr alone cannot
// tell bfloat16 from a real uint16 array; the dtype always comes from the case.

#include "differential/npy_tensor.h"

#include <cstring>
#include <stdexcept>

namespace tally::difftest {
namespace {

// How NumPy describes the bytes reference.py stores for each dtype.
std::string npy_descr(Dtype dtype) {
  switch (dtype) {
    case Dtype::Float32: return "<f4";
    case Dtype::Float64: return "<f8";
    case Dtype::Float16: return "<f2";
    case Dtype::BFloat16: return "<u2";
    case Dtype::Int32: return "<i4";
    case Dtype::Int64: return "<i8";
    case Dtype::UInt8: return "|u1";
    case Dtype::Int8: return "|i1";
    case Dtype::Int16: return "<i2";
    case Dtype::Bool: return "|b1";
    default: return "?";
  }
}

}  // namespace

NpyArray load_npy(const std::string& dir, const std::string& file, Dtype dtype) {
  NpyArray a = read_npy(dir + "/" + file);
  if (a.descr != npy_descr(dtype))
    throw std::runtime_error(file + " holds " + a.descr + ", expected " + npy_descr(dtype) + " for " +
                             std::string(dtype_name(dtype)));
  return a;
}

Tensor to_tensor(const NpyArray& a, Dtype dtype) {
  Tensor t = empty(a.shape, dtype);
  if (!a.bytes.empty()) std::memcpy(t.data_ptr(), a.bytes.data(), a.bytes.size());  // memcpy from null is UB
  return t;
}

}  // namespace tally::difftest
