// The header is parsed by the library's tally::data::parse_npy_header; this reader keeps the
// whole array in memory, as the comparisons want it.

#include "differential/npy.h"

#include <fstream>
#include <iterator>
#include <stdexcept>

#include "tally/data/npy.h"

namespace tally::difftest {

NpyArray read_npy(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("read_npy(" + path + "): cannot open");
  std::vector<char> file((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const data::NpyHeader h = data::parse_npy_header(file.data(), static_cast<int64_t>(file.size()), path);
  if (h.fortran_order) throw std::runtime_error("read_npy(" + path + "): Fortran order");
  const auto nbytes = static_cast<size_t>(h.numel() * data::npy_item_size(h.descr, path));
  const auto data_start = static_cast<size_t>(h.data_offset);
  if (file.size() < data_start + nbytes) throw std::runtime_error("read_npy(" + path + "): truncated data");
  return NpyArray{h.descr, h.shape,
                  std::vector<char>(file.begin() + static_cast<std::ptrdiff_t>(data_start),
                                    file.begin() + static_cast<std::ptrdiff_t>(data_start + nbytes))};
}

}  // namespace tally::difftest
