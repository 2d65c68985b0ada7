// finfo against torch.finfo. The float32/64/16/bfloat16 numbers were printed by
//   /usr/bin/python3 -c "import torch; f = torch.finfo(torch.float16); print(repr(f.max), repr(f.eps), ...)"
// with PyTorch 1.13 (repr gives the shortest decimal that round-trips, so EXPECT_EQ is exact).
// PyTorch 1.13 has no fp8: those rows come from the format definitions (OCP FP8 / c10's limits).
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "tally/dtype/finfo.h"

namespace tally {
namespace {

struct Expected {
  Dtype dtype;
  int bits;
  double max, eps, tiny, resolution, smallest_subnormal;
};

void expect_matches(const Expected& e) {
  SCOPED_TRACE(std::string(dtype_name(e.dtype)));
  const FInfo f = finfo(e.dtype);
  EXPECT_EQ(f.dtype, e.dtype);
  EXPECT_EQ(f.bits, e.bits);
  EXPECT_EQ(f.max, e.max);
  EXPECT_EQ(f.min, -e.max);
  EXPECT_EQ(f.eps, e.eps);
  EXPECT_EQ(f.tiny, e.tiny);
  EXPECT_EQ(f.smallest_normal, e.tiny);
  EXPECT_EQ(f.resolution, e.resolution);
  EXPECT_EQ(f.smallest_subnormal, e.smallest_subnormal);
}

TEST(FInfo, MatchesTorchForIeeeTypes) {
  expect_matches({kFloat32, 32, 3.4028234663852886e+38, 1.1920928955078125e-07, 1.1754943508222875e-38, 1e-06,
                  std::ldexp(1.0, -149)});
  expect_matches({kFloat64, 64, 1.7976931348623157e+308, 2.220446049250313e-16, 2.2250738585072014e-308, 1e-15,
                  std::ldexp(1.0, -1074)});
  expect_matches({kFloat16, 16, 65504.0, 0.0009765625, 6.103515625e-05, 0.001, std::ldexp(1.0, -24)});
  expect_matches({kBFloat16, 16, 3.3895313892515355e+38, 0.0078125, 1.1754943508222875e-38, 0.01,
                  std::ldexp(1.0, -133)});
}

TEST(FInfo, Float8FromFormatDefinition) {
  expect_matches({kFloat8_e4m3fn, 8, 448.0, 0.125, 0.015625, 1.0, 0.001953125});
  expect_matches({kFloat8_e5m2, 8, 57344.0, 0.25, 6.103515625e-05, 1.0, 1.52587890625e-05});
}

TEST(FInfo, AgreesWithTheStorageTypes) {
  // The limits must be values the type can actually hold, and one ulp past max must not be finite.
  EXPECT_EQ(static_cast<float>(Float8_e4m3fn::from_bits(0x7E)), finfo(kFloat8_e4m3fn).max);
  EXPECT_EQ(static_cast<float>(Float8_e5m2::from_bits(0x7B)), finfo(kFloat8_e5m2).max);
  EXPECT_EQ(static_cast<float>(Float8_e4m3fn::from_bits(0xFE)), finfo(kFloat8_e4m3fn).min);
  EXPECT_EQ(static_cast<float>(Float8_e5m2::from_bits(0xFB)), finfo(kFloat8_e5m2).min);
  EXPECT_TRUE(std::isnan(static_cast<float>(Float8_e4m3fn::from_bits(0x7F))));
  EXPECT_TRUE(std::isinf(static_cast<float>(Float8_e5m2::from_bits(0x7C))));
  EXPECT_EQ(static_cast<float>(Half::from_bits(0x7BFF)), finfo(kFloat16).max);
  EXPECT_EQ(static_cast<float>(BFloat16::from_bits(0x7F7F)), finfo(kBFloat16).max);
  EXPECT_EQ(static_cast<float>(Float8_e4m3fn::from_bits(0x01)), finfo(kFloat8_e4m3fn).smallest_subnormal);
  EXPECT_EQ(static_cast<float>(Float8_e5m2::from_bits(0x01)), finfo(kFloat8_e5m2).smallest_subnormal);
}

TEST(FInfo, RejectsNonFloatingTypes) {
  for (Dtype d : {kInt32, kInt64, kUInt8, kInt8, kInt16, kBool}) {
    SCOPED_TRACE(std::string(dtype_name(d)));
    try {
      finfo(d);
      ADD_FAILURE() << "finfo accepted a non-floating dtype";
    } catch (const TypeError& e) {
      EXPECT_EQ(std::string(e.what()).rfind("torch.finfo() requires a floating point input type", 0), 0u) << e.what();
      EXPECT_NE(std::string(e.what()).find(std::string(dtype_name(d))), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace tally
