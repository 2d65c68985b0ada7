// float32 and bfloat16 matmul through oneDNN, with one cached primitive per problem layout.

#include <omp.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <oneapi/dnnl/dnnl.hpp>

#include "tally/dtype/half.h"
#include "tally/kernels/cpu/matmul.h"

namespace tally::kernels {
namespace {

using dnnl::memory;

dnnl::engine& cpu_engine() {
  static dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

// oneDNN's CPU stream runs each primitive synchronously in the calling thread, so one stream serves
// every caller (ideep shares a default stream the same way).
dnnl::stream& cpu_stream() {
  static dnnl::stream stream(cpu_engine());
  return stream;
}

std::atomic<int64_t> primitives_created{0};

// Everything that defines a primitive. The thread count is part of it because oneDNN sizes its work
// split when the primitive is created.
struct PlanKey {
  Dtype dtype;
  int threads;
  int64_t batch, M, N, K;
  int64_t a_strides[3], b_strides[3];
  bool bias;
  bool operator==(const PlanKey&) const = default;
};

struct PlanKeyHash {
  size_t operator()(const PlanKey& k) const {
    size_t h = std::hash<int>()(static_cast<int>(k.dtype) * 1024 + k.threads);
    auto mix = [&h](int64_t v) { h ^= std::hash<int64_t>()(v) + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2); };
    for (int64_t v : {k.batch, k.M, k.N, k.K}) mix(v);
    for (int i = 0; i < 3; ++i) mix(k.a_strides[i]), mix(k.b_strides[i]);
    mix(k.bias);
    return h;
  }
};

// How one operand reaches oneDNN: in the caller's layout, or first copied to a packed row-major
// buffer (count matrices: 1 when broadcast across the batch).
struct OperandPlan {
  memory::desc md;
  bool packed;
  int64_t count, rows, cols;
};

struct Plan {
  dnnl::matmul primitive;
  OperandPlan a, b;
  memory::desc c_md, bias_md;  // bias_md empty without a bias
};

// oneDNN's fast kernels take positive strides with a unit stride inside each matrix and matrices that
// do not overlap. It also has a reference kernel that takes other layouts, but packing first is faster.
bool onednn_layout(const MatrixRef& x, int64_t rows, int64_t cols) {
  const int64_t rs = x.row_stride, cs = x.col_stride;
  const bool row_major = cs == 1 && rs >= cols;
  const bool col_major = rs == 1 && cs >= rows;
  if (!row_major && !col_major) return false;
  return x.batch_stride == 0 || x.batch_stride >= (row_major ? rows * rs : cols * cs);
}

OperandPlan plan_operand(memory::data_type type, const MatrixRef& x, int64_t batch, int64_t rows, int64_t cols,
                         bool packed) {
  // A broadcast operand is a batch of one, which oneDNN broadcasts against the other operand.
  const int64_t count = x.batch_stride == 0 ? 1 : batch;
  if (packed) return {memory::desc({count, rows, cols}, type, {rows * cols, cols, 1}), true, count, rows, cols};
  const int64_t extent = std::max(rows * x.row_stride, cols * x.col_stride);
  const int64_t bs = x.batch_stride == 0 ? extent : x.batch_stride;
  return {memory::desc({count, rows, cols}, type, {bs, x.row_stride, x.col_stride}), false, count, rows, cols};
}

std::shared_ptr<const Plan> make_plan(Dtype dtype, const detail::MatmulProblem& p) {
  const auto type = dtype == Dtype::BFloat16 ? memory::data_type::bf16 : memory::data_type::f32;
  bool pack_a = !onednn_layout(p.A, p.M, p.K), pack_b = !onednn_layout(p.B, p.K, p.N);
  const memory::desc c_md({p.batch, p.M, p.N}, type, {p.M * p.N, p.N, 1});
  // The bias, one row broadcast over the batch and the rows, is added in the epilogue.
  const memory::desc bias_md = p.bias ? memory::desc({1, 1, p.N}, type, {p.N, p.N, 1}) : memory::desc();
  while (true) {
    try {
      OperandPlan a = plan_operand(type, p.A, p.batch, p.M, p.K, pack_a);
      OperandPlan b = plan_operand(type, p.B, p.batch, p.K, p.N, pack_b);
      dnnl::matmul::primitive_desc pd(p.bias ? dnnl::matmul::desc(a.md, b.md, bias_md, c_md) : dnnl::matmul::desc(a.md, b.md, c_md),
                                      cpu_engine());
      const bool reference = std::string_view(pd.impl_info_str()).starts_with("ref");
      if (!reference || (pack_a && pack_b)) {
        auto plan = std::make_shared<Plan>(Plan{dnnl::matmul(pd), a, b, c_md, bias_md});
        primitives_created.fetch_add(1, std::memory_order_relaxed);
        return plan;
      }
    } catch (const dnnl::error& e) {
      TALLY_INTERNAL_ASSERT(!(pack_a && pack_b), "oneDNN refused a packed matmul: ", e.what());
    }
    // A layout oneDNN refuses or only runs in its reference kernel: pack both operands.
    pack_a = pack_b = true;
  }
}

std::shared_ptr<const Plan> find_plan(Dtype dtype, const detail::MatmulProblem& p) {
  // Bounded so that a stream of distinct shapes cannot grow it forever; a training loop uses a few dozen.
  constexpr size_t kMaxPlans = 1024;
  static std::mutex mutex;
  static std::unordered_map<PlanKey, std::shared_ptr<const Plan>, PlanKeyHash> plans;
  const PlanKey key{dtype,
                    omp_get_max_threads(),
                    p.batch, p.M, p.N, p.K,
                    {p.A.batch_stride, p.A.row_stride, p.A.col_stride},
                    {p.B.batch_stride, p.B.row_stride, p.B.col_stride},
                    p.bias != nullptr};
  // Held while creating, so that two threads asking for the same new problem create it once.
  std::lock_guard<std::mutex> lock(mutex);
  if (auto it = plans.find(key); it != plans.end()) return it->second;
  if (plans.size() >= kMaxPlans) plans.clear();  // plans in use stay alive through their shared_ptr
  return plans.emplace(key, make_plan(dtype, p)).first->second;
}

// Copy a strided operand into `out` as `count` packed row-major rows×cols matrices.
template <class Bits>
void pack(const MatrixRef& x, const OperandPlan& op, Bits* out) {
  const auto* src = static_cast<const Bits*>(x.data);
  const int64_t rows = op.rows, cols = op.cols, total_rows = op.count * rows;
#pragma omp parallel for schedule(static) if (total_rows * cols > (1 << 15))
  for (int64_t r = 0; r < total_rows; ++r) {
    const Bits* in = src + (r / rows) * x.batch_stride + (r % rows) * x.row_stride;
    Bits* dst = out + r * cols;
    if (x.col_stride == 1) {
      std::memcpy(dst, in, static_cast<size_t>(cols) * sizeof(Bits));
    } else {
      for (int64_t c = 0; c < cols; ++c) dst[c] = in[c * x.col_stride];
    }
  }
}

// Packed operands live in one buffer per thread that only grows: a training loop repeats the same
// shapes, so after the first step no call allocates.
template <class Bits>
Bits* scratch(size_t elements) {
  thread_local std::vector<Bits> buffer;
  if (buffer.size() < elements) buffer.resize(elements);
  return buffer.data();
}

template <class Bits>
void run(const Plan& plan, const detail::MatmulProblem& p, void* C) {
  const OperandPlan& a = plan.a;
  const OperandPlan& b = plan.b;
  const size_t a_elements = a.packed ? static_cast<size_t>(a.count * a.rows * a.cols) : 0;
  const size_t b_elements = b.packed ? static_cast<size_t>(b.count * b.rows * b.cols) : 0;
  Bits* buffer = scratch<Bits>(a_elements + b_elements);
  void* a_data = const_cast<void*>(p.A.data);  // oneDNN only reads sources, but its API is not const
  void* b_data = const_cast<void*>(p.B.data);
  if (a.packed) pack(p.A, a, buffer), a_data = buffer;
  if (b.packed) pack(p.B, b, buffer + a_elements), b_data = buffer + a_elements;
  memory a_mem(a.md, cpu_engine(), a_data), b_mem(b.md, cpu_engine(), b_data), c_mem(plan.c_md, cpu_engine(), C);
  std::unordered_map<int, memory> args{{DNNL_ARG_SRC, a_mem}, {DNNL_ARG_WEIGHTS, b_mem}, {DNNL_ARG_DST, c_mem}};
  if (p.bias) args.emplace(DNNL_ARG_BIAS, memory(plan.bias_md, cpu_engine(), const_cast<void*>(p.bias)));
  plan.primitive.execute(cpu_stream(), args);
  cpu_stream().wait();
}

// Runs a small product on the calling thread alone: it would finish before a second thread woke up, and
// on a busy machine waiting for that thread costs far more than the product. oneDNN sizes its work split
// from omp_get_max_threads(), which this sets for the calling thread only, until the scope ends.
class SerialIfSmall {
 public:
  explicit SerialIfSmall(const detail::MatmulProblem& p) : saved_threads_(omp_get_max_threads()) {
    constexpr double kSerialFlops = 1 << 21;
    if (2.0 * static_cast<double>(p.batch * p.M) * static_cast<double>(p.N * p.K) < kSerialFlops) omp_set_num_threads(1);
  }
  ~SerialIfSmall() { omp_set_num_threads(saved_threads_); }
  SerialIfSmall(const SerialIfSmall&) = delete;
  SerialIfSmall& operator=(const SerialIfSmall&) = delete;

 private:
  int saved_threads_;
};

// Note [Long inner dimensions]
// oneDNN 2.6's float32 product crashes (a 32-bit offset overflows inside its kernel) once the inner
// dimension is very long: [32, 5e7] @ [5e7, 2] segfaults where [32, 4.9e7] and [128, 2^24] run
// (a language model's output layer, logits' gradient @ embedding, at a vocabulary of 5e7). A
// product with K above kMaxInnerChunk therefore runs as products over slices of K, each one oneDNN
// takes, summed in float32 and rounded into C once.
constexpr int64_t kMaxInnerChunk = int64_t{1} << 24;

template <class Bits>
float widen(Bits b) {
  if constexpr (sizeof(Bits) == 4) return std::bit_cast<float>(b);
  else return static_cast<float>(BFloat16::from_bits(b));
}
template <class Bits>
Bits narrow(float f) {
  if constexpr (sizeof(Bits) == 4) return std::bit_cast<Bits>(f);
  else return BFloat16(f).bits;
}

template <class Bits>
void run_in_chunks(Dtype dtype, const detail::MatmulProblem& p, void* C, int64_t chunk) {
  const auto elements = static_cast<size_t>(p.batch * p.M * p.N);
  std::vector<float> sum(elements, 0.0f);
  std::vector<Bits> part(elements);
  for (int64_t k0 = 0; k0 < p.K; k0 += chunk) {
    detail::MatmulProblem q = p;
    q.K = std::min(chunk, p.K - k0);
    q.A.data = static_cast<const Bits*>(p.A.data) + k0 * p.A.col_stride;
    q.B.data = static_cast<const Bits*>(p.B.data) + k0 * p.B.row_stride;
    q.bias = k0 == 0 ? p.bias : nullptr;  // added once, with the first slice
    run<Bits>(*find_plan(dtype, q), q, part.data());
    for (size_t i = 0; i < elements; ++i) sum[i] += widen(part[i]);
  }
  Bits* out = static_cast<Bits*>(C);
  for (size_t i = 0; i < elements; ++i) out[i] = narrow<Bits>(sum[i]);
}

}  // namespace

int64_t matmul_primitives_created() { return primitives_created.load(std::memory_order_relaxed); }

namespace detail {

bool onednn_native_bf16() {
  // The ISA values are bit sets in which each level contains the bits of those below it.
  static const bool native = [] {
    const auto isa = static_cast<unsigned>(dnnl::get_effective_cpu_isa());
    const auto bf16 = static_cast<unsigned>(dnnl::cpu_isa::avx512_core_bf16);
    return (isa & bf16) == bf16;
  }();
  return native;
}

bool onednn_amx_bf16() {
  static const bool amx = [] {
    const auto isa = static_cast<unsigned>(dnnl::get_effective_cpu_isa());
    const auto amx_isa = static_cast<unsigned>(dnnl::cpu_isa::avx512_core_amx);
    return (isa & amx_isa) == amx_isa;
  }();
  return amx;
}

machine::CpuInfo matmul_cpu_features() {
  machine::CpuInfo cpu = machine::cpu_info();
  cpu.amx_bf16 = cpu.amx_bf16 && onednn_amx_bf16();
  cpu.avx512_bf16 = cpu.avx512_bf16 && onednn_native_bf16();
  return cpu;
}

void matmul_onednn(Dtype dtype, const MatmulProblem& p, void* C) {
  if (p.K > kMaxInnerChunk) return matmul_onednn_in_chunks(dtype, p, C, kMaxInnerChunk);  // Note [Long inner dimensions]
  TALLY_INTERNAL_ASSERT(dtype == Dtype::Float32 || dtype == Dtype::BFloat16);
  const SerialIfSmall serial_if_small(p);
  std::shared_ptr<const Plan> plan = find_plan(dtype, p);
  if (dtype == Dtype::Float32) {
    run<uint32_t>(*plan, p, C);
  } else {
    run<uint16_t>(*plan, p, C);
  }
}

void matmul_onednn_in_chunks(Dtype dtype, const MatmulProblem& p, void* C, int64_t chunk) {
  TALLY_INTERNAL_ASSERT(dtype == Dtype::Float32 || dtype == Dtype::BFloat16);
  TALLY_INTERNAL_ASSERT(chunk > 0);
  if (dtype == Dtype::Float32) {
    run_in_chunks<uint32_t>(dtype, p, C, chunk);
  } else {
    run_in_chunks<uint16_t>(dtype, p, C, chunk);
  }
}

}  // namespace detail
}  // namespace tally::kernels
