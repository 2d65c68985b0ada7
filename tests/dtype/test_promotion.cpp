// promote_types against torch.promote_types. The table below was produced once by
//   /usr/bin/python3 -c "import torch; ds = [torch.float32, torch.float64, torch.float16, torch.bfloat16,
//       torch.int32, torch.int64, torch.uint8, torch.int8, torch.int16, torch.bool];
//       [print([str(torch.promote_types(a, b)) for b in ds]) for a in ds]"
// (PyTorch 1.13) and pasted here; rows and columns follow the order of `kOrder`.
#include <gtest/gtest.h>

#include <string>

#include "tally/dtype/dtype.h"

namespace tally {
namespace {

constexpr int kN = 10;
constexpr Dtype kOrder[kN] = {kFloat32, kFloat64, kFloat16, kBFloat16, kInt32, kInt64, kUInt8, kInt8, kInt16, kBool};

constexpr Dtype f32 = kFloat32, f64 = kFloat64, f16 = kFloat16, bf16 = kBFloat16;
constexpr Dtype i32 = kInt32, i64 = kInt64, u8 = kUInt8, i8 = kInt8, i16 = kInt16, b1 = kBool;
constexpr Dtype kTorchTable[kN][kN] = {
    /*         f32  f64  f16  bf16  i32   i64   u8    i8    i16   b1 */
    /* f32 */ {f32, f64, f32, f32,  f32,  f32,  f32,  f32,  f32,  f32},
    /* f64 */ {f64, f64, f64, f64,  f64,  f64,  f64,  f64,  f64,  f64},
    /* f16 */ {f32, f64, f16, f32,  f16,  f16,  f16,  f16,  f16,  f16},
    /* bf16*/ {f32, f64, f32, bf16, bf16, bf16, bf16, bf16, bf16, bf16},
    /* i32 */ {f32, f64, f16, bf16, i32,  i64,  i32,  i32,  i32,  i32},
    /* i64 */ {f32, f64, f16, bf16, i64,  i64,  i64,  i64,  i64,  i64},
    /* u8  */ {f32, f64, f16, bf16, i32,  i64,  u8,   i16,  i16,  u8},
    /* i8  */ {f32, f64, f16, bf16, i32,  i64,  i16,  i8,   i16,  i8},
    /* i16 */ {f32, f64, f16, bf16, i32,  i64,  i16,  i16,  i16,  i16},
    /* b1  */ {f32, f64, f16, bf16, i32,  i64,  u8,   i8,   i16,  b1},
};

TEST(PromoteTypes, MatchesTorchOnEveryPair) {
  for (int i = 0; i < kN; ++i)
    for (int j = 0; j < kN; ++j)
      EXPECT_EQ(promote_types(kOrder[i], kOrder[j]), kTorchTable[i][j])
          << dtype_name(kOrder[i]) << " with " << dtype_name(kOrder[j]);
}

TEST(PromoteTypes, Float8PromotesOnlyWithItself) {
  EXPECT_EQ(promote_types(kFloat8_e4m3fn, kFloat8_e4m3fn), kFloat8_e4m3fn);
  EXPECT_EQ(promote_types(kFloat8_e5m2, kFloat8_e5m2), kFloat8_e5m2);
}

// PyTorch checks float8 before anything else once the types differ (c10 promoteTypes), so even
// bool, which otherwise yields to every dtype, raises.
TEST(PromoteTypes, Float8WithAnyOtherDtypeRaises) {
  const Dtype all[] = {kFloat32, kFloat64, kFloat16, kBFloat16, kFloat8_e4m3fn, kFloat8_e5m2,
                       kInt32,   kInt64,   kUInt8,   kInt8,          kInt16,       kBool};
  for (Dtype f8 : {kFloat8_e4m3fn, kFloat8_e5m2}) {
    for (Dtype other : all) {
      if (other == f8) continue;
      for (bool f8_first : {true, false}) {
        const Dtype a = f8_first ? f8 : other, b = f8_first ? other : f8;
        try {
          const Dtype got = promote_types(a, b);
          ADD_FAILURE() << dtype_name(a) << " with " << dtype_name(b) << " promoted to " << dtype_name(got)
                        << " instead of raising TypeError";
        } catch (const TypeError& e) {
          EXPECT_NE(std::string(e.what()).find("Promotion for Float8 Types is not supported"), std::string::npos)
              << e.what();
        }
      }
    }
  }
}

}  // namespace
}  // namespace tally
