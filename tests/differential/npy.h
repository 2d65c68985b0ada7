#pragma once
// A minimal .npy (NumPy format 1.0/2.0/3.0) reader: the differential tests exchange every tensor with
// the PyTorch reference script through these files, so both sides see the same bits.

#include <cstdint>
#include <string>
#include <vector>

namespace tally::difftest {

/// One array as stored on disk: its element code, shape and raw C-order little-endian bytes.
struct NpyArray {
  std::string descr;            ///< NumPy type code, e.g. "<f4", "|u1", "|b1"
  std::vector<int64_t> shape;   ///< empty for a 0-d array
  std::vector<char> bytes;      ///< numel * item size bytes, row-major
};

/// Reads `path`; raises std::runtime_error (tally::Error for a bad header or dtype) for anything
/// but a little-endian, C-order array.
NpyArray read_npy(const std::string& path);

}  // namespace tally::difftest
