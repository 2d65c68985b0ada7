// Checksums of safetensors files (Note [Checksums] in tally/io/checksum.cpp): written by every
// save, stored readably, verified on load; each kind of corruption is caught and named, and a file
// without checksums (another writer's) still loads.

#include <nlohmann/json.hpp>

#include "tally/io/checksum.h"
#include "tally/tally.h"
#include "tests/io/corrupt.h"
#include "tests/io/io_test_util.h"

namespace tally::io::test {
namespace {

/// Two tensors of different dtypes and a little metadata, as a checkpoint has.
StateDict two_tensors() {
  StateDict d("tensor");
  d.insert("model.w", arange(12, kFloat32).view({3, 4}));
  d.insert("optimizer.state.0.step", full({}, 7.0, kInt64));
  return d;
}
const std::map<std::string, std::string> kMetadata = {{"tally.step", "20"}, {"tally.generators", "{\"default\": 12345}"}};

TEST(Checksums, XxhThreeSixtyFourOfKnownInputs) {
  // The reference values of XXH3-64 (seed 0), as Python's xxhash.xxh3_64(...).hexdigest() gives them.
  EXPECT_EQ(checksum_text(Checksum().digest()), "xxh3-64:2d06800538d394c2");
  Checksum abc;
  abc.update(std::string_view("a"));
  abc.update(std::string_view("bc"));  // streamed in pieces: the same as at once
  EXPECT_EQ(checksum_text(abc.digest()), "xxh3-64:78af5f94892f3950");
  EXPECT_EQ(parse_checksum_text("xxh3-64:78af5f94892f3950"), abc.digest());
  for (const char* bad : {"xxh3-64:78AF5F94892F3950", "xxh3-64:78af5f94892f395", "crc32c:78af5f94892f3950", "xxh3-64:78af5f94892f395g"})
    EXPECT_FALSE(parse_checksum_text(bad)) << bad;
}

TEST(Checksums, EverySaveCarriesThemReadableWithJsonAlone) {
  TempDir dir;
  const fs::path file = dir.file("c.safetensors");
  save_safetensors(file, two_tensors(), kMetadata);
  const SafetensorsReader r = SafetensorsReader::open(file);
  EXPECT_TRUE(r.has_checksums());
  EXPECT_EQ(r.metadata(), kMetadata);  // the checksums' key is not the caller's metadata
  for (const TensorInfo& t : r.tensors()) EXPECT_TRUE(t.checksum) << t.name;
  expect_identical(r.load("model.w"), two_tensors().at("model.w"), "model.w");
  // The header as any JSON parser reads it: one object of "xxh3-64:<hex>" strings.
  const std::vector<uint8_t> bytes = read_file(file);
  const auto header = nlohmann::json::parse(bytes.begin() + 8, bytes.begin() + 8 + static_cast<std::ptrdiff_t>(r.header_bytes()));
  const auto sums = nlohmann::json::parse(header["__metadata__"][std::string(kChecksumsKey)].get<std::string>());
  EXPECT_EQ(sums.size(), 3u);
  EXPECT_EQ(sums["model.w"], checksum_text(*r.info("model.w").checksum));
  EXPECT_EQ(sums["__metadata__"], checksum_text(metadata_checksum(kMetadata)));
  // The file written in one pass is the one serialize_safetensors builds in memory.
  EXPECT_EQ(bytes, serialize_safetensors(two_tensors(), kMetadata));
  expect_error<ValueError>([&] { save_safetensors(file, two_tensors(), {{std::string(kChecksumsKey), "{}"}}); }, {"'tally.checksums'"});
}

TEST(Checksums, AFlippedBitInAnyTensorIsNamed) {
  TempDir dir;
  for (const std::string name : {"model.w", "optimizer.state.0.step"}) {
    for (const uint64_t byte : {uint64_t{0}, uint64_t{3}}) {
      const fs::path file = dir.file("c.safetensors");
      save_safetensors(file, two_tensors(), kMetadata);
      flip_bit_in_tensor(file, name, byte, 5);
      const SafetensorsReader r = SafetensorsReader::open(file);  // the header and metadata are intact
      try {
        r.load_all();
        ADD_FAILURE() << "a flipped bit in " << name << " loaded";
      } catch (const ChecksumError& e) {
        EXPECT_EQ(e.entry(), name);
        EXPECT_EQ(e.file(), file.string());
        EXPECT_NE(std::string(e.what()).find(file.string() + "' fails verification: tensor '" + name + "' does not match its checksum"),
                  std::string::npos) << e.what();
      }
      for (const TensorInfo& t : r.tensors()) {
        if (t.name != name) {
          EXPECT_NO_THROW(r.load(t.name)) << t.name;  // the others are fine
        }
      }
      EXPECT_NO_THROW(r.load(name, /*verify=*/false));                 // and unverified, it loads as it is
    }
  }
}

TEST(Checksums, OfTwoBadTensorsLoadAllNamesTheFirstInTheFile) {
  // load_all hashes beside its reads (Note [Hashing beside the reads]) but reports as a serial
  // load would: the first failing tensor in file order.
  TempDir dir;
  const fs::path file = dir.file("c.safetensors");
  save_safetensors(file, two_tensors(), kMetadata);
  flip_bit_in_tensor(file, "optimizer.state.0.step", 0, 0);
  flip_bit_in_tensor(file, "model.w", 7, 2);
  expect_error<ChecksumError>([&] { SafetensorsReader::open(file).load_all(); }, {"tensor 'model.w' does not match"});
}

TEST(Checksums, AFlippedDigitInTheMetadataIsCaughtAtOpen) {
  TempDir dir;
  for (const std::string key : {"tally.step", "tally.generators"}) {
    const fs::path file = dir.file("c.safetensors");
    save_safetensors(file, two_tensors(), kMetadata);
    flip_digit_in_metadata(file, key);
    try {
      SafetensorsReader::open(file);
      ADD_FAILURE() << "a flipped digit in " << key << " opened";
    } catch (const ChecksumError& e) {
      EXPECT_EQ(e.entry(), "__metadata__");
      EXPECT_NE(std::string(e.what()).find("fails verification: its metadata"), std::string::npos) << e.what();
    }
  }
}

TEST(Checksums, AnEditedShapeIsCaughtThoughItsBytesAreTheSame) {
  // [3, 4] -> [4, 3] keeps the byte count: only the checksum, which covers the shape, tells.
  const std::vector<uint8_t> good = serialize_safetensors(two_tensors(), kMetadata);
  std::string text(good.begin(), good.end());
  const size_t at = text.find("\"shape\":[3,4]");
  ASSERT_NE(at, std::string::npos);
  text.replace(at, 13, "\"shape\":[4,3]");
  const SafetensorsReader r = SafetensorsReader::from_bytes(std::vector<uint8_t>(text.begin(), text.end()));
  expect_error<ChecksumError>([&] { r.load("model.w"); }, {"tensor 'model.w' does not match its checksum"});
}

TEST(Checksums, MalformedChecksumsAreRefusedNamingWhat) {
  // The checksums' entry rewritten by hand: each problem is a SafetensorsError (not a checksum
  // mismatch) that says what is wrong.
  const std::string sum_w = checksum_text(0), sum_m = checksum_text(metadata_checksum({}));
  const auto with_sums = [](const std::string& sums) {
    StateDict d("tensor");
    d.insert("w", zeros({2}));
    std::vector<uint8_t> bytes = serialize_safetensors(d, {}, /*checksums=*/false);
    std::string text(bytes.begin() + 8, bytes.end() - 8);  // the header: {"w": ...}
    while (text.back() == ' ') text.pop_back();
    nlohmann::ordered_json h = nlohmann::ordered_json::parse(text);
    h["__metadata__"] = {{std::string(kChecksumsKey), sums}};
    std::string header = h.dump();
    header.append((8 - header.size() % 8) % 8, ' ');
    const uint64_t n = header.size();
    std::string file(reinterpret_cast<const char*>(&n), 8);
    file += header;
    file.append(bytes.end() - 8, bytes.end());  // w's 8 bytes
    return std::vector<uint8_t>(file.begin(), file.end());
  };
  const auto refused = [&](const std::string& sums, const std::string& part) {
    expect_error<SafetensorsError>([&] { SafetensorsReader::from_bytes(with_sums(sums)); }, {part});
  };
  refused("not json", "'tally.checksums' is not valid JSON");
  refused("[1]", "must be a JSON object");
  refused("{\"w\": {\"a\": 1}}", "nests deeper");
  refused("{\"w\": \"xxh3-64:12\", \"__metadata__\": \"" + sum_m + "\"}", "the checksum of 'w' is not of the form");
  refused("{\"__metadata__\": \"" + sum_m + "\"}", "tensor 'w' has no checksum");
  refused("{\"w\": \"" + sum_w + "\"}", "the metadata has no checksum");
  refused("{\"w\": \"" + sum_w + "\", \"v\": \"" + sum_w + "\", \"__metadata__\": \"" + sum_m + "\"}", "a checksum for 'v' but no tensor");
  // Well-formed but wrong: a checksum error, found when the tensor is read.
  const SafetensorsReader r = SafetensorsReader::from_bytes(with_sums("{\"w\": \"" + sum_w + "\", \"__metadata__\": \"" + sum_m + "\"}"));
  expect_error<ChecksumError>([&] { r.load_all(); }, {"tensor 'w' does not match its checksum (stored xxh3-64:0000000000000000"});
}

TEST(Checksums, AFileWithoutThemStillLoads) {
  TempDir dir;
  const fs::path file = dir.file("foreign.safetensors");
  save_safetensors(file, two_tensors(), kMetadata, /*checksums=*/false);
  const SafetensorsReader r = SafetensorsReader::open(file);
  EXPECT_FALSE(r.has_checksums());
  EXPECT_EQ(r.metadata(), kMetadata);
  for (const TensorInfo& t : r.tensors()) EXPECT_FALSE(t.checksum) << t.name;
  expect_identical(r.load("model.w"), two_tensors().at("model.w"), "model.w");
}

}  // namespace
}  // namespace tally::io::test
