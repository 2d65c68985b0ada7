// safetensors interop with Python using numpy + json alone (interop.py): tally reads the files
// Python writes with the exact values, and Python reads the files tally writes.

#include <nlohmann/json.hpp>

#include "tally/tally.h"
#include "tests/io/io_test_util.h"

namespace tally::io::test {
namespace {

/// The dtype of a safetensors name (the table of interop.py uses only those tally has).
Dtype dtype_of_name(const std::string& name) {
  for (Dtype d : {kFloat64, kFloat32, kFloat16, kBFloat16, kFloat8_e4m3fn, kFloat8_e5m2, kInt64, kInt32, kUInt8, kInt8, kInt16, kBool})
    if (safetensors_dtype_name(d) == name) return d;
  throw ValueError("unknown dtype " + name);
}

/// The tensor an entry of expected.json describes, built value by value.
Tensor expected_tensor(const nlohmann::json& e) {
  DimVector shape;
  for (const auto& s : e["shape"]) shape.push_back(s.get<int64_t>());
  Tensor t = empty(shape, dtype_of_name(e["dtype"].get<std::string>()));
  const nlohmann::json& values = e["values"];
  dispatch(t.dtype(), "expected_tensor", [&]<class T>() {
    T* p = t.numel() ? t.data_ptr<T>() : nullptr;
    for (size_t i = 0; i < values.size(); ++i) {
      if constexpr (std::is_same_v<T, bool>) p[i] = values[i].get<bool>();
      else if constexpr (std::is_integral_v<T>) p[i] = static_cast<T>(values[i].get<int64_t>());
      else p[i] = cast_to<T>(values[i].get<double>());  // exact: interop.py picks representable values
    }
  });
  return t;
}

/// The same values in a non-contiguous layout: a transpose of the transpose for 2-d, every
/// other element of a larger buffer for 1-d.
Tensor strided_copy(const Tensor& t) {
  if (t.dim() == 2) return t.t().contiguous().t();
  if (t.dim() == 1 && t.numel() > 1) {
    Tensor v = empty({2 * t.numel()}, t.dtype()).slice(0, 0, 2 * t.numel(), 2);
    v.copy_(t);
    return v;
  }
  return t;
}

TEST(SafetensorsInterop, ReadsWhatNumpyWritesAndNumpyReadsWhatTallyWrites) {
  TempDir dir;
  ASSERT_EQ(run_python("interop.py", "write '" + dir.path().string() + "' > /dev/null"), 0);
  std::ifstream in(dir.file("expected.json"));
  const nlohmann::json expected = nlohmann::json::parse(in);
  const auto metadata = expected["metadata"].get<std::map<std::string, std::string>>();

  StateDict want("tensor");
  for (const auto& [name, e] : expected["tensors"].items()) want.insert(name, expected_tensor(e));

  for (const char* file : {"python.safetensors", "python_unpadded.safetensors"}) {
    SCOPED_TRACE(file);
    const SafetensorsReader r = SafetensorsReader::open(dir.file(file));
    EXPECT_EQ(r.metadata(), metadata);
    const StateDict got = r.load_all();
    EXPECT_EQ(got.size(), want.size());
    for (const auto& [name, t] : want) {
      ASSERT_TRUE(got.contains(name)) << name;
      expect_identical(got.at(name), t, name);
    }
  }

  StateDict strided("tensor");
  for (const auto& [name, t] : want) strided.insert(name, strided_copy(t));
  EXPECT_FALSE(strided.at("f64").is_contiguous());
  EXPECT_FALSE(strided.at("f8_e4m3").is_contiguous());
  save_safetensors(dir.file("tally.safetensors"), strided, metadata);
  EXPECT_EQ(run_python("interop.py", "check '" + dir.file("tally.safetensors").string() + "'"), 0);
}

}  // namespace
}  // namespace tally::io::test
