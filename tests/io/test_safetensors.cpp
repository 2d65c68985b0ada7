// safetensors round trips and the reader's API: every dtype, non-contiguous inputs, 0-d and empty
// tensors, metadata, the writer's layout, and the errors of writing what cannot be written.

#include <unistd.h>

#include <cstring>

#include "tally/tally.h"
#include "tests/io/io_test_util.h"

namespace tally::io::test {
namespace {

constexpr Dtype kAllDtypes[] = {kFloat64, kFloat32, kFloat16, kBFloat16, kFloat8_e4m3fn,
                                kFloat8_e5m2, kInt64, kInt32, kUInt8, kInt8, kInt16, kBool};

/// Some values of `dtype` with shape `sizes` (random normals, small integers or a mask).
Tensor sample(Dtype dtype, IntArrayRef sizes) {
  Generator gen(1234);
  if (dtype == kBool) return randn(sizes, kFloat32, &gen) > 0.0;
  if (dtype == kUInt8) return randint(0, 256, sizes, kInt64, &gen).to(kUInt8);
  if (is_integral(dtype)) return randint(-1000000, 1000000, sizes, kInt64, &gen).to(dtype);
  return (randn(sizes, kFloat32, &gen) * 10.0).to(dtype);
}

/// A safetensors file: the header's length, the header, the data.
std::vector<uint8_t> file_bytes(const std::string& header, const std::vector<uint8_t>& data) {
  std::vector<uint8_t> bytes(8 + header.size() + data.size());
  const uint64_t n = header.size();
  std::memcpy(bytes.data(), &n, 8);
  std::memcpy(bytes.data() + 8, header.data(), header.size());
  if (!data.empty()) std::memcpy(bytes.data() + 8 + header.size(), data.data(), data.size());
  return bytes;
}

StateDict every_kind_of_tensor() {
  StateDict d("tensor");
  for (Dtype dtype : kAllDtypes) d.insert(std::string("plain.") + std::string(safetensors_dtype_name(dtype)), sample(dtype, {3, 5}));
  for (Dtype dtype : kAllDtypes) {
    const std::string n(safetensors_dtype_name(dtype));
    d.insert("transposed." + n, sample(dtype, {4, 6}).t());                     // non-contiguous
    d.insert("sliced." + n, sample(dtype, {7, 8}).slice(1, 1, 8, 3));           // steps and an offset
    d.insert("scalar." + n, sample(dtype, {}));                                // 0-d
    d.insert("empty." + n, sample(dtype, {0, 4}));                             // no elements
  }
  d.insert("expanded", sample(kFloat32, {1, 3}).expand({4, 3}));  // stride 0
  d.insert("selected", sample(kInt64, {5, 2}).select(1, 1));
  return d;
}

TEST(Safetensors, RoundTripEveryDtypeAndLayout) {
  TempDir dir;
  const StateDict tensors = every_kind_of_tensor();
  const std::map<std::string, std::string> metadata = {{"format", "pt"}, {"step", "42"}, {"config", "{\"lr\": 0.001}"}, {"empty", ""}};
  save_safetensors(dir.file("all.safetensors"), tensors, metadata);

  const SafetensorsReader r = SafetensorsReader::open(dir.file("all.safetensors"));
  EXPECT_EQ(r.metadata(), metadata);
  ASSERT_EQ(r.tensors().size(), tensors.size());
  const StateDict loaded = r.load_all();
  ASSERT_EQ(loaded.keys(), tensors.keys());  // file order is the dict's order
  for (const auto& [name, t] : tensors) {
    expect_identical(loaded.at(name), t, name);
    expect_identical(r.load(name), t, name);
    EXPECT_EQ(r.info(name).dtype, t.dtype()) << name;
    EXPECT_TRUE(r.contains(name));
  }
  // In-memory bytes are the file's bytes, and parse the same.
  const std::vector<uint8_t> bytes = serialize_safetensors(tensors, metadata);
  EXPECT_EQ(bytes, read_file(dir.file("all.safetensors")));
  const SafetensorsReader m = SafetensorsReader::from_bytes(bytes, "mem");
  EXPECT_EQ(m.name(), "mem");
  EXPECT_EQ(m.load_all().keys(), tensors.keys());
}

TEST(Safetensors, LoadedTensorsAreIndependentCpuTensors) {
  TempDir dir;
  StateDict d("tensor");
  d.insert("w", arange(6, kFloat32).view({2, 3}));
  save_safetensors(dir.file("w.safetensors"), d);
  Tensor a, b;
  {
    const SafetensorsReader r = SafetensorsReader::open(dir.file("w.safetensors"));
    a = r.load("w");
    b = r.load("w");
  }  // the mapping is gone; the tensors own copies
  EXPECT_TRUE(a.is_cpu());
  EXPECT_FALSE(a.is_same_storage(b));
  a.fill_(7.0);
  EXPECT_TRUE(equal(b, arange(6, kFloat32).view({2, 3})));
}

TEST(Safetensors, WriterLayoutMatchesTheFormat) {
  StateDict d("tensor");
  d.insert("b", ones({3}, kFloat16));
  d.insert("a", zeros({2}, kInt64));
  // Without checksums (test_checksums.cpp has the layout of those): what any writer makes.
  const std::vector<uint8_t> bytes = serialize_safetensors(d, {{"k", "v"}}, /*checksums=*/false);
  uint64_t n = 0;
  std::memcpy(&n, bytes.data(), 8);
  EXPECT_EQ(n % 8, 0u) << "the header is padded to a multiple of 8 bytes";
  const std::string header(bytes.begin() + 8, bytes.begin() + 8 + static_cast<std::ptrdiff_t>(n));
  EXPECT_EQ(header.find("{\"__metadata__\":{\"k\":\"v\"},\"b\":{\"dtype\":\"F16\",\"shape\":[3],\"data_offsets\":[0,6]},"
                        "\"a\":{\"dtype\":\"I64\",\"shape\":[2],\"data_offsets\":[6,22]}}"), 0u) << header;
  EXPECT_EQ(header.find_first_not_of(' ', header.rfind('}') + 1), std::string::npos) << "padding is spaces";
  EXPECT_EQ(bytes.size(), 8 + n + 22);
  // No metadata: no __metadata__ entry; nothing at all: "{}" padded.
  const std::vector<uint8_t> nothing = serialize_safetensors(StateDict("tensor"), {}, /*checksums=*/false);
  EXPECT_EQ(std::string(nothing.begin() + 8, nothing.end()), "{}      ");
  const SafetensorsReader r = SafetensorsReader::from_bytes(serialize_safetensors(StateDict("tensor")));
  EXPECT_TRUE(r.tensors().empty());
  EXPECT_TRUE(r.metadata().empty());
}

TEST(Safetensors, TensorsAreListedInDataOffsetOrder) {
  // Header keys in one order, data in another.
  const std::string header =
      R"({"z": {"dtype": "U8", "shape": [1], "data_offsets": [0, 1]}, "a": {"dtype": "U8", "shape": [2], "data_offsets": [1, 3]},)"
      R"( "m": {"dtype": "U8", "shape": [0], "data_offsets": [1, 1]}}    )";
  const SafetensorsReader r = SafetensorsReader::from_bytes(file_bytes(header, {9, 8, 7}));
  ASSERT_EQ(r.tensors().size(), 3u);
  EXPECT_EQ(r.tensors()[0].name, "z");
  EXPECT_EQ(r.tensors()[1].name, "m");  // empty, at offset 1
  EXPECT_EQ(r.tensors()[2].name, "a");
  EXPECT_EQ(r.load("a").index({1}).item<uint8_t>(), 7);
  EXPECT_EQ(r.load_all().keys(), (std::vector<std::string>{"z", "m", "a"}));
}

// Every dtype of the format is read and listed; one tally does not compute with is refused when
// loaded, with a TypeError that names it and says the file is valid.
TEST(Safetensors, DtypesTallyDoesNotComputeWithAreListedAndRefusedWhenLoaded) {
  const std::string header =
      R"({"ids": {"dtype": "U16", "shape": [2], "data_offsets": [0, 4]}, "packed": {"dtype": "F4", "shape": [3], "data_offsets": [4, 6]},)"
      R"( "w": {"dtype": "U8", "shape": [1], "data_offsets": [6, 7]}})";
  const SafetensorsReader r = SafetensorsReader::from_bytes(file_bytes(header, {1, 0, 2, 0, 0, 0, 5}), "mixed");
  ASSERT_EQ(r.tensors().size(), 3u);
  EXPECT_EQ(r.tensors()[0].format_dtype, "U16");
  EXPECT_FALSE(r.tensors()[0].supported);
  EXPECT_EQ(r.tensors()[1].format_dtype, "F4");
  EXPECT_TRUE(r.tensors()[2].supported);
  EXPECT_EQ(r.load("w").item<uint8_t>(), 5);
  std::vector<uint8_t> raw(4);
  r.read_bytes(r.tensors()[0], raw);  // the bytes themselves can still be read
  EXPECT_EQ(raw, (std::vector<uint8_t>{1, 0, 2, 0}));
  expect_error<TypeError>([&] { r.load("ids"); }, {"'mixed'", "tensor 'ids' has dtype U16, which tally does not compute with",
                                                   "(it has F64 F32 F16 BF16 F8_E4M3 F8_E5M2 I64 I32 U8 I8 I16 BOOL)",
                                                   "the file itself is valid"});
  expect_error<TypeError>([&] { r.load_all(); }, {"has dtype U16"});
}

TEST(Safetensors, MissingTensorNamesSome) {
  StateDict d("tensor");
  for (int i = 0; i < 8; ++i) d.insert(std::string("t") + std::to_string(i), zeros({1}));
  const SafetensorsReader r = SafetensorsReader::from_bytes(serialize_safetensors(d), "ckpt");
  EXPECT_FALSE(r.contains("nope"));
  expect_error<ValueError>([&] { r.info("nope"); }, {"no tensor 'nope'", "'ckpt'", "8 tensors", "'t0', 't1'", "..."});
  expect_error<ValueError>([&] { r.load("nope"); }, {"no tensor 'nope'"});
}

TEST(Safetensors, OpenErrors) {
  TempDir dir;
  expect_error<IOError>([&] { SafetensorsReader::open(dir.file("missing.safetensors")); },
                        {"cannot open safetensors file", "missing.safetensors", "No such file or directory"});
  expect_error<IOError>([&] { SafetensorsReader::open(dir.path()); }, {"is not a regular file", "(a directory)"});
  write_file(dir.file("short.safetensors"), {1, 2, 3});
  expect_error<SafetensorsError>([&] { SafetensorsReader::open(dir.file("short.safetensors")); },
                                 {"short.safetensors' is not a valid safetensors file", "3 bytes"});
}

TEST(Safetensors, WritingWhatCannotBeWritten) {
  TempDir dir;
  const auto save_one = [&](const std::string& name, const Tensor& t) {
    StateDict d("tensor");
    d.insert(name, t);
    save_safetensors(dir.file("x.safetensors"), d);
  };
  expect_error<ValueError>([&] { save_one("m", empty({2, 3}, TensorOptions(kFloat32).device(Device(kMeta)))); },
                           {"cannot save tensor 'm'", "meta device"});
  expect_error<ValueError>([&] { save_one("", zeros({1})); }, {"empty name"});
  expect_error<ValueError>([&] { save_one("__metadata__", zeros({1})); }, {"'__metadata__'"});
  expect_error<ValueError>([&] { save_one("u", Tensor()); }, {"'u'", "undefined"});
  expect_error<ValueError>([&] { save_one("bad\xff", zeros({1})); }, {"not valid UTF-8"});
  expect_error<ValueError>([&] { save_safetensors(dir.file("x.safetensors"), StateDict("tensor"), {{"k", "\xc3"}}); },
                           {"not valid UTF-8"});
  EXPECT_TRUE(dir.listing().empty()) << "a failed save leaves no file behind";
}

TEST(Safetensors, SavingTensorsThatRequireGradRecordsNothing) {
  TempDir dir;
  Tensor w = randn({3, 4}).requires_grad_();
  StateDict d("tensor");
  d.insert("w.t", w.t());
  save_safetensors(dir.file("g.safetensors"), d);
  const Tensor back = SafetensorsReader::open(dir.file("g.safetensors")).load("w.t");
  EXPECT_FALSE(back.requires_grad());
  expect_identical(back, w.detach().t(), "w.t");
}

TEST(Safetensors, OverwritesAnExistingFile) {
  TempDir dir;
  StateDict d("tensor");
  d.insert("x", full({4}, 1.0));
  save_safetensors(dir.file("c.safetensors"), d);
  d.at("x") = full({2}, 2.0);
  save_safetensors(dir.file("c.safetensors"), d);
  EXPECT_TRUE(equal(SafetensorsReader::open(dir.file("c.safetensors")).load("x"), full({2}, 2.0)));
  EXPECT_EQ(dir.listing(), std::vector<std::string>{"c.safetensors"});
}

TEST(Safetensors, AFileCutShorterAfterOpeningIsAnIOErrorNotASignal) {
  // The reader mapped the file, and a load after the file was cut shorter died of SIGBUS.
  TempDir dir;
  StateDict d("tensor");
  d.insert("a", arange(1024, TensorOptions(kFloat32)));
  d.insert("b", arange(4096, TensorOptions(kFloat32)));
  const fs::path path = dir.file("cut.safetensors");
  save_safetensors(path, d);
  const SafetensorsReader reader = SafetensorsReader::open(path);
  ASSERT_EQ(::truncate(path.c_str(), static_cast<off_t>(reader.file_bytes() - 1000)), 0) << std::strerror(errno);
  EXPECT_TRUE(equal(reader.load("a"), d.at("a")));  // what is still there reads back
  expect_error<IOError>([&] { reader.load("b"); }, {"cut.safetensors", "cut shorter while in use"});
  expect_error<IOError>([&] { reader.load_all(); }, {"cut shorter while in use"});
}

TEST(Safetensors, AcceptsWhatTheFormatAllows) {
  // Whitespace after the object (spaces, as the format pads, and newlines), zero-size tensors
  // sharing an offset, and a file with no tensors at all.
  const auto file = [](const std::string& header, const std::vector<uint8_t>& data) { return file_bytes(header, data); };
  EXPECT_EQ(SafetensorsReader::from_bytes(file("{}", {})).tensors().size(), 0u);
  EXPECT_EQ(SafetensorsReader::from_bytes(file("{}   \n\t ", {})).tensors().size(), 0u);
  const SafetensorsReader r = SafetensorsReader::from_bytes(
      file(R"({"a":{"dtype":"F32","shape":[0],"data_offsets":[0,0]},"b":{"dtype":"BOOL","shape":[2,0,3],"data_offsets":[0,0]},)"
           R"("c":{"dtype":"BOOL","shape":[],"data_offsets":[0,1]}})", {1}));
  EXPECT_EQ(r.load("b").sizes(), IntArrayRef({2, 0, 3}));
  EXPECT_TRUE(r.load("c").item<bool>());
}

}  // namespace
}  // namespace tally::io::test
