// The tensor side of safetensors: loading a validated file's tensors (safetensors_reader.cpp
// parses and validates) and writing tensors out.

#include "tally/io/safetensors.h"

#include <omp.h>

#include <cstring>
#include <exception>
#include <nlohmann/json.hpp>
#include <optional>

#include "tally/core/autograd_meta.h"
#include "tally/io/atomic_file.h"
#include "tally/io/checksum.h"
#include "tally/core/empty.h"

namespace tally::io {

namespace {

/// The tensor's bytes can be written: a CPU tensor with a usable name.
void check_writable(const std::string& name, const Tensor& t) {
  TALLY_CHECK(!name.empty(), "cannot save a tensor with an empty name to safetensors");
  TALLY_CHECK(name != "__metadata__", "cannot save a tensor named '__metadata__': safetensors reserves that name for the metadata");
  TALLY_CHECK(t.defined(), "cannot save tensor '", name, "' to safetensors: it is undefined (a default-constructed Tensor)");
  TALLY_CHECK(!t.device().is_meta(), "cannot save tensor '", name, "' (", t.dtype(), " of shape ", t.sizes(),
              ") to safetensors: it is on the meta device, which holds no values");
  TALLY_CHECK(t.device().is_cpu(), "cannot save tensor '", name, "' to safetensors: it is on ", t.device(),
              "; copy it to the CPU first (.cpu())");
}

/// Calls `sink(name, tensor, bytes)` with each tensor's bytes in order, contiguous; a
/// non-contiguous tensor is copied alone, so at most one tensor's copy exists at a time.
template <class Sink>
void for_each_tensor_bytes(const StateDict& tensors, Sink&& sink) {
  NoGradGuard no_grad;  // contiguous() of a tensor that requires grad must not record a node
  for (const auto& [name, t] : tensors) {
    const Tensor c = t.detach().contiguous();
    const auto nbytes = static_cast<size_t>(c.nbytes());
    sink(name, c, std::span<const uint8_t>(nbytes ? static_cast<const uint8_t*>(c.data_ptr()) : nullptr, nbytes));
  }
}

/// Writes a safetensors file in one pass over the tensors: `append(bytes)` adds to the end, and
/// `rewrite_header(bytes)` writes the final header over the first, the same size (Note
/// [Checksums] in checksum.cpp: the tensors' checksums are known only once their bytes are out).
template <class Append, class RewriteHeader>
void write_safetensors(const StateDict& tensors, std::map<std::string, std::string> metadata, bool checksums, Append&& append,
                       RewriteHeader&& rewrite_header) {
  TALLY_CHECK(!metadata.contains(std::string(kChecksumsKey)), "cannot save metadata key '", kChecksumsKey,
              "' to safetensors: tally writes the file's checksums under that key");
  if (!checksums) {
    append(safetensors_header(tensors, metadata));
    for_each_tensor_bytes(tensors, [&](const std::string&, const Tensor&, std::span<const uint8_t> bytes) { append(bytes); });
    return;
  }
  nlohmann::ordered_json sums = nlohmann::ordered_json::object();
  sums[std::string(kMetadataChecksumName)] = checksum_text(metadata_checksum(metadata));
  for (const auto& [name, t] : tensors) sums[name] = checksum_text(0);  // a placeholder of the final width
  // A name that is not UTF-8 is replaced here the same way in both dumps; safetensors_header
  // refuses it with a ValueError.
  const auto dump = [&] { return sums.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace); };
  metadata[std::string(kChecksumsKey)] = dump();
  const std::vector<uint8_t> first = safetensors_header(tensors, metadata);  // checks every tensor before a byte is written
  append(first);
  for_each_tensor_bytes(tensors, [&](const std::string& name, const Tensor& t, std::span<const uint8_t> bytes) {
    Checksum sum = tensor_checksum(safetensors_dtype_name(t.dtype()), std::span(t.sizes().data(), t.sizes().size()));
    for_each_chunk(bytes, [&](std::span<const uint8_t> chunk) {
      sum.update(chunk);  // hashed while the chunk is in the cache, then written
      append(chunk);
    });
    sums[name] = checksum_text(sum.digest());
  });
  metadata[std::string(kChecksumsKey)] = dump();
  const std::vector<uint8_t> header = safetensors_header(tensors, metadata);
  TALLY_INTERNAL_ASSERT(header.size() == first.size(), "the header with checksums is ", header.size(), " bytes, its placeholder ", first.size());
  rewrite_header(header);
}

}  // namespace

Tensor SafetensorsReader::load(std::string_view name, bool verify) const {
  const TensorInfo& t = info(name);
  check_supported(t);
  Tensor out = empty(t.shape, t.dtype);
  const size_t nbytes = t.end - t.begin;
  read_bytes(t, std::span<uint8_t>(nbytes ? static_cast<uint8_t*>(out.data_ptr()) : nullptr, nbytes), verify);
  return out;
}

// Note [Hashing beside the reads]
// Read from the page cache, a checkpoint loads at memory-copy speed (~6 GB/s on one core), and
// XXH3 at ~35 GB/s would add a sixth to that. So load_all reads the tensors in order on one
// thread while a second hashes each tensor already read (an OpenMP task): the checks cost CPU
// time, not the load's time. Only when tally may use two threads (--threads, OMP_NUM_THREADS);
// with one, each tensor is hashed as it is read (read_bytes). Mismatches are reported in file
// order, as a serial load would find them.
StateDict SafetensorsReader::load_all(bool verify) const {
  const size_t n = tensors_.size();
  std::vector<Tensor> loaded(n);
  for (const TensorInfo& t : tensors_) check_supported(t);
  for (size_t i = 0; i < n; ++i) loaded[i] = empty(tensors_[i].shape, tensors_[i].dtype);
  const auto bytes_of = [&](size_t i) {
    const size_t nbytes = tensors_[i].end - tensors_[i].begin;
    return std::span<uint8_t>(nbytes ? static_cast<uint8_t*>(loaded[i].data_ptr()) : nullptr, nbytes);
  };
  const bool beside = verify && has_checksums_ && n > 1 && omp_get_max_threads() > 1 && !omp_in_parallel();
  if (!beside) {
    for (size_t i = 0; i < n; ++i) read_bytes(tensors_[i], bytes_of(i), verify);
  } else {
    std::vector<uint64_t> computed(n);
    std::exception_ptr failed;  // nothing may leave an OpenMP region by an exception
#pragma omp parallel num_threads(2)
#pragma omp single
    for (size_t i = 0; i < n && !failed; ++i) {
      try {
        read_bytes(tensors_[i], bytes_of(i), /*verify=*/false);
      } catch (...) {
        failed = std::current_exception();
        break;
      }
#pragma omp task firstprivate(i) shared(computed)
      {
        const TensorInfo& t = tensors_[i];
        Checksum sum = tensor_checksum(t.format_dtype, std::span(t.shape.data(), t.shape.size()));
        sum.update(std::span<const uint8_t>(bytes_of(i)));
        computed[i] = sum.digest();
      }
    }  // the tasks are done at the region's end
    if (failed) std::rethrow_exception(failed);
    for (size_t i = 0; i < n; ++i) check_checksum(tensors_[i], computed[i]);
  }
  StateDict out("tensor");
  for (size_t i = 0; i < n; ++i) out.insert(tensors_[i].name, std::move(loaded[i]));
  return out;
}

std::vector<uint8_t> safetensors_header(const StateDict& tensors, const std::map<std::string, std::string>& metadata) {
  // ordered_json keeps the order written: __metadata__ first, then the tensors in the dict's order.
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  uint64_t offset = 0;
  for (const auto& [name, t] : tensors) {
    check_writable(name, t);
    const auto nbytes = static_cast<uint64_t>(t.nbytes());
    header[name] = {{"dtype", safetensors_dtype_name(t.dtype())},
                    {"shape", std::vector<int64_t>(t.sizes().begin(), t.sizes().end())},
                    {"data_offsets", {offset, offset + nbytes}}};
    offset += nbytes;
  }
  std::string text;
  try {
    text = header.dump();
  } catch (const nlohmann::ordered_json::type_error& e) {
    throw ValueError(detail::str_cat("cannot write safetensors: a tensor name or metadata string is not valid UTF-8 (", e.what(), ")"));
  }
  // The reference implementation pads with spaces so that the data section starts 8-aligned.
  text.append((8 - text.size() % 8) % 8, ' ');
  std::vector<uint8_t> out(8 + text.size());
  const uint64_t n = text.size();
  std::memcpy(out.data(), &n, 8);  // little-endian (static_assert in safetensors_reader.cpp)
  std::memcpy(out.data() + 8, text.data(), text.size());
  return out;
}

std::vector<uint8_t> serialize_safetensors(const StateDict& tensors, const std::map<std::string, std::string>& metadata, bool checksums) {
  std::vector<uint8_t> out;
  write_safetensors(
      tensors, metadata, checksums, [&](std::span<const uint8_t> bytes) { out.insert(out.end(), bytes.begin(), bytes.end()); },
      [&](std::span<const uint8_t> header) { std::copy(header.begin(), header.end(), out.begin()); });
  return out;
}

void save_safetensors(const std::filesystem::path& path, const StateDict& tensors, const std::map<std::string, std::string>& metadata,
                      bool checksums) {
  // The file is made at the first write, once the header is built: a tensor or metadata that
  // cannot be written is refused before anything is made.
  std::optional<AtomicFile> file;
  write_safetensors(
      tensors, metadata, checksums,
      [&](std::span<const uint8_t> bytes) {
        if (!file) file.emplace(path);
        file->write(bytes);
      },
      [&](std::span<const uint8_t> header) { file->write_at(0, header); });
  file->commit();
}

}  // namespace tally::io
