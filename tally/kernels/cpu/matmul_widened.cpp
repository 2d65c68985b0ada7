// 16-bit float matmul computed in float32: the operands are widened exactly, multiplied by oneDNN's
// float32 kernel and each result is rounded once. float16 always takes this path (neither oneDNN 2.6 nor
// PyTorch 1.13 has a CPU float16 matmul); bfloat16 takes it on CPUs without native bf16 instructions,
// where oneDNN's emulated bf16 kernel is several times slower than its float32 one.

#include <immintrin.h>

#include <algorithm>
#include <bit>
#include <vector>

#include "tally/dtype/half.h"
#include "tally/kernels/cpu/dispatch.h"
#include "tally/kernels/cpu/matmul.h"

namespace tally::kernels::detail {
namespace {

// Below this many elements a conversion is cheaper than waking the second thread.
constexpr int64_t kParallelElements = 1 << 15;

// Conversions of one 16-bit format, one element or a row at a time. float16 needs the hardware's
// conversion instructions to be fast: 16 at a time with AVX-512, 8 with F16C (every AVX2 CPU has
// it). The AVX-512 zero-masking forms are used because GCC 12 warns about the plain ones' undefined
// pass-through operand.
struct HalfFormat {
  static float widen(uint16_t h) { return tally::detail::half_bits_to_float(h); }
  static uint16_t narrow(float f) { return tally::detail::float_to_half_bits(f); }
  static void widen_n(const uint16_t* in, float* out, int64_t n) {
    int64_t i = 0;
#if defined(__AVX512F__)
    for (; i + 16 <= n; i += 16)
      _mm512_storeu_ps(out + i, _mm512_maskz_cvtph_ps(0xFFFF, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(in + i))));
#elif defined(__F16C__)
    for (; i + 8 <= n; i += 8)
      _mm256_storeu_ps(out + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(in + i))));
#endif
    for (; i < n; ++i) out[i] = widen(in[i]);
  }
  static void narrow_n(const float* in, uint16_t* out, int64_t n) {
    int64_t i = 0;
#if defined(__AVX512F__)
    for (; i + 16 <= n; i += 16)
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + i),
                          _mm512_maskz_cvtps_ph(0xFFFF, _mm512_loadu_ps(in + i),
                                                _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
#elif defined(__F16C__)
    for (; i + 8 <= n; i += 8)
      _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i),
                       _mm256_cvtps_ph(_mm256_loadu_ps(in + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
#endif
    for (; i < n; ++i) out[i] = narrow(in[i]);
  }
};

// bfloat16 is the top half of a float32, so plain integer loops convert it; `omp simd` makes GCC
// vectorise them at -O2 as well.
struct BFloat16Format {
  static float widen(uint16_t b) { return tally::detail::bfloat16_bits_to_float(b); }
  static uint16_t narrow(float f) { return tally::detail::float_to_bfloat16_bits(f); }
  static void widen_n(const uint16_t* in, float* out, int64_t n) {
#pragma omp simd
    for (int64_t i = 0; i < n; ++i) out[i] = std::bit_cast<float>(static_cast<uint32_t>(in[i]) << 16);
  }
  // Round to nearest even and keep NaNs NaN by setting the quiet bit, exactly as BFloat16(float).
  static void narrow_n(const float* in, uint16_t* out, int64_t n) {
#pragma omp simd
    for (int64_t i = 0; i < n; ++i) {
      const uint32_t x = std::bit_cast<uint32_t>(in[i]);
      const uint32_t rounded = (x + 0x7FFFu + ((x >> 16) & 1u)) >> 16;
      const uint32_t quiet = (x >> 16) | 0x40u;
      out[i] = static_cast<uint16_t>((x & 0x7FFFFFFFu) > 0x7F800000u ? quiet : rounded);
    }
  }
};

// Widen a strided operand into `out` as packed float32 matrices (one when broadcast). A column-major
// operand stays column-major, so that the conversion reads and writes contiguously.
template <class Format>
MatrixRef widen(const MatrixRef& x, int64_t batch, int64_t rows, int64_t cols, float* out) {
  const bool transposed = x.row_stride == 1 && x.col_stride != 1;
  const int64_t outer = transposed ? cols : rows, inner = transposed ? rows : cols;
  const int64_t outer_stride = transposed ? x.col_stride : x.row_stride;
  const int64_t inner_stride = transposed ? x.row_stride : x.col_stride;
  const int64_t count = x.batch_stride == 0 ? 1 : batch, lines = count * outer;
  const auto* src = static_cast<const uint16_t*>(x.data);
#pragma omp parallel for schedule(static) if (lines * inner > kParallelElements)
  for (int64_t l = 0; l < lines; ++l) {
    const uint16_t* in = src + (l / outer) * x.batch_stride + (l % outer) * outer_stride;
    float* dst = out + l * inner;
    if (inner_stride == 1) {
      Format::widen_n(in, dst, inner);
    } else {
      for (int64_t i = 0; i < inner; ++i) dst[i] = Format::widen(in[i * inner_stride]);
    }
  }
  const int64_t bs = x.batch_stride == 0 ? 0 : rows * cols;
  return transposed ? MatrixRef{out, bs, 1, rows} : MatrixRef{out, bs, cols, 1};
}

/// The conversions, built once per target (Note [CPU kernel dispatch]): an operand of a 16-bit
/// dtype widened into `out` (see widen), and n float32 results rounded into `out`.
MatrixRef widen_kernel(Dtype dtype, const MatrixRef& x, int64_t batch, int64_t rows, int64_t cols, float* out) {
  if (dtype == Dtype::Float16) return widen<HalfFormat>(x, batch, rows, cols, out);
  return widen<BFloat16Format>(x, batch, rows, cols, out);
}
void narrow_kernel(Dtype dtype, const float* c, uint16_t* out, int64_t n) {
  constexpr int64_t kChunk = 4096;
  const int64_t chunks = (n + kChunk - 1) / kChunk;
#pragma omp parallel for schedule(static) if (n > kParallelElements)
  for (int64_t i = 0; i < chunks; ++i) {
    const int64_t begin = i * kChunk, count = std::min(kChunk, n - begin);
    if (dtype == Dtype::Float16) HalfFormat::narrow_n(c + begin, out + begin, count);
    else BFloat16Format::narrow_n(c + begin, out + begin, count);
  }
}

}  // namespace

#if TALLY_PRIMARY_PASS
void matmul_widened(Dtype dtype, const MatmulProblem& p, void* C) {
  TALLY_INTERNAL_ASSERT(dtype == Dtype::Float16 || dtype == Dtype::BFloat16);
  const int64_t a_size = (p.A.batch_stride == 0 ? 1 : p.batch) * p.M * p.K;
  const int64_t b_size = (p.B.batch_stride == 0 ? 1 : p.batch) * p.K * p.N;
  const int64_t c_size = p.batch * p.M * p.N, bias_size = p.bias ? p.N : 0;
  // Grows only: a training loop repeats its shapes, so later steps do not allocate.
  thread_local std::vector<float> buffer;
  buffer.resize(std::max<size_t>(buffer.size(), static_cast<size_t>(a_size + b_size + c_size + bias_size)));
  float* a = buffer.data();
  float* b = a + a_size;
  float* c = b + b_size;
  float* bias = c + c_size;
  const MatmulProblem wide{p.batch, p.M, p.N, p.K, cpu_kernels().run<&widen_kernel>(dtype, p.A, p.batch, p.M, p.K, a),
                           cpu_kernels().run<&widen_kernel>(dtype, p.B, p.batch, p.K, p.N, b),
                           p.bias ? cpu_kernels().run<&widen_kernel>(dtype, MatrixRef{p.bias, 0, p.N, 1}, 1, 1, p.N, bias).data
                                  : nullptr};
  matmul_onednn(Dtype::Float32, wide, c);
  cpu_kernels().run<&narrow_kernel>(dtype, c, static_cast<uint16_t*>(C), c_size);
}
#endif  // TALLY_PRIMARY_PASS

}  // namespace tally::kernels::detail

TALLY_CPU_KERNELS(matmul_widened, &detail::widen_kernel, &detail::narrow_kernel)
