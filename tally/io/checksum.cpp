#include "tally/io/checksum.h"

#include <cstdio>
#include <cstring>

#define XXH_STATIC_LINKING_ONLY  // XXH3_state_t's layout, so that a Checksum holds one in place
#include <xxhash.h>
#if defined(__x86_64__)
// XXH3_64bits_update becomes xxHash's dispatcher, which runs the AVX-512, AVX2 or SSE2 loop as the
// CPU at hand has them (tally is built for baseline x86-64: inlined, XXH3 would be SSE2 only).
#include <xxh_x86dispatch.h>
#endif

namespace tally::io {

// Note [Checksums]
// safetensors carries no checksum, and neither PyTorch nor llm.c adds one: a flipped bit in a
// checkpoint (bad RAM on the way to disk, bit rot, a faulty copy) loads as a slightly different
// model and the run goes on from it. So every file tally writes carries, in `__metadata__` under
// "tally.checksums", a JSON object (readable by Python's json alone) of checksums in the form
// "xxh3-64:<16 lowercase hex digits>":
//   - one per tensor, over its dtype's safetensors name and its shape as text ("F32[2,3]", no
//     spaces) and then its bytes, so that an edited header entry is caught as well as its data;
//   - one named "__metadata__", over every other metadata entry (step, config, RNG, scheduler,
//     data position): in key order, each key and value as its length (u64 little-endian) and bytes.
// The hash is XXH3-64 from xxHash (Debian's libxxhash-dev): it runs at tens of GB/s on one core,
// far above any disk, so checking costs a checkpoint little; it is well kept and widely used
// (zstd, rsync, Linux's btrfs); and at 64 bits a corrupted tensor passes with probability 2^-64.
// CRC32C would be as fast with SSE4.2 but is 32 bits, 2^-32 of corruptions passing.
// One pass over the data: the header comes first in the file but the tensors' checksums are known
// only after their bytes, so the writer puts fixed-width placeholders in the header, hashes each
// chunk of a tensor as it writes it, and then writes the header again, the same size, over the
// first (pwrite) before the file is fsync'd and renamed (io::AtomicFile). The reader hashes each
// chunk as it reads it, and checks the metadata when the file is opened. A file without
// "tally.checksums" (another writer's) still loads; the reader says that it carries none.

struct Checksum::State {
  XXH3_state_t xxh;
};

Checksum::Checksum() : state_(std::make_unique<State>()) { XXH3_64bits_reset(&state_->xxh); }
Checksum::~Checksum() = default;
Checksum::Checksum(Checksum&&) noexcept = default;
Checksum& Checksum::operator=(Checksum&&) noexcept = default;

void Checksum::update(std::span<const uint8_t> bytes) {
  if (!bytes.empty()) XXH3_64bits_update(&state_->xxh, bytes.data(), bytes.size());
}

void Checksum::update(std::string_view text) { update(std::span(reinterpret_cast<const uint8_t*>(text.data()), text.size())); }

uint64_t Checksum::digest() const { return XXH3_64bits_digest(&state_->xxh); }

Checksum tensor_checksum(std::string_view dtype_name, std::span<const int64_t> shape) {
  Checksum c;
  std::string head(dtype_name);
  head += '[';
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) head += ',';  // appended: GCC 12 warns (-Wrestrict, wrongly) on "," + string
    head += std::to_string(shape[i]);
  }
  head += ']';
  c.update(head);
  return c;
}

uint64_t metadata_checksum(const std::map<std::string, std::string>& metadata) {
  Checksum c;
  const auto add = [&](const std::string& s) {
    const uint64_t n = s.size();  // little-endian: safetensors_reader.cpp asserts the machine is
    c.update(std::span(reinterpret_cast<const uint8_t*>(&n), 8));
    c.update(s);
  };
  for (const auto& [key, value] : metadata) {
    if (key == kChecksumsKey) continue;
    add(key);
    add(value);
  }
  return c.digest();
}

std::string checksum_text(uint64_t digest) {
  char hex[17];
  std::snprintf(hex, sizeof(hex), "%016llx", static_cast<unsigned long long>(digest));
  return std::string("xxh3-64:") + hex;
}

std::optional<uint64_t> parse_checksum_text(std::string_view text) {
  constexpr std::string_view prefix = "xxh3-64:";
  if (text.size() != prefix.size() + 16 || !text.starts_with(prefix)) return std::nullopt;
  uint64_t digest = 0;
  for (char ch : text.substr(prefix.size())) {
    const int d = ch >= '0' && ch <= '9' ? ch - '0' : ch >= 'a' && ch <= 'f' ? ch - 'a' + 10 : -1;
    if (d < 0) return std::nullopt;
    digest = digest << 4 | static_cast<uint64_t>(d);
  }
  return digest;
}

}  // namespace tally::io
