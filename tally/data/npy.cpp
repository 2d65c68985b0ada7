#include "tally/data/npy.h"

#include <charconv>
#include <cstring>
#include <optional>
#include <string_view>

#include "tally/error/error.h"

namespace tally::data {
namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr int64_t kMagicBytes = 6;

[[noreturn]] void bad_header(const std::string& path, const std::string& why) {
  throw ValueError(detail::str_cat("'", path, "' is not a readable .npy file: ", why));
}

/// Little-endian unsigned integer of `n` bytes at p.
uint64_t read_le(const unsigned char* p, int n) {
  uint64_t v = 0;
  for (int i = n - 1; i >= 0; --i) v = v << 8 | p[i];
  return v;
}

/// Where `'key'` followed by ':' starts in dict at or after `from`, or npos.
size_t find_key(std::string_view dict, const std::string& quoted, size_t from) {
  for (size_t at = dict.find(quoted, from); at != std::string_view::npos; at = dict.find(quoted, at + 1)) {
    const size_t colon = dict.find_first_not_of(' ', at + quoted.size());
    if (colon != std::string_view::npos && dict[colon] == ':') return at;
  }
  return std::string_view::npos;
}

/// The dict text after `'key':`, leading spaces skipped.
std::string_view value_of(std::string_view dict, std::string_view key, const std::string& path) {
  const std::string quoted = detail::str_cat("'", key, "'");
  size_t at = find_key(dict, quoted, 0);
  if (at == std::string_view::npos) bad_header(path, detail::str_cat("its header has no ", quoted, " key: ", dict));
  // Python's dict literal keeps the last of two equal keys, so the first would be read wrongly.
  if (find_key(dict, quoted, at + 1) != std::string_view::npos)
    bad_header(path, detail::str_cat("its header gives the ", quoted, " key twice: ", dict));
  at = dict.find_first_not_of(' ', dict.find(':', at + quoted.size()) + 1);
  if (at == std::string_view::npos) bad_header(path, detail::str_cat("no value after ", quoted));
  return dict.substr(at);
}

std::string parse_descr(std::string_view v, const std::string& path) {
  const char quote = v.empty() ? '\0' : v[0];
  const size_t end = (quote == '\'' || quote == '"') ? v.find(quote, 1) : std::string_view::npos;
  if (end == std::string_view::npos) bad_header(path, detail::str_cat("'descr' is not a quoted string: ", v));
  return std::string(v.substr(1, end - 1));
}

bool parse_fortran_order(std::string_view v, const std::string& path) {
  if (v.starts_with("True")) return true;
  if (v.starts_with("False")) return false;
  bad_header(path, detail::str_cat("'fortran_order' is neither True nor False: ", v));
}

/// "(3, 4)", "(7,)" or "()".
std::vector<int64_t> parse_shape(std::string_view v, const std::string& path) {
  const size_t close = v.find(')');
  if (v.empty() || v[0] != '(' || close == std::string_view::npos)
    bad_header(path, detail::str_cat("'shape' is not a tuple: ", v));
  std::vector<int64_t> shape;
  std::string_view items = v.substr(1, close - 1);
  while (!items.empty()) {
    const size_t comma = items.find(',');
    std::string_view item = items.substr(0, comma);
    items = comma == std::string_view::npos ? std::string_view{} : items.substr(comma + 1);
    const size_t first = item.find_first_not_of(' ');
    if (first == std::string_view::npos) continue;  // the empty item after a trailing comma
    item = item.substr(first, item.find_last_not_of(" L") + 1 - first);  // Python 2 wrote 3L
    int64_t n = -1;
    const auto [end, ec] = std::from_chars(item.data(), item.data() + item.size(), n);
    if (ec != std::errc() || end != item.data() + item.size() || n < 0)
      bad_header(path, detail::str_cat("'shape' has a dimension that is not a size: '", item, "'"));
    shape.push_back(n);
  }
  return shape;
}

/// The product of the sizes, or nothing when it does not fit in int64.
std::optional<int64_t> product(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    if (__builtin_mul_overflow(n, d, &n)) return std::nullopt;
  return n;
}

/// Where the dict starts: after the magic string, the version and the length field, which 2.0
/// and 3.0 widened from 2 to 4 bytes.
int64_t dict_start_of(int major_version) { return major_version == 1 ? 10 : 12; }

}  // namespace

int64_t NpyHeader::numel() const {
  const std::optional<int64_t> n = product(shape);
  TALLY_CHECK(n, "a .npy shape of ", shape.size(), " dimensions declares more than 2^63 - 1 elements");
  return *n;
}

int64_t npy_header_bytes(const void* bytes, int64_t nbytes, const std::string& path) {
  const auto* p = static_cast<const unsigned char*>(bytes);
  if (nbytes < kMagicBytes || std::memcmp(p, kMagic, kMagicBytes) != 0)
    bad_header(path, "bad magic string (a .npy file starts with \\x93NUMPY)");
  if (nbytes < 8) bad_header(path, detail::str_cat("the header is cut short at ", nbytes, " bytes"));
  const int major_version = p[6];
  if (major_version < 1 || major_version > 3 || p[7] != 0)
    bad_header(path, detail::str_cat("unknown format version ", int(p[6]), ".", int(p[7]), " (known: 1.0, 2.0, 3.0)"));
  const int64_t dict_start = dict_start_of(major_version);
  if (nbytes < dict_start) bad_header(path, detail::str_cat("the header is cut short at ", nbytes, " bytes"));
  return dict_start + static_cast<int64_t>(read_le(p + 8, static_cast<int>(dict_start - 8)));
}

NpyHeader parse_npy_header(const void* bytes, int64_t nbytes, const std::string& path) {
  const auto* p = static_cast<const unsigned char*>(bytes);
  NpyHeader h;
  h.data_offset = npy_header_bytes(bytes, nbytes, path);
  h.major_version = p[6];
  const int64_t dict_start = dict_start_of(h.major_version);
  const int64_t dict_bytes = h.data_offset - dict_start;
  if (nbytes < h.data_offset)
    bad_header(path, detail::str_cat("the header declares ", h.data_offset, " bytes but the file holds ", nbytes));
  const std::string_view dict(reinterpret_cast<const char*>(p + dict_start), static_cast<size_t>(dict_bytes));
  h.descr = parse_descr(value_of(dict, "descr", path), path);
  h.fortran_order = parse_fortran_order(value_of(dict, "fortran_order", path), path);
  h.shape = parse_shape(value_of(dict, "shape", path), path);
  if (!product(h.shape)) bad_header(path, "'shape' declares more than 2^63 - 1 elements");
  return h;
}

int64_t npy_item_size(const std::string& descr, const std::string& path) {
  int64_t size = 0;
  const char* digits = descr.data() + std::min<size_t>(2, descr.size());
  const auto [end, ec] = std::from_chars(digits, descr.data() + descr.size(), size);
  TALLY_CHECK_TYPE_ERROR(descr.size() >= 3 && ec == std::errc() && end == descr.data() + descr.size() && size > 0,
                         "'", path, "': unreadable .npy dtype '", descr, "'");
  TALLY_CHECK_TYPE_ERROR(descr[0] != '>' || size == 1, "'", path, "': big-endian .npy dtype '", descr,
                         "' is not supported (save it as '<", descr.substr(1), "')");
  return size;
}

}  // namespace tally::data
