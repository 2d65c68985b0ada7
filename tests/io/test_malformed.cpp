// The catalogue of malformed files (make_malformed.py): each must be rejected with a
// SafetensorsError whose message contains the manifest's substring; none may be accepted.

#include <fstream>
#include <sstream>

#include "tally/tally.h"
#include "tests/io/io_test_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace tally::io::test {
namespace {

struct Malformed {
  std::string file, expect;
};

/// Writes the catalogue into `dir` and reads its manifest.
std::vector<Malformed> make_catalogue(const TempDir& dir) {
  EXPECT_EQ(run_python("make_malformed.py", detail::str_cat("'", dir.path().string(), "' > /dev/null")), 0);
  std::vector<Malformed> cases;
  std::ifstream manifest(dir.file("manifest.tsv"));
  for (std::string line; std::getline(manifest, line);) {
    const size_t tab = line.find('\t');
    EXPECT_NE(tab, std::string::npos) << line;
    cases.push_back({line.substr(0, tab), line.substr(tab + 1)});
  }
  return cases;
}

TEST(SafetensorsMalformed, EveryFileIsRejectedWithItsReason) {
  TempDir dir;
  const std::vector<Malformed> cases = make_catalogue(dir);
  EXPECT_GE(cases.size(), 40u);
  for (const Malformed& c : cases) {
    SCOPED_TRACE(c.file);
    try {
      // open() validates the header; load_all() reads the values (a BOOL byte of 2 is caught there).
      const StateDict loaded = SafetensorsReader::open(dir.file(c.file)).load_all();
      ADD_FAILURE() << c.file << " was accepted (" << loaded.size() << " tensors); expected an error containing \"" << c.expect << "\"";
    } catch (const SafetensorsError& e) {
      const std::string msg = e.what();
      EXPECT_NE(msg.find(c.expect), std::string::npos) << "message \"" << msg << "\" lacks \"" << c.expect << "\"";
      EXPECT_NE(msg.find(c.file), std::string::npos) << "message \"" << msg << "\" does not name the file";
      EXPECT_EQ(msg.find('\n'), std::string::npos) << "message \"" << msg << "\" is not one line";
    } catch (const std::exception& e) {
      ADD_FAILURE() << c.file << ": wrong error type: " << e.what();
    }
  }
}

TEST(SafetensorsMalformed, FromBytesRejectsTheSame) {
  TempDir dir;
  for (const Malformed& c : make_catalogue(dir)) {
    const std::vector<uint8_t> bytes = read_file(dir.file(c.file));
    expect_error<SafetensorsError>([&] { SafetensorsReader::from_bytes(bytes, c.file).load_all(); }, {c.expect, "'" + c.file + "'"});
  }
}

TEST(SafetensorsMalformed, FuzzTargetSurvivesTheCatalogueAndItsPrefixes) {
  TempDir dir;
  for (const Malformed& c : make_catalogue(dir)) {
    const std::vector<uint8_t> bytes = read_file(dir.file(c.file));
    for (size_t n = 0; n <= bytes.size(); n += std::max<size_t>(1, bytes.size() / 16)) LLVMFuzzerTestOneInput(bytes.data(), n);
  }
  StateDict d("tensor");
  d.insert("x", arange(6, kFloat32));
  const std::vector<uint8_t> good = serialize_safetensors(d);
  for (size_t n = 0; n <= good.size(); ++n) LLVMFuzzerTestOneInput(good.data(), n);
  // Every flipped bit of a file with checksums: in the header, its checksums or the data.
  for (size_t i = 0; i < good.size(); ++i) {
    std::vector<uint8_t> flipped = good;
    flipped[i] ^= 0x10;
    LLVMFuzzerTestOneInput(flipped.data(), flipped.size());
  }
}

}  // namespace
}  // namespace tally::io::test
