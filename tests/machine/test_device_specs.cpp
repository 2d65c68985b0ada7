// The device table against the datasheet figures the lecture and the issue quote, the dense/sparse
// split (Note [Dense and sparse peaks]), lookups and their errors, and MFU naming its peak.
#include <gtest/gtest.h>

#include <string>

#include "tally/machine/cpu_info.h"
#include "tally/machine/device_specs.h"
#include "tally/error/error.h"

namespace tally::machine {
namespace {

double peak(const char* device, const char* dtype, bool sparse = false) {
  return promised_peak(device_spec(device), dtype, sparse).flops_per_sec;
}

std::string error_of(auto&& fn) {
  try {
    fn();
  } catch (const ValueError& e) {
    return e.what();
  }
  ADD_FAILURE() << "no ValueError raised";
  return "";
}

TEST(DeviceSpecs, H100DenseIsHalfTheDatasheetHeadline) {
  // The lecture: assert h100_flop_per_sec == 1979e12 / 2.
  EXPECT_EQ(peak("h100", "bfloat16"), 1979e12 / 2);
  EXPECT_EQ(peak("h100", "bfloat16", true), 1979e12);
  EXPECT_EQ(peak("h100", "float16"), 989.5e12);
  EXPECT_EQ(peak("h100", "float8"), 1979e12);
  EXPECT_EQ(peak("h100", "float32"), 67.5e12);
  EXPECT_EQ(device_spec("h100").memory_bytes, 80e9);
  // Dense is the default when no sparsity is asked for.
  EXPECT_EQ(promised_peak(device_spec("h100")).flops_per_sec, 989.5e12);
  EXPECT_FALSE(promised_peak(device_spec("h100")).sparse);
}

TEST(DeviceSpecs, OtherGpus) {
  EXPECT_EQ(peak("a100", "float32"), 19.5e12);
  EXPECT_EQ(peak("a100", "tf32"), 156e12);
  EXPECT_EQ(peak("a100", "bfloat16"), 312e12);
  EXPECT_EQ(peak("a100", "float16"), 312e12);
  EXPECT_EQ(device_spec("a100").memory_bytes, 80e9);
  // H200 is H100 SXM compute with more memory.
  for (const char* dt : {"float32", "tf32", "bfloat16", "float16", "float8"}) EXPECT_EQ(peak("h200", dt), peak("h100", dt)) << dt;
  EXPECT_EQ(device_spec("h200").memory_bytes, 141e9);
  EXPECT_EQ(peak("b200", "bfloat16"), 2.25e15);
  EXPECT_EQ(peak("b200", "float8"), 4.5e15);
  EXPECT_EQ(peak("b200", "float32"), 80e12);
}

TEST(DeviceSpecs, EverySparsePeakIsTwiceADensePeak) {
  for (const auto& spec : device_specs())
    for (const auto& p : spec.peaks) {
      EXPECT_GT(p.flops_per_sec, 0) << spec.name << " " << p.dtype;
      if (p.sparse) {
        EXPECT_EQ(p.flops_per_sec, 2 * promised_peak(spec, p.dtype).flops_per_sec) << spec.name << " " << p.dtype;
      }
    }
}

TEST(DeviceSpecs, LookupIgnoresCaseAndSeparators) {
  EXPECT_EQ(device_spec("h100").name, "H100 SXM");
  EXPECT_EQ(device_spec("H100").name, "H100 SXM");
  EXPECT_EQ(device_spec("H100 SXM").name, "H100 SXM");
  EXPECT_EQ(device_spec("h100_sxm").name, "H100 SXM");
  EXPECT_EQ(device_spec("A100-80GB").name, "A100 SXM 80GB");
  EXPECT_EQ(device_spec("B200").name, "B200");
  EXPECT_EQ(device_spec("CPU").name, "cpu");
  // Short dtype names reach the same peak as PyTorch's.
  EXPECT_EQ(peak("h100", "bf16"), peak("h100", "bfloat16"));
  EXPECT_EQ(peak("h100", "FP8"), peak("h100", "float8"));
}

TEST(DeviceSpecs, UnknownDeviceListsTheKnownOnes) {
  const std::string msg = error_of([] { device_spec("x100"); });
  EXPECT_NE(msg.find("unknown device 'x100'"), std::string::npos) << msg;
  for (const char* name : {"A100 SXM 80GB", "H100 SXM", "H200 SXM", "B200", "cpu"})
    EXPECT_NE(msg.find(name), std::string::npos) << msg;
}

TEST(DeviceSpecs, MissingPeakIsAnError) {
  // Ampere has no float8 tensor cores.
  const std::string msg = error_of([] { promised_peak(device_spec("a100"), "float8"); });
  EXPECT_NE(msg.find("A100 SXM 80GB promises no dense peak for 'float8'"), std::string::npos) << msg;
  // A CPU has no 2:4-sparsity figure.
  EXPECT_THROW(promised_peak(device_spec("cpu"), "float32", true), ValueError);
}

TEST(DeviceSpecs, CpuIsThisMachine) {
  const DeviceSpec& cpu = device_spec("cpu");
  const auto promised = promised_cpu_peaks(cpu_info());
  ASSERT_EQ(cpu.peaks.size(), promised.size());
  for (size_t i = 0; i < promised.size(); ++i) {
    EXPECT_EQ(cpu.peaks[i].dtype, promised[i].dtype);
    EXPECT_EQ(cpu.peaks[i].flops_per_sec, promised[i].flops_per_sec);
  }
  EXPECT_GT(cpu.memory_bytes, 1e9);
  // Nothing is promised for bandwidth: it is measured (tally bench peak).
  EXPECT_FALSE(cpu.memory_bytes_per_sec.has_value());
}

TEST(Mfu, IsAchievedOverPromisedAndNamesThePeak) {
  EXPECT_EQ(mfu(494.75e12, 989.5e12), 0.5);
  const Mfu m = mfu(494.75e12, promised_peak(device_spec("h100")));
  EXPECT_EQ(m.value, 0.5);
  EXPECT_EQ(m.label(), "MFU 50.0% of H100 SXM bfloat16 dense: 989.5 TFLOP/s (promised)");
  EXPECT_EQ(promised_peak(device_spec("h100"), "bf16", true).label(), "H100 SXM bfloat16 2:4-sparse: 1979 TFLOP/s (promised)");
}

TEST(Mfu, RejectsMeaninglessRates) {
  EXPECT_THROW(mfu(1e12, 0.0), ValueError);
  EXPECT_THROW(mfu(-1.0, 1e12), ValueError);
  EXPECT_THROW(mfu(1e12, -1e12), ValueError);
}

}  // namespace
}  // namespace tally::machine
