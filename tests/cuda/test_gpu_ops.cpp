// Every CUDA op against tally's CPU result (itself checked against PyTorch in tests/differential):
// random inputs, every dtype each op takes, non-contiguous views, broadcasting, 0-d numbers.

#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "gpu_test.h"
#include "tally/ops/registry.h"

using namespace tally;
using namespace tally::testing_gpu;

namespace {

const std::vector<Dtype> kArith = {kFloat32, kFloat64, kFloat16, kBFloat16, kInt32, kInt64, kUInt8, kInt8, kInt16, kBool};
const std::vector<Dtype> kFloating = {kFloat32, kFloat64, kFloat16, kBFloat16};

/// The inputs each case runs on: contiguous, a transposed view, and a broadcast pair.
struct Layout {
  std::string name;
  std::function<Tensor(Dtype, uint64_t, bool)> a, b;
};
std::vector<Layout> layouts() {
  return {
      {"contiguous", [](Dtype d, uint64_t s, bool p) { return sample({7, 33}, d, s, p); },
       [](Dtype d, uint64_t s, bool p) { return sample({7, 33}, d, s + 1, p); }},
      {"transposed", [](Dtype d, uint64_t s, bool p) { return sample({33, 7}, d, s, p).t(); },
       [](Dtype d, uint64_t s, bool p) { return sample({7, 33}, d, s + 1, p); }},
      {"broadcast", [](Dtype d, uint64_t s, bool p) { return sample({4, 1, 9}, d, s, p); },
       [](Dtype d, uint64_t s, bool p) { return sample({5, 1}, d, s + 1, p); }},
      {"sliced", [](Dtype d, uint64_t s, bool p) { return sample({9, 40}, d, s, p).slice(1, 1, 40, 3); },
       [](Dtype d, uint64_t s, bool p) { return sample({9, 13}, d, s + 1, p); }},
  };
}

}  // namespace

TEST(CudaOps, BinaryEveryDtypeAndLayout) {
  TALLY_REQUIRE_GPU();
  using Fn = Tensor (*)(const Tensor&, const Tensor&);
  struct Case { const char* name; Fn fn; bool floats_only; bool no_bool; bool positive_b; };
  const std::vector<Case> cases = {
      {"add", [](const Tensor& a, const Tensor& b) { return a + b; }, false, false, false},
      {"sub", [](const Tensor& a, const Tensor& b) { return a - b; }, false, true, false},
      {"mul", [](const Tensor& a, const Tensor& b) { return a * b; }, false, false, false},
      {"div", [](const Tensor& a, const Tensor& b) { return a / b; }, false, false, true},
      {"pow", [](const Tensor& a, const Tensor& b) { return pow(a.abs(), b); }, true, true, false},
      {"maximum", [](const Tensor& a, const Tensor& b) { return maximum(a, b); }, false, false, false},
      {"minimum", [](const Tensor& a, const Tensor& b) { return minimum(a, b); }, false, false, false},
      {"eq", [](const Tensor& a, const Tensor& b) { return a == b; }, false, false, false},
      {"ne", [](const Tensor& a, const Tensor& b) { return a != b; }, false, false, false},
      {"lt", [](const Tensor& a, const Tensor& b) { return a < b; }, false, false, false},
      {"le", [](const Tensor& a, const Tensor& b) { return a <= b; }, false, false, false},
      {"gt", [](const Tensor& a, const Tensor& b) { return a > b; }, false, false, false},
      {"ge", [](const Tensor& a, const Tensor& b) { return a >= b; }, false, false, false},
  };
  uint64_t seed = 1;
  for (const Case& c : cases) {
    for (Dtype d : kArith) {
      if ((c.floats_only && !is_floating_point(d)) || (c.no_bool && d == kBool)) continue;
      for (const Layout& l : layouts()) {
        SCOPED_TRACE(std::string(c.name) + " " + std::string(dtype_name(d)) + " " + l.name);
        Tensor a = l.a(d, seed, false), b = l.b(d, seed + 7, c.positive_b);
        ++seed;
        const Tensor cpu = c.fn(a, b);
        EXPECT_TRUE(same_as_cpu(c.fn(a.to(kGpu), b.to(kGpu)), cpu, tolerance(cpu.dtype())));
      }
    }
  }
}

TEST(CudaOps, NumbersJoinAsHostScalarsAndMixedDtypesPromote) {
  TALLY_REQUIRE_GPU();
  Tensor x = sample({1000}, kFloat32, 3), xi = sample({1000}, kInt64, 4);
  Tensor gx = x.to(kGpu), gxi = xi.to(kGpu);
  EXPECT_TRUE(same_as_cpu(gx * 2, x * 2, 0));
  EXPECT_TRUE(same_as_cpu(2.5 - gx, 2.5 - x, 0));
  EXPECT_TRUE(same_as_cpu(gxi / 3, xi / 3, 1e-6));
  EXPECT_TRUE(same_as_cpu(gxi + gx, xi + x, 1e-6));
  EXPECT_TRUE(same_as_cpu(gx + tensor({1.5}).to(kGpu), x + tensor({1.5}), 0));
  Tensor w = x.clone(), gw = gx.clone();
  w.add_(x, 0.5);
  gw.add_(gx, 0.5);
  EXPECT_TRUE(same_as_cpu(gw, w, 1e-6));
  w.mul_(3);
  gw.mul_(3);
  EXPECT_TRUE(same_as_cpu(gw, w, 1e-6));
}

TEST(CudaOps, UnaryEveryDtype) {
  TALLY_REQUIRE_GPU();
  using Fn = std::function<Tensor(const Tensor&)>;
  struct Case { std::string name; Fn fn; bool floats_only; std::string domain; };
  // Every row of tally/table/unary_ops.h, in its four forms (each has a CUDA kernel by
  // construction), and the unary ops outside the table.
  std::vector<Case> cases = {
      {"gelu", [](const Tensor& x) { return gelu(x); }, true, "normal"},
      {"gelu_tanh", [](const Tensor& x) { return gelu(x, "tanh"); }, true, "normal"},
      {"pow3", [](const Tensor& x) { return x.pow(3); }, false, "normal"},
      {"pow0.5", [](const Tensor& x) { return x.pow(0.5); }, true, "positive"},
      {"clamp", [](const Tensor& x) { return x.clamp(-1, 2); }, false, "normal"},
      {"clamp_min", [](const Tensor& x) { return x.clamp(0.5); }, true, "normal"},
  };
  for (const ops::UnaryOpInfo& u : ops::unary_ops()) {
    const std::string name(u.name), domain(u.domain);
    cases.push_back({name, u.fn, u.floating_only, domain});
    cases.push_back({name + " method", u.method, u.floating_only, domain});
    cases.push_back({name + " out=", [out = u.out](const Tensor& x) {
                       Tensor r = empty({0}, TensorOptions(x.dtype() == kBool ? kFloat32 : x.dtype()).device(x.device()));
                       return out(r, x);
                     }, true, domain});
    cases.push_back({name + " in place", [inplace = u.inplace](const Tensor& x) {
                       Tensor r = x.clone();
                       return inplace(r);
                     }, true, domain});
  }
  uint64_t seed = 100;
  for (const Case& c : cases) {
    for (Dtype d : kArith) {
      if (d == kBool || (c.floats_only && !is_floating_point(d))) continue;
      SCOPED_TRACE(c.name + " " + std::string(dtype_name(d)));
      Tensor x = sample({13, 31}, d, seed++, c.domain == "positive").t();  // a transposed view
      if (c.domain == "unit") x = (sigmoid(x.to(kFloat64)) * 0.8 + 0.1).to(d);
      const Tensor cpu = c.fn(x);
      EXPECT_TRUE(same_as_cpu(c.fn(x.to(kGpu)), cpu, 4 * tolerance(cpu.dtype())));
    }
  }
}

TEST(CudaOps, WhereAndMaskedFill) {
  TALLY_REQUIRE_GPU();
  Tensor c = sample({6, 1}, kBool, 1), a = sample({6, 5}, kFloat32, 2), b = sample({5}, kFloat32, 3);
  EXPECT_TRUE(same_as_cpu(where(c.to(kGpu), a.to(kGpu), b.to(kGpu)), where(c, a, b), 0));
  EXPECT_TRUE(same_as_cpu(a.to(kGpu).masked_fill(c.to(kGpu), -7), a.masked_fill(c, -7), 0));
}

TEST(CudaOps, CopiesBetweenEveryPairOfDtypesAndDevices) {
  TALLY_REQUIRE_GPU();
  const std::vector<Dtype> all = {kFloat32, kFloat64, kFloat16, kBFloat16, kFloat8_e4m3fn,
                                  kFloat8_e5m2, kInt32, kInt64, kUInt8, kInt8, kInt16, kBool};
  // Values that exercise rounding and overflow of the narrow floats: normals, big numbers, NaN, inf.
  Tensor base = cat({randn({200}, kFloat32) * 4, tensor({300.0, 460.0, 1e5, -7e4, 65520.0, 1e-9, 0.0, -0.0}),
                     tensor({1.0}) / 0.0, tensor({-1.0}) / 0.0, (tensor({0.0}) / 0.0)}, 0);
  for (Dtype from : all) {
    Tensor src = base.to(from);
    Tensor gsrc = src.to(kGpu);
    EXPECT_TRUE(same_as_cpu(gsrc, src, 0)) << dtype_name(from) << " round trip";
    for (Dtype to : all) {
      SCOPED_TRACE(std::string(dtype_name(from)) + " -> " + std::string(dtype_name(to)));
      if (!is_floating_point(to) && is_floating_point(from)) {
        // float -> int of NaN or out-of-range values is undefined in C++ and differs by device.
        Tensor finite = src.to(kFloat32).clamp(-100, 100);
        Tensor fsrc = finite.masked_fill(finite != finite, 0).to(from);
        EXPECT_TRUE(same_as_cpu(fsrc.to(kGpu).to(to), fsrc.to(to), 0));
        continue;
      }
      EXPECT_TRUE(same_as_cpu(gsrc.to(to), src.to(to), 0));
    }
  }
  // Strided copies on the GPU, a GPU view written from the host and a host view from the GPU.
  Tensor x = sample({8, 12}, kFloat32, 9);
  Tensor gx = x.to(kGpu);
  EXPECT_TRUE(same_as_cpu(gx.t().contiguous(), x.t().contiguous(), 0));
  Tensor gy = zeros({12, 8}, kGpu);
  gy.slice(0, 2, 6).copy_(x.t().slice(0, 0, 4));
  Tensor y = zeros({12, 8});
  y.slice(0, 2, 6).copy_(x.t().slice(0, 0, 4));
  EXPECT_TRUE(same_as_cpu(gy, y, 0));
  Tensor h = zeros({8, 12});
  h.t().copy_(gx.t());
  EXPECT_TRUE(h.equal(x));
  Tensor hb = zeros({8, 12}, kBFloat16);
  hb.copy_(gx);
  EXPECT_TRUE(hb.equal(x.to(kBFloat16)));
}

TEST(CudaOps, FillsAndFactories) {
  TALLY_REQUIRE_GPU();
  EXPECT_TRUE(same_as_cpu(full({3, 4}, 2.5, TensorOptions(kBFloat16).device(kGpu)), full({3, 4}, 2.5, kBFloat16), 0));
  EXPECT_TRUE(same_as_cpu(ones({5}, kGpu), ones({5}), 0));
  EXPECT_TRUE(same_as_cpu(arange(10, kGpu), arange(10), 0));
  EXPECT_TRUE(same_as_cpu(eye(3, std::nullopt, kGpu), eye(3), 0));
  EXPECT_TRUE(same_as_cpu(zeros_like(ones({2}, kGpu)), zeros({2}), 0));
  Tensor t = tensor({{1., 2.}, {3., 4.}}, TensorOptions().device(kGpu));
  EXPECT_EQ(t.device(), kGpu);
  EXPECT_EQ(t._version(), 0);
  // A seed gives the same numbers on both devices.
  Generator g1(42), g2(42);
  EXPECT_TRUE(same_as_cpu(randn({1000}, TensorOptions().device(kGpu), &g1), randn({1000}, kFloat32, &g2), 0));
  EXPECT_TRUE(same_as_cpu(triu(ones({4, 4}, kGpu)), triu(ones({4, 4})), 0));
}

TEST(CudaOps, ReductionsOverEveryDimChoice) {
  TALLY_REQUIRE_GPU();
  const std::vector<std::vector<int64_t>> dim_sets = {{}, {0}, {1}, {2}, {0, 2}, {-1, -2}};
  uint64_t seed = 500;
  for (Dtype d : kArith) {
    Tensor x = sample({5, 6, 37}, d, seed++);
    Tensor gx = x.to(kGpu);
    for (const auto& dims : dim_sets) {
      for (bool keep : {false, true}) {
        SCOPED_TRACE(std::string(dtype_name(d)) + " dims " + std::to_string(dims.size()) + (keep ? " keepdim" : ""));
        if (d != kBool) {
          const double t = is_floating_point(d) ? 50 * tolerance(d) : 0;
          EXPECT_TRUE(same_as_cpu(gx.sum(dims, keep), x.sum(dims, keep), t));
          EXPECT_TRUE(same_as_cpu(gx.amax(dims, keep), x.amax(dims, keep), 0));
          EXPECT_TRUE(same_as_cpu(gx.amin(dims, keep), x.amin(dims, keep), 0));
        }
        if (is_floating_point(d)) {
          EXPECT_TRUE(same_as_cpu(gx.mean(dims, keep), x.mean(dims, keep), 50 * tolerance(d)));
        }
      }
    }
    if (d != kBool) {
      EXPECT_TRUE(same_as_cpu(gx.argmax(1), x.argmax(1), 0)) << dtype_name(d);
      EXPECT_TRUE(same_as_cpu(gx.argmin(-1, true), x.argmin(-1, true), 0)) << dtype_name(d);
      EXPECT_TRUE(same_as_cpu(gx.argmax(), x.argmax(), 0)) << dtype_name(d);
    }
    EXPECT_TRUE(same_as_cpu(gx.any(2), x.any(2), 0)) << dtype_name(d);
    EXPECT_TRUE(same_as_cpu(gx.all(0), x.all(0), 0)) << dtype_name(d);
  }
  Tensor p = sample({4, 9}, kFloat64, 7, true);
  EXPECT_TRUE(same_as_cpu(p.to(kGpu).prod(1), p.prod(1), 1e-12));
  Tensor big = sample({3, 100000}, kFloat32, 8);  // rows longer than a block
  EXPECT_TRUE(same_as_cpu(big.to(kGpu).sum({1}), big.sum({1}), 1e-4));
  EXPECT_TRUE(same_as_cpu(big.to(kGpu).amax({1}), big.amax({1}), 0));
  Tensor with_nan = tensor({1.0, 0.0 / 0.0, 3.0});
  EXPECT_TRUE(same_as_cpu(with_nan.to(kGpu).amax(), with_nan.amax(), 0));
  EXPECT_TRUE(same_as_cpu(with_nan.to(kGpu).argmax(), with_nan.argmax(), 0));
  EXPECT_TRUE(same_as_cpu(zeros({3, 0}, kGpu).sum({1}), zeros({3, 0}).sum({1}), 0));
}

TEST(CudaOps, SoftmaxAlongEveryDim) {
  TALLY_REQUIRE_GPU();
  for (Dtype d : kFloating) {
    for (int64_t n : {1, 7, 1000, 5000, 20000}) {
      Tensor x = sample({3, 4, n}, d, static_cast<uint64_t>(n));
      for (int64_t dim : {-1, 0, 1}) {
        SCOPED_TRACE(std::string(dtype_name(d)) + " n=" + std::to_string(n) + " dim=" + std::to_string(dim));
        EXPECT_TRUE(same_as_cpu(x.to(kGpu).softmax(dim), x.softmax(dim), 4 * tolerance(d), 1e-6));
        EXPECT_TRUE(same_as_cpu(x.to(kGpu).log_softmax(dim), x.log_softmax(dim), 4 * tolerance(d), 1e-5));
      }
    }
  }
  Tensor inf_row = full({2, 3}, -1.0 / 0.0);
  EXPECT_TRUE(same_as_cpu(inf_row.to(kGpu).softmax(1), inf_row.softmax(1), 0));
}

TEST(CudaOps, MatmulEveryDtypeAndLayout) {
  TALLY_REQUIRE_GPU();
  struct Shape { std::vector<int64_t> a, b; };
  const std::vector<Shape> shapes = {
      {{64, 48}, {48, 32}}, {{5, 64, 48}, {48, 32}}, {{5, 64, 48}, {5, 48, 32}}, {{48}, {48, 32}},
      {{64, 48}, {48}}, {{2, 1, 16, 32}, {3, 32, 16}},
  };
  for (Dtype d : kFloating) {
    for (const Shape& s : shapes) {
      Tensor a = sample(s.a, d, 1), b = sample(s.b, d, 2);
      SCOPED_TRACE(std::string(dtype_name(d)) + " " + std::to_string(s.a.size()) + "x" + std::to_string(s.b.size()));
      const double t = d == kFloat32 ? 1e-5 : 2 * tolerance(d);
      EXPECT_TRUE(same_as_cpu(matmul(a.to(kGpu), b.to(kGpu)), matmul(a, b), t, t * 50));
      if (a.dim() == 2 && b.dim() == 2) {  // transposed operands: column-major on the GPU, no copy
        Tensor at = sample({s.a[1], s.a[0]}, d, 3).t(), bt = sample({s.b[1], s.b[0]}, d, 4).t();
        EXPECT_TRUE(same_as_cpu(matmul(at.to(kGpu), bt.to(kGpu)), matmul(at, bt), t, t * 50));
      }
    }
  }
  // TF32 is opt-in and changes float32 results at the 1e-3 level only.
  Tensor a = sample({256, 256}, kFloat32, 5), b = sample({256, 256}, kFloat32, 6);
  cuda::set_allow_tf32(true);
  Tensor tf32 = matmul(a.to(kGpu), b.to(kGpu));
  cuda::set_allow_tf32(false);
  EXPECT_TRUE(same_as_cpu(tf32, matmul(a, b), 5e-3, 0.5));
}

TEST(CudaOps, Float8MatmulsAndScaledMm) {
  TALLY_REQUIRE_GPU();
  const cuda::DeviceProperties p = cuda::get_device_properties(0);
  if (p.major < 9 && !(p.major == 8 && p.minor >= 9)) GTEST_SKIP() << p.name << " has no FP8 tensor cores";
  Tensor a = sample({64, 128}, kFloat32, 1).to(kFloat8_e4m3fn), w = sample({32, 128}, kFloat32, 2).to(kFloat8_e4m3fn);
  Tensor sa = tensor({0.5}, kFloat32), sb = tensor({2.0}, kFloat32);
  for (Dtype out : {kBFloat16, kFloat32}) {
    Tensor cpu = scaled_mm(a, w.t(), sa, sb, out);
    Tensor gpu = scaled_mm(a.to(kGpu), w.to(kGpu).t(), sa.to(kGpu), sb.to(kGpu), out);
    ASSERT_EQ(gpu.dtype(), out);
    // ‖GPU − CPU‖ / ‖CPU‖: Hopper's FP8 tensor cores accumulate with fewer bits than float32
    // (about 1e-3 relative here), and bf16 output rounds on top of that.
    Tensor diff = gpu.cpu().to(kFloat64) - cpu.to(kFloat64);
    const double rel = std::sqrt(diff.square().sum().item<double>() / cpu.to(kFloat64).square().sum().item<double>());
    EXPECT_LT(rel, out == kFloat32 ? 3e-3 : 1e-2) << dtype_name(out);
  }
  // A plain matmul of float8 tensors is refused on both devices, as in PyTorch: scaling is explicit.
  Tensor b = sample({128, 32}, kFloat32, 3).to(kFloat8_e4m3fn);
  EXPECT_THROW(matmul(a, b), TypeError);
  EXPECT_THROW(matmul(a.to(kGpu), b.to(kGpu)), TypeError);
  // Integer matrices have no CUDA kernel (cuBLASLt's products are floating-point), as in PyTorch:
  // NotImplementedError, the error of a kernel that lacks a dtype, where the CPU computes them.
  const Tensor i = ones({4, 4}, kInt64);
  EXPECT_NO_THROW(matmul(i, i));
  EXPECT_THROW(matmul(i.to(kGpu), i.to(kGpu)), NotImplementedError);
  EXPECT_THROW(scaled_mm(a.to(kGpu), w.to(kGpu).t(), tensor({1, 2}, kFloat32).to(kGpu), sb.to(kGpu), kBFloat16), ValueError);
  EXPECT_THROW(scaled_mm(a.to(kGpu), w.to(kGpu).t(), tensor({1.0}), sb.to(kGpu), kBFloat16), DeviceError);
}

TEST(CudaOps, MixedDevicesRaisePytorchsError) {
  TALLY_REQUIRE_GPU();
  Tensor g = ones({3}, kGpu), c = ones({3});
  try {
    (void)(g + c);
    FAIL();
  } catch (const DeviceError& e) {
    EXPECT_STREQ(e.what(), "Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu!");
  }
  EXPECT_THROW(matmul(ones({2, 2}), ones({2, 2}, kGpu)), DeviceError);
  EXPECT_NO_THROW(g + ones({}));  // a 0-d CPU tensor joins, as in PyTorch
  EXPECT_EQ((g + ones({})).device(), Device(kGpu));
  EXPECT_THROW(index_select(g, 0, tensor({0, 1})), DeviceError);  // only a 0-d CPU tensor may join
}

TEST(CudaOps, PrintsLikePytorch) {
  TALLY_REQUIRE_GPU();
  EXPECT_EQ(tensor({1.0, 2.0}).to(kGpu).to_string(), "tensor([1., 2.], device='cuda:0')");
  EXPECT_EQ(ones({2}, TensorOptions(kBFloat16).device(kGpu)).to_string(),
            "tensor([1., 1.], device='cuda:0', dtype=torch.bfloat16)");
  EXPECT_EQ(ones({}, kGpu).item<double>(), 1.0);
}
