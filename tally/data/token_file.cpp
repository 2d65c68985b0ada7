#include "tally/data/token_file.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <vector>

#include "tally/data/npy.h"
#include "tally/error/error.h"

namespace tally::data {

// The files are little-endian and tokens are copied out as they lie.
static_assert(std::endian::native == std::endian::little, "tally::data reads little-endian token files");

namespace {

struct DtypeInfo {
  TokenDtype dtype;
  std::string_view name;   // NumPy's
  std::string_view descr;  // in a .npy header
};
constexpr DtypeInfo kDtypes[] = {
    {TokenDtype::UInt16, "uint16", "<u2"},
    {TokenDtype::Int32, "int32", "<i4"},
    {TokenDtype::UInt32, "uint32", "<u4"},
    {TokenDtype::Int64, "int64", "<i8"},
    {TokenDtype::UInt8, "uint8", "|u1"},
};

const DtypeInfo& info(TokenDtype dtype) { return kDtypes[static_cast<int>(dtype)]; }

/// f.template operator()<T>() with T the C++ type of `dtype`.
template <class F>
decltype(auto) visit(TokenDtype dtype, F&& f) {
  switch (dtype) {
    case TokenDtype::UInt16: return f.template operator()<uint16_t>();
    case TokenDtype::Int32: return f.template operator()<int32_t>();
    case TokenDtype::UInt32: return f.template operator()<uint32_t>();
    case TokenDtype::Int64: return f.template operator()<int64_t>();
    case TokenDtype::UInt8: return f.template operator()<uint8_t>();
  }
  throw InternalError(detail::str_cat("unknown TokenDtype ", int(dtype)));
}

/// The file opened for reading, refused when it holds no bytes.
std::shared_ptr<const io::ReadOnlyFile> open_file(const std::string& path) {
  auto file = io::ReadOnlyFile::open(path, "token file");
  TALLY_CHECK(file->size() > 0, "token file '", path, "' is empty (0 bytes): it holds no tokens");
  return file;
}

/// The file's first min(n, size) bytes.
std::vector<std::byte> read_prefix(const io::ReadOnlyFile& file, uint64_t n) {
  std::vector<std::byte> bytes(std::min(n, file.size()));
  file.read_at(0, bytes);
  return bytes;
}

bool starts_like_npy(const io::ReadOnlyFile& file) {
  const std::vector<std::byte> magic = read_prefix(file, 6);
  return magic.size() == 6 && std::memcmp(magic.data(), "\x93NUMPY", 6) == 0;
}

}  // namespace

int64_t element_size(TokenDtype dtype) {
  return visit(dtype, []<class T>() { return static_cast<int64_t>(sizeof(T)); });
}

std::string_view dtype_name(TokenDtype dtype) { return info(dtype).name; }

TokenDtype token_dtype_from_name(std::string_view name) {
  for (const DtypeInfo& d : kDtypes)
    if (d.name == name) return d.dtype;
  throw ValueError(detail::str_cat("unknown token dtype '", name, "' (known: uint16, int32, uint32, int64, uint8)"));
}

TokenFile::TokenFile(std::string path, std::shared_ptr<const io::ReadOnlyFile> file, int64_t offset_bytes, int64_t size, TokenDtype dtype)
    : path_(std::move(path)), file_(std::move(file)), offset_bytes_(offset_bytes), size_(size), dtype_(dtype) {}

TokenFile TokenFile::open_raw(const std::string& path, TokenDtype dtype) {
  auto file = open_file(path);
  const auto nbytes = static_cast<int64_t>(file->size());
  const int64_t item = element_size(dtype);
  TALLY_CHECK(!starts_like_npy(*file), "token file '", path,
              "' starts with the .npy magic string: it was written by np.save; give it a name ending in .npy (tally train "
              "reads such files by their header), or open it with TokenFile::open_npy");
  TALLY_CHECK(nbytes % item == 0, "token file '", path, "' holds ", nbytes, " bytes, which is not a multiple of ",
              item, " (the size of ", dtype_name(dtype), "): is the dtype right?");
  return TokenFile(path, std::move(file), 0, nbytes / item, dtype);
}

TokenFile TokenFile::open_npy(const std::string& path) {
  auto file = open_file(path);
  const std::vector<std::byte> prefix = read_prefix(*file, 12);  // what the header's length needs
  const auto header_bytes = static_cast<uint64_t>(npy_header_bytes(prefix.data(), static_cast<int64_t>(prefix.size()), path));
  const std::vector<std::byte> header = read_prefix(*file, header_bytes);
  const NpyHeader h = parse_npy_header(header.data(), static_cast<int64_t>(header.size()), path);
  const DtypeInfo* found = nullptr;
  bool little_endian_supported = false;  // a big-endian '>u2' whose '<u2' a token file holds
  for (const DtypeInfo& d : kDtypes) {
    if (d.descr == h.descr) found = &d;
    if (h.descr.size() > 1 && h.descr[0] == '>' && d.descr.substr(1) == std::string_view(h.descr).substr(1)) little_endian_supported = true;
  }
  if (little_endian_supported) npy_item_size(h.descr, path);  // raises, naming the little-endian dtype to save as
  TALLY_CHECK_TYPE_ERROR(found, "'", path, "' holds .npy dtype '", h.descr,
                         "'; token files hold uint16 (<u2), int32 (<i4), uint32 (<u4), int64 (<i8) or uint8 (|u1)");
  TALLY_CHECK(!h.fortran_order || h.shape.size() <= 1, "'", path, "' holds a Fortran-order array of ",
              h.shape.size(), " dimensions; token files must be 1-d or C-order");
  const int64_t numel = h.numel(), item = element_size(found->dtype);
  const int64_t data_bytes = static_cast<int64_t>(file->size()) - h.data_offset;
  TALLY_CHECK(numel > 0, "'", path, "' is empty: its .npy header declares ", numel, " tokens");
  TALLY_CHECK(numel <= data_bytes / item && numel * item == data_bytes, "'", path, "': the .npy header declares ",
              numel, " elements of ", found->name, " (", numel, " x ", item, " bytes) but ", data_bytes,
              " bytes follow the ", h.data_offset, "-byte header");
  return TokenFile(path, std::move(file), h.data_offset, numel, found->dtype);
}

int64_t TokenFile::at(int64_t i) const {
  TALLY_CHECK_INDEX(i >= 0 && i < size_, "index ", i, " is out of bounds for token file '", path_, "' with ", size_, " tokens");
  int64_t v;
  gather(i, {&v, 1});
  return v;
}

void TokenFile::gather(int64_t start, std::span<int64_t> out) const {
  const auto count = static_cast<int64_t>(out.size());
  TALLY_CHECK_INDEX(start >= 0 && count <= size_ && start <= size_ - count, "tokens [", start, ", ", start + count,
                    ") are out of bounds for token file '", path_, "' with ", size_, " tokens");
  visit(dtype_, [&]<class T>() {
    constexpr auto item = static_cast<int64_t>(sizeof(T));
    // The narrow tokens are read into the tail of `out` and widened front to back in place: token
    // i's int64 ends at byte 8(i + 1), at or before where token i + 1's bytes start, so nothing is
    // overwritten before it is read, and no buffer is allocated per window.
    auto* bytes = reinterpret_cast<std::byte*>(out.data());
    const int64_t tail = count * (8 - item);
    file_->read_at(static_cast<uint64_t>(offset_bytes_ + start * item), {bytes + tail, static_cast<size_t>(count * item)});
    if constexpr (!std::is_same_v<T, int64_t>) {
      for (int64_t i = 0; i < count; ++i) {
        T v;
        std::memcpy(&v, bytes + tail + i * item, sizeof(T));
        out[static_cast<size_t>(i)] = v;
      }
    }
  });
}

TokenFile TokenFile::slice(int64_t start, int64_t count) const {
  TALLY_CHECK_INDEX(start >= 0 && count >= 0 && count <= size_ && start <= size_ - count, "tokens [", start, ", ", start + count,
                    ") are out of bounds for token file '", path_, "' with ", size_, " tokens");
  return TokenFile(path_, file_, offset_bytes_ + start * element_size(dtype_), count, dtype_);
}

}  // namespace tally::data
