// Parsing and validating safetensors files. This file depends on the error types, the Dtype enum,
// nlohmann-json, regular_file.cpp and checksum.cpp only, and creates no tensor: the fuzzer
// (tests/io/fuzz_safetensors.cpp, tests/io/run_fuzz.sh) compiles it with those alone. Tensors
// are made in safetensors.cpp.

#include <algorithm>
#include <bit>
#include <cstring>
#include <nlohmann/json.hpp>
#include <set>

#include "tally/io/checksum.h"
#include "tally/io/regular_file.h"
#include "tally/io/safetensors.h"

namespace tally::io {

static_assert(std::endian::native == std::endian::little, "tally::io reads and writes little-endian safetensors files");

// Note [Strict safetensors]
// A checkpoint reader that guesses is how a truncated or hand-edited file turns into a model with
// silently wrong weights. So a file is accepted only when it has exactly one reading:
//   - at least 8 bytes; the header length (u64 little-endian) is at most 100,000,000 and fits in
//     the file; the header is valid UTF-8 and one JSON object (trailing spaces allowed, as the
//     format pads with them), with no key repeated in any object (nlohmann keeps the last one,
//     which would hide a tensor);
//   - every entry but `__metadata__` has a non-empty name and exactly the fields dtype (a string
//     naming a dtype tally has), shape (non-negative integers) and data_offsets (two non-negative
//     integers, begin <= end); its element count times element size, computed without overflow,
//     equals end - begin;
//   - sorted by begin, the tensors tile the data section: the first begins at 0, each begins
//     where the one before ended, and the last ends where the file does;
//   - `__metadata__`, when present, is an object of strings;
//   - a BOOL tensor's bytes are 0 or 1 (checked when it is read, as C++ bools must be).
// These are the rules of the reference implementation (huggingface/safetensors), which rejects
// holes and overlaps as well, plus the duplicate-key, bool and field checks it leaves to serde.
// A file with checksums (Note [Checksums] in checksum.cpp) must also have one, well-formed, for
// every tensor and the metadata, and none for anything else; the metadata's is checked at open.

namespace {

constexpr uint64_t kMaxHeaderBytes = 100'000'000;  // the reference implementation's limit
constexpr size_t kMaxJsonDepth = 64;               // a real header nests 3 deep

/// A dtype the format defines: its name, its width, and tally's dtype where tally has it.
struct DtypeName {
  std::string_view name;
  int bits;
  std::optional<Dtype> dtype;
};
constexpr DtypeName kDtypeNames[] = {
    {"F64", 64, kFloat64},     {"F32", 32, kFloat32}, {"F16", 16, kFloat16}, {"BF16", 16, kBFloat16}, {"F8_E4M3", 8, kFloat8_e4m3fn},
    {"F8_E5M2", 8, kFloat8_e5m2}, {"I64", 64, kInt64}, {"I32", 32, kInt32}, {"U8", 8, kUInt8},        {"I8", 8, kInt8},
    {"I16", 16, kInt16},       {"BOOL", 8, kBool},
    // The rest of the format's dtypes: read and listed, refused when loaded as a tensor.
    {"U16", 16, std::nullopt}, {"U32", 32, std::nullopt},
    {"U64", 64, std::nullopt}, {"C64", 64, std::nullopt}, {"F8_E8M0", 8, std::nullopt}, {"F8_E4M3FNUZ", 8, std::nullopt},
    {"F8_E5M2FNUZ", 8, std::nullopt}, {"F6_E2M3", 6, std::nullopt}, {"F6_E3M2", 6, std::nullopt}, {"F4", 4, std::nullopt},
};
/// The format's names of the dtypes tally computes with, for messages: "F64 F32 ... BOOL".
const std::string& supported_names() {
  static const std::string names = [] {
    std::string s;
    for (const DtypeName& d : kDtypeNames)
      if (d.dtype) s.append(s.empty() ? "" : " ").append(d.name);
    return s;
  }();
  return names;
}

/// A JSON value as it appears in the header, shortened for a message.
std::string show(const nlohmann::json& j) {
  std::string s = j.dump(-1, ' ', true, nlohmann::json::error_handler_t::replace);
  if (s.size() > 60) s = s.substr(0, 57) + "...";
  return s;
}

/// `name` shortened for a message.
std::string show(std::string_view name) { return name.size() > 40 ? std::string(name.substr(0, 37)) + "..." : std::string(name); }

/// Raise the SafetensorsError of file `file` with the streamed message parts.
template <class... Args>
[[noreturn]] void fail(const std::string& file, const Args&... parts) {
  throw SafetensorsError(detail::str_cat("'", file, "' is not a valid safetensors file: ", parts...));
}

std::string show_shape(const DimVector& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

/// Offset of the first byte of `s` that is not part of well-formed UTF-8 (RFC 3629: no overlong
/// forms, no surrogates, nothing above U+10FFFF), or s.size().
size_t invalid_utf8_at(std::string_view s) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  const size_t n = s.size();
  size_t i = 0;
  while (i < n) {
    const unsigned c = p[i];
    if (c < 0x80) { ++i; continue; }
    size_t len;
    unsigned lo = 0x80, hi = 0xBF;  // the allowed range of the second byte
    if (c >= 0xC2 && c <= 0xDF) len = 2;
    else if (c == 0xE0) { len = 3; lo = 0xA0; }
    else if (c == 0xED) { len = 3; hi = 0x9F; }
    else if (c >= 0xE1 && c <= 0xEF) len = 3;
    else if (c == 0xF0) { len = 4; lo = 0x90; }
    else if (c >= 0xF1 && c <= 0xF3) len = 4;
    else if (c == 0xF4) { len = 4; hi = 0x8F; }
    else return i;
    if (n - i < len) return i;
    if (p[i + 1] < lo || p[i + 1] > hi) return i;
    for (size_t k = 2; k < len; ++k)
      if (p[i + k] < 0x80 || p[i + k] > 0xBF) return i;
    i += len;
  }
  return n;
}

/// A non-negative JSON integer, or nothing (negative, fractional, too large, or not a number).
std::optional<uint64_t> as_count(const nlohmann::json& j) {
  if (j.is_number_unsigned()) return j.get<uint64_t>();
  if (j.is_number_integer() && j.get<int64_t>() >= 0) return static_cast<uint64_t>(j.get<int64_t>());
  return std::nullopt;
}

}  // namespace

std::string_view safetensors_dtype_name(Dtype dtype) {
  for (const DtypeName& d : kDtypeNames)
    if (d.dtype == dtype) return d.name;
  throw InternalError(detail::str_cat("no safetensors name for dtype ", static_cast<int>(dtype)));
}

SafetensorsReader SafetensorsReader::open(const std::filesystem::path& path) {
  SafetensorsReader r;
  r.name_ = path.string();
  r.file_ = io::ReadOnlyFile::open(path, "safetensors file");
  r.size_ = r.file_->size();
  // The length and the header are read now; each tensor's bytes when it is loaded (read_bytes).
  // Under 8 bytes there is no length to read: parse() reports that from 8 zero bytes, as it
  // reports a length past the limits before any header is read.
  uint64_t n = 0;
  if (r.size_ >= 8) r.file_->read_at(0, std::as_writable_bytes(std::span(&n, 1)));
  const uint64_t head = 8 + (n <= kMaxHeaderBytes && r.size_ >= 8 && n <= r.size_ - 8 ? n : 0);
  auto* bytes = new uint8_t[head]{};
  r.bytes_ = std::shared_ptr<const uint8_t>(bytes, std::default_delete<uint8_t[]>());
  std::memcpy(bytes, &n, 8);
  if (head > 8) r.file_->read_at(8, std::as_writable_bytes(std::span(bytes + 8, head - 8)));
  r.parse();
  return r;
}

SafetensorsReader SafetensorsReader::from_bytes(std::span<const uint8_t> bytes, std::string name) {
  SafetensorsReader r;
  r.name_ = std::move(name);
  r.size_ = bytes.size();
  // An exactly-sized copy: a read past the end is a bug the sanitizers see.
  auto* copy = new uint8_t[std::max<size_t>(bytes.size(), 1)];
  if (!bytes.empty()) std::memcpy(copy, bytes.data(), bytes.size());
  r.bytes_ = std::shared_ptr<const uint8_t>(copy, std::default_delete<uint8_t[]>());
  r.parse();
  return r;
}

void SafetensorsReader::parse() {
  if (size_ < 8) fail(name_, "the file is ", size_, " bytes, shorter than the 8-byte header length that starts the format");
  uint64_t n = 0;
  std::memcpy(&n, bytes_.get(), 8);
  if (n > kMaxHeaderBytes) fail(name_, "header length ", n, " exceeds the limit of ", kMaxHeaderBytes, " bytes");
  if (n > size_ - 8) fail(name_, "header length ", n, " runs past the end of the file (", size_, " bytes, so at most ", size_ - 8, " after the length)");
  header_bytes_ = n;
  const std::string_view text(reinterpret_cast<const char*>(bytes_.get()) + 8, n);

  if (const size_t at = invalid_utf8_at(text); at != text.size())
    fail(name_, "the header is not valid UTF-8 (byte 0x", std::hex, static_cast<unsigned>(static_cast<unsigned char>(text[at])), std::dec,
        " at header offset ", at, ")");
  if (text.empty()) fail(name_, "the header is empty (header length 0); it must be a JSON object");
  if (text.front() != '{') fail(name_, "the header is not a JSON object: it starts with '", text.substr(0, 1), "'");
  // nlohmann stops at a NUL byte as at the end of the input, which would accept "{}\0garbage".
  if (const size_t nul = text.find('\0'); nul != std::string_view::npos)
    fail(name_, "the header is not valid JSON: it holds a NUL byte at header offset ", nul);

  // nlohmann keeps the last of repeated keys; the callback sees every key as it is parsed.
  std::vector<std::set<std::string>> keys_in_open_objects;
  const auto on_event = [&](int, nlohmann::json::parse_event_t event, nlohmann::json& parsed) {
    using E = nlohmann::json::parse_event_t;
    if (event == E::object_start || event == E::array_start) {
      keys_in_open_objects.emplace_back();
      if (keys_in_open_objects.size() > kMaxJsonDepth) fail(name_, "the header nests JSON more than ", kMaxJsonDepth, " levels deep");
    } else if (event == E::object_end || event == E::array_end) {
      keys_in_open_objects.pop_back();
    } else if (event == E::key) {
      const auto& key = parsed.get_ref<const std::string&>();
      if (!keys_in_open_objects.back().insert(key).second)
        fail(name_, "duplicate key '", key, "' in the header",
             keys_in_open_objects.size() == 1 ? std::string() : detail::str_cat(" (in an object at depth ", keys_in_open_objects.size(), ")"));
    }
    return true;
  };
  nlohmann::json header;
  try {
    header = nlohmann::json::parse(text.begin(), text.end(), on_event);
  } catch (const nlohmann::json::exception& e) {
    fail(name_, "the header is not valid JSON: ", e.what());
  }
  if (!header.is_object()) fail(name_, "the header is not a JSON object but a ", header.type_name());

  for (const auto& [key, entry] : header.items()) {
    if (key == "__metadata__") {
      if (!entry.is_object()) fail(name_, "__metadata__ must be an object of strings, got ", entry.type_name(), " ", show(entry));
      for (const auto& [k, v] : entry.items()) {
        if (!v.is_string()) fail(name_, "__metadata__ value of '", k, "' must be a string, got ", v.type_name(), " ", show(v));
        metadata_.emplace(k, v.get<std::string>());
      }
      continue;
    }
    if (key.empty()) fail(name_, "a tensor has an empty name");
    if (!entry.is_object()) fail(name_, "tensor '", key, "': ", "its entry must be an object, got ", entry.type_name(), " ", show(entry));
    for (const auto& [field, value] : entry.items())
      if (field != "dtype" && field != "shape" && field != "data_offsets")
        fail(name_, "tensor '", key, "': ", "unexpected field '", field, "' (an entry has exactly dtype, shape and data_offsets)");
    for (const char* field : {"dtype", "shape", "data_offsets"})
      if (!entry.contains(field)) fail(name_, "tensor '", key, "': ", "missing field '", field, "'");

    TensorInfo t;
    t.name = key;
    const nlohmann::json& dtype = entry.at("dtype");
    if (!dtype.is_string()) fail(name_, "tensor '", key, "': ", "dtype must be a string, got ", dtype.type_name(), " ", show(dtype));
    const auto& dname = dtype.get_ref<const std::string&>();
    const DtypeName* found = nullptr;
    for (const DtypeName& d : kDtypeNames)
      if (d.name == dname) found = &d;
    if (!found) fail(name_, "tensor '", key, "': ", "unknown dtype '", show(std::string_view(dname)), "' (not a safetensors dtype)");
    t.format_dtype = dname;
    t.supported = found->dtype.has_value();
    t.dtype = found->dtype.value_or(kUInt8);

    const nlohmann::json& shape = entry.at("shape");
    if (!shape.is_array()) fail(name_, "tensor '", key, "': ", "shape must be an array of non-negative integers, got ", shape.type_name(), " ", show(shape));
    // The product of max(size, 1) bounds the element count and every contiguous stride, so that
    // none of them overflows int64 later, even for a shape with a 0 in it.
    uint64_t extent = 1;
    for (size_t i = 0; i < shape.size(); ++i) {
      const std::optional<uint64_t> d = as_count(shape[i]);
      if (!d) fail(name_, "tensor '", key, "': ", "shape[", i, "] must be a non-negative integer, got ", show(shape[i]), " (shape ", show(shape), ")");
      if (*d > static_cast<uint64_t>(INT64_MAX) || __builtin_mul_overflow(extent, std::max<uint64_t>(*d, 1), &extent) ||
          extent > static_cast<uint64_t>(INT64_MAX))
        fail(name_, "tensor '", key, "': ", "shape ", show(shape), " is too large: its element count overflows 64-bit arithmetic");
      t.shape.push_back(static_cast<int64_t>(*d));
    }

    const nlohmann::json& offsets = entry.at("data_offsets");
    if (!offsets.is_array() || offsets.size() != 2)
      fail(name_, "tensor '", key, "': ", "data_offsets must be an array of two non-negative integers [begin, end], got ", show(offsets));
    const std::optional<uint64_t> begin = as_count(offsets[0]), end = as_count(offsets[1]);
    if (!begin || !end) fail(name_, "tensor '", key, "': ", "data_offsets must be two non-negative integers [begin, end], got ", show(offsets));
    if (*begin > *end) fail(name_, "tensor '", key, "': ", "data_offsets ", show(offsets), " has begin > end");
    t.begin = *begin;
    t.end = *end;

    uint64_t numel = 1, nbytes = 0;
    for (int64_t d : t.shape) numel *= static_cast<uint64_t>(d);  // bounded by `extent` above
    // Sub-byte dtypes (F4, F6) are packed: the bytes of their bits, rounded up.
    if (__builtin_mul_overflow(numel, static_cast<uint64_t>(found->bits), &nbytes))
      fail(name_, "tensor '", key, "': ", "shape ", show_shape(t.shape), " of ", dname, " is too large: its byte size overflows 64 bits");
    nbytes = nbytes / 8 + (nbytes % 8 != 0);
    if (nbytes != t.end - t.begin)
      fail(name_, "tensor '", key, "': ", "shape ", show_shape(t.shape), " of ", dname, " is ", numel, " elements = ", nbytes, " bytes, but data_offsets [",
            t.begin, ", ", t.end, "] span ", t.end - t.begin, " bytes");
    tensors_.push_back(std::move(t));
  }

  std::sort(tensors_.begin(), tensors_.end(), [](const TensorInfo& a, const TensorInfo& b) {
    return std::tie(a.begin, a.end, a.name) < std::tie(b.begin, b.end, b.name);
  });
  const uint64_t data_bytes = size_ - 8 - n;
  uint64_t at = 0;
  for (size_t i = 0; i < tensors_.size(); ++i) {
    const TensorInfo& t = tensors_[i];
    if (t.begin > at)
      fail(name_, "a hole in the data section: bytes [", at, ", ", t.begin, ") belong to no tensor (tensor '", t.name, "' begins at ", t.begin,
          i ? detail::str_cat(", '" + tensors_[i - 1].name + "' ends at ", at, ")") : std::string(", the data section at 0)"));
    if (t.begin < at)
      fail(name_, "tensors overlap: '", t.name, "' [", t.begin, ", ", t.end, ") and '", tensors_[i - 1].name, "' [", tensors_[i - 1].begin, ", ",
          tensors_[i - 1].end, ")");
    if (t.end > data_bytes)
      fail(name_, "tensor '", t.name, "' data_offsets [", t.begin, ", ", t.end, "] run past the end of the data section (", data_bytes,
          " bytes after the ", n, "-byte header)");
    at = t.end;
  }
  if (at != data_bytes)
    fail(name_, data_bytes - at, " trailing bytes after the last tensor's data (the data section is ", data_bytes, " bytes, the tensors end at ", at, ")");
  for (size_t i = 0; i < tensors_.size(); ++i) index_.emplace(tensors_[i].name, i);
  parse_checksums();
}

void SafetensorsReader::parse_checksums() {
  const auto it = metadata_.find(std::string(kChecksumsKey));
  if (it == metadata_.end()) return;
  has_checksums_ = true;
  nlohmann::json sums;
  size_t depth = 0;  // one object of strings: anything deeper is refused before it is built
  const auto on_event = [&](int, nlohmann::json::parse_event_t event, nlohmann::json&) {
    using E = nlohmann::json::parse_event_t;
    if (event == E::object_start || event == E::array_start) {
      if (++depth > 1) fail(name_, "__metadata__ '", kChecksumsKey, "' must be one JSON object of strings, but it nests deeper");
    } else if (event == E::object_end || event == E::array_end) {
      --depth;
    }
    return true;
  };
  try {
    sums = nlohmann::json::parse(it->second, on_event);
  } catch (const nlohmann::json::exception& e) {
    fail(name_, "__metadata__ '", kChecksumsKey, "' is not valid JSON: ", e.what());
  }
  if (!sums.is_object()) fail(name_, "__metadata__ '", kChecksumsKey, "' must be a JSON object, got ", sums.type_name(), " ", show(sums));
  std::optional<uint64_t> of_metadata;
  for (const auto& [name, value] : sums.items()) {
    const std::optional<uint64_t> digest = value.is_string() ? parse_checksum_text(value.get_ref<const std::string&>()) : std::nullopt;
    if (!digest) fail(name_, "the checksum of '", show(std::string_view(name)), "' is not of the form xxh3-64:<16 hex digits>, got ", show(value));
    if (name == kMetadataChecksumName) {
      of_metadata = digest;
    } else if (const auto t = index_.find(name); t != index_.end()) {
      tensors_[t->second].checksum = digest;
    } else {
      fail(name_, "there is a checksum for '", show(std::string_view(name)), "' but no tensor of that name");
    }
  }
  for (const TensorInfo& t : tensors_)
    if (!t.checksum) fail(name_, "tensor '", show(std::string_view(t.name)), "' has no checksum in __metadata__ '", kChecksumsKey, "'");
  if (!of_metadata) fail(name_, "the metadata has no checksum (__metadata__ in '", kChecksumsKey, "')");
  metadata_.erase(it);
  const uint64_t computed = metadata_checksum(metadata_);
  if (computed != *of_metadata)
    throw ChecksumError(name_, std::string(kMetadataChecksumName),
                        detail::str_cat("'", name_, "' fails verification: its metadata (step, config and the other __metadata__ entries) does "
                                        "not match its checksum (stored ", checksum_text(*of_metadata), ", computed ", checksum_text(computed), ")"));
}

void SafetensorsReader::check_checksum(const TensorInfo& t, uint64_t computed) const {
  if (t.checksum && computed != *t.checksum)
    throw ChecksumError(name_, t.name,
                        detail::str_cat("'", name_, "' fails verification: tensor '", t.name, "' does not match its checksum (stored ",
                                        checksum_text(*t.checksum), ", computed ", checksum_text(computed),
                                        "): its bytes or its header entry changed after it was written"));
}

bool SafetensorsReader::contains(std::string_view name) const { return index_.find(name) != index_.end(); }

const TensorInfo& SafetensorsReader::info(std::string_view name) const {
  auto it = index_.find(name);
  if (it != index_.end()) return tensors_[it->second];
  std::string some;
  size_t listed = 0;
  for (const TensorInfo& t : tensors_) {
    if (listed == 5) { some += ", ..."; break; }
    some += (listed++ ? ", '" : "'") + t.name + "'";
  }
  throw ValueError(detail::str_cat("no tensor '", name, "' in safetensors file '", name_, "' (it holds ", tensors_.size(),
                                   " tensor", tensors_.size() == 1 ? "" : "s", tensors_.empty() ? "" : ": ", some, ")"));
}

void SafetensorsReader::check_supported(const TensorInfo& t) const {
  TALLY_CHECK_TYPE_ERROR(t.supported, "'", name_, "': tensor '", show(std::string_view(t.name)), "' has dtype ", t.format_dtype,
                         ", which tally does not compute with (it has ", supported_names(),
                         "); the file itself is valid, and `tally inspect` lists it");
}

void SafetensorsReader::read_bytes(const TensorInfo& t, std::span<uint8_t> out, bool verify) const {
  TALLY_CHECK(out.size() == t.end - t.begin, "read_bytes: tensor '", t.name, "' is ", t.end - t.begin, " bytes, the buffer ",
              out.size());
  std::optional<Checksum> sum;
  if (verify && t.checksum) sum = tensor_checksum(t.format_dtype, std::span(t.shape.data(), t.shape.size()));
  uint64_t offset = 8 + header_bytes_ + t.begin;
  // Each chunk is hashed right after it is read, while it is still in the cache (Note [Checksums]).
  for_each_chunk(out, [&](std::span<uint8_t> chunk) {
    if (file_) {
      file_->read_at(offset, std::as_writable_bytes(chunk));  // an IOError, not a signal, if the file was cut shorter since
    } else {
      std::memcpy(chunk.data(), bytes_.get() + offset, chunk.size());
    }
    offset += chunk.size();
    if (sum) sum->update(chunk);
  });
  if (sum) check_checksum(t, sum->digest());
  if (t.supported && t.dtype == kBool) {
    const auto wrong = std::find_if(out.begin(), out.end(), [](uint8_t b) { return b > 1; });
    if (wrong != out.end())
      fail(name_, "tensor '", t.name, "' (BOOL) holds byte ", static_cast<int>(*wrong), " at element ", wrong - out.begin(),
           "; a BOOL is 0 or 1");
  }
}

}  // namespace tally::io
