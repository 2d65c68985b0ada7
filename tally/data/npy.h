#pragma once
// The .npy header (NumPy format versions 1.0, 2.0 and 3.0): the magic string "\x93NUMPY", a
// version, the header's length, then a Python dict literal
//   {'descr': '<i4', 'fortran_order': False, 'shape': (1000,), }
// padded with spaces. TokenFile reads token data through it, and the differential tests read
// the reference's arrays through it.

#include <cstdint>
#include <string>
#include <vector>

namespace tally::data {

/// What a .npy header says about the array after it.
struct NpyHeader {
  int major_version = 1;       ///< 1, 2 or 3 (3 allows a UTF-8 header)
  std::string descr;           ///< NumPy's type string, e.g. "<i4", "<u2", "|u1"
  bool fortran_order = false;  ///< column-major element order
  std::vector<int64_t> shape;  ///< empty for a 0-d array
  int64_t data_offset = 0;     ///< bytes from the start of the file to the first element

  /// Number of elements the shape declares (1 for a 0-d array).
  int64_t numel() const;
};

/// The header at the start of `bytes` (`nbytes` of them), as stored in the file `path`, which
/// is named in errors. ValueError for a bad magic string, an unknown version, a header that is
/// cut short or a dict without 'descr', 'fortran_order' and 'shape'.
NpyHeader parse_npy_header(const void* bytes, int64_t nbytes, const std::string& path);

/// The whole header's length (where the data starts), from its first 12 bytes at most: what a
/// reader needs before it reads the rest. ValueError for a bad magic string, an unknown version,
/// or fewer bytes than the length field needs.
int64_t npy_header_bytes(const void* bytes, int64_t nbytes, const std::string& path);

/// Bytes per element of a little-endian or byte-order-free descr ("<f4" → 4, "|b1" → 1);
/// TypeError for a big-endian or unreadable one.
int64_t npy_item_size(const std::string& descr, const std::string& path);

}  // namespace tally::data
