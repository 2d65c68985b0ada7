// scaled_dot_product_attention as one op, with its backward as a second. On the CPU the L×S
// scores never exist whole: query rows go in blocks of kBlockRows, and under a causal mask a block
// meets only the keys its last row sees, so the products over the masked upper triangle, half of
// a masked implementation's, are mostly never run; the FLOPs declared are those the blocks run.
// Nothing but q, k and v is kept for backward, which recomputes each block's probabilities (one
// more product) rather than keeping [B, L, S] of them between the passes. With
// P = softmax(scale·q kᵀ), dP = dO vᵀ and dS = scale·P·(dP − Σ dP·P):
//   dq = dS k,   dk = dSᵀ q,   dv = Pᵀ dO.
//
// bfloat16 on a CPU with AVX512_BF16 runs the fused kernel of kernels/cpu/attention_bf16.h, one
// matrix per thread, its scores in float32 and only the probabilities rounded. Every other dtype
// and CPU runs the blocks as batched oneDNN products over all matrices at once, with every
// intermediate rounded to the inputs' dtype where the composed ops would round it (scores,
// probabilities, their gradient), so it gives what matmul → attention_softmax → matmul gives: a
// block's scores are one product, turned into probabilities in place while they sit in cache and
// multiplied by the values at once; backward makes dq block by block, then dk and dv by blocks of
// keys from P and dS kept for the call, each block of keys against the query rows that see it.
// On the GPU, where no fused kernel is written yet, the same maths runs as the composed ops.

#include "tally/ops/attention.h"

#include <fmt/core.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "tally/kernels/cpu/attention_bf16.h"
#include "tally/kernels/cpu/attention_f32.h"
#include "tally/kernels/cpu/dispatch.h"
#include "tally/kernels/cpu/matmul.h"
#include "tally/machine/cpu_info.h"
#include "tally/ops/apply.h"
#include "tally/ops/join.h"
#include "tally/ops/matmul.h"
#include "tally/ops/softmax.h"

namespace tally {

namespace {

using ops::detail::RowLayout;

/// Query rows per block, here and in the bfloat16 kernel: the causal blocks run 5/8 of the full
/// products at T = 256 (1/2 + 1/(2·blocks) in general), the bfloat16 kernel's strips 51%.
constexpr int64_t kBlockRows = kernels::kAttentionBlockRows;

/// An attention problem's sizes: B matrices (the batch dims flattened), L queries, S keys, E
/// features per query and key, Ev per value.
struct AttentionShape {
  int64_t B = 1, L, S, E, Ev;
  AttentionShape(const Tensor& q, const Tensor& k, const Tensor& v) : L(q.size(-2)), S(k.size(-2)), E(q.size(-1)), Ev(v.size(-1)) {
    for (int64_t d = 0; d + 2 < q.dim(); ++d) B *= q.size(d);
  }
  /// The problem as the fused kernels take it.
  kernels::AttentionProblem problem(bool causal, double scale) const { return {B, L, S, E, Ev, causal, static_cast<float>(scale)}; }
};

/// Query rows [r0, r0 + rows) and the keys [0, keys) they meet.
struct QueryBlock {
  int64_t r0, rows, keys;
};

/// The blocks of both CPU paths (the fused kernel walks the same ones, trimming each to the
/// strips of its tile: computed_areas).
std::vector<QueryBlock> query_blocks(const AttentionShape& s, bool causal) {
  if (!causal) return {{0, s.L, s.S}};
  std::vector<QueryBlock> blocks;
  for (int64_t r0 = 0; r0 < s.L; r0 += kBlockRows) {
    const int64_t rows = std::min(kBlockRows, s.L - r0);
    blocks.push_back({r0, rows, kernels::attention_block_keys(s.S, r0, rows, causal)});
  }
  return blocks;
}

/// Whether the AVX512_BF16 kernel runs here: a CPU with the instructions and the avx512 kernel
/// set in use (a forced narrower set tests the other path).
bool bf16_kernel_available() {
  // The CPU first: nothing of attention_bf16.cpp, compiled for x86-64-v4, runs on a CPU without it.
  static const bool available =
      machine::cpu_info().avx512_bf16 && kernels::cpu_kernel_set() == "avx512" && kernels::attention_bf16_built();
  return available;
}

/// Whether the float32 kernel runs here: the avx512 kernel set in use.
bool f32_kernel_available() {
  static const bool available = kernels::cpu_kernel_set() == "avx512" && kernels::attention_f32_built();
  return available;
}

/// The problem for the float32 kernel when it runs it: float32, here.
std::optional<kernels::AttentionProblem> f32_kernel_problem(const AttentionShape& s, Dtype dt, bool causal, double scale) {
  if (dt != kFloat32 || !f32_kernel_available()) return std::nullopt;
  return s.problem(causal, scale);
}

/// The problem for that kernel when it runs it: bfloat16, here, even E and Ev.
std::optional<kernels::AttentionProblem> bf16_kernel_problem(const AttentionShape& s, Dtype dt, bool causal, double scale) {
  const kernels::AttentionProblem p = s.problem(causal, scale);
  if (dt != kBFloat16 || !bf16_kernel_available() || !kernels::attention_bf16_fits(p)) return std::nullopt;
  return p;
}

/// Score entries the products compute, over all B matrices, so that the FLOPs the cost declares
/// are the FLOPs run: `scores` for q kᵀ, P v, dP and dq, `key_strips` for dk and dv. The blocked
/// products cover whole blocks in all six; the fused kernel, where it runs, only the strips of
/// its tile that the mask leaves anything in (kernels::attention_bf16_areas).
kernels::AttentionAreas computed_areas(const Tensor& q, const AttentionShape& s, bool causal, double scale) {
  // The GPU runs the composed products over every score, masked or not (docs/cuda.md).
  if (q.is_cuda()) return {s.B * s.L * s.S, s.B * s.L * s.S};
  if (bf16_kernel_problem(s, q.dtype(), causal, scale)) {
    const kernels::AttentionAreas per_matrix = kernels::attention_bf16_areas(s.L, s.S, causal);
    return {s.B * per_matrix.scores, s.B * per_matrix.key_strips};
  }
  int64_t area = 0;
  for (const QueryBlock& b : query_blocks(s, causal)) area += b.rows * b.keys;
  return {s.B * area, s.B * area};
}

/// The probabilities as the composed ops make them: the GPU's path, and sizes with nothing to block.
Tensor composed_probabilities(const Tensor& q, const Tensor& k, bool causal, double scale) {
  return attention_softmax(matmul(q, k.transpose(-2, -1)), scale, causal);
}

/// dq, dk and dv by the composed rule, in ops: the GPU's path, sizes with nothing to block, and,
/// when backward records (create_graph), what gradients of gradients differentiate (Note
/// [Higher-order gradients] in autograd/engine.h).
std::array<Tensor, 3> composed_gradients(const Tensor& grad, const Tensor& q, const Tensor& k, const Tensor& v, bool causal, double scale) {
  const Tensor p = composed_probabilities(q, k, causal, scale);
  const Tensor ds = ops::detail::softmax_backward(matmul(grad, v.transpose(-2, -1)), p, -1, scale);
  return {matmul(ds, k), matmul(ds.transpose(-2, -1), q), matmul(p.transpose(-2, -1), grad)};
}

/// Contiguous elements of one dtype: a call's scratch.
struct Elements {
  char* base;
  int64_t size;
  /// The address of element i.
  char* at(int64_t i) const { return base + i * size; }
  void* data() const { return base; }
};

/// Scratch for one call's intermediates, in buffers the calling thread keeps between calls (as
/// matmul's packing buffers: a training loop asks for the same sizes each step, so after the
/// first no call allocates or faults fresh pages in). They are off the allocator's books: they
/// live only inside the op, where the meta device, which runs no kernel, could not count them.
/// `slot` tells a call's buffers apart.
Elements scratch(int slot, int64_t count, int64_t element_size) {
  thread_local std::vector<char> buffers[7];
  std::vector<char>& b = buffers[slot];
  const auto bytes = static_cast<size_t>(count * element_size);
  if (b.size() < bytes) b.resize(bytes);
  return {b.data(), element_size};
}

/// Where a tensor's B matrices [..., rows, n] lie, its batch dims folded into at most two
/// levels: matrix b starts (b / inner)·outer + (b % inner)·inner_stride elements from data, its
/// rows `row` apart, each row's elements contiguous. A heads view, [b, h, T, E] over [b, T, h, E]
/// memory (scaled_dot_product_attention_packed's), is two levels, outer b and inner h;
/// contiguous matrices are one, inner B. Both paths read and write operands where they lie.
struct Matrices {
  char* data;
  int64_t element_size, outer, inner, inner_stride, row;
  char* matrix(int64_t b) const { return data + ((b / inner) * outer + (b % inner) * inner_stride) * element_size; }
  char* row_of(int64_t b, int64_t r) const { return matrix(b) + r * row * element_size; }
  /// Rows from r0 of every matrix as one batched matmul operand, or their transposes: for
  /// matrices at one batch stride (inner B, one_batch_stride).
  kernels::MatrixRef ref(int64_t r0, bool transposed = false) const {
    return {row_of(0, r0), inner_stride, transposed ? 1 : row, transposed ? row : 1};
  }
  kernels::Matrices halves() const { return {reinterpret_cast<uint16_t*>(data), outer, inner, inner_stride, row}; }
  kernels::MatricesOf<float> floats() const { return {reinterpret_cast<float*>(data), outer, inner, inner_stride, row}; }
};

/// t's matrices as they lie, where its rows are contiguous and its batch dims fold into two
/// levels (written ones also must not overlap); nullopt otherwise.
std::optional<Matrices> matrices_of(const Tensor& t, bool written) {
  int64_t sizes[2], strides[2], levels = 0;
  for (int64_t d = 0; d + 2 < t.dim(); ++d) {
    if (t.size(d) == 1) continue;
    if (levels > 0 && strides[levels - 1] == t.stride(d) * t.size(d)) {  // folds into the dim before
      sizes[levels - 1] *= t.size(d);
      strides[levels - 1] = t.stride(d);
    } else if (levels == 2 || (written && t.stride(d) == 0)) {
      return std::nullopt;
    } else {
      sizes[levels] = t.size(d);
      strides[levels++] = t.stride(d);
    }
  }
  if (t.stride(-1) != 1 && t.size(-1) > 1) return std::nullopt;
  Matrices m{static_cast<char*>(t.data_ptr()), t.element_size(), 0, 1, 0, t.stride(-2)};
  if (levels == 2) m.outer = strides[0];
  if (levels > 0) {
    m.inner = sizes[levels - 1];
    m.inner_stride = strides[levels - 1];
  }
  return m;
}

/// An input's matrices where they lie if matrices_of describes them, else a contiguous copy's,
/// which `staged` keeps alive for the call.
Matrices input(const Tensor& t, Tensor& staged) {
  if (const auto m = matrices_of(t, false)) return *m;
  staged = t.contiguous();
  return *matrices_of(staged, false);
}

/// An output's matrices: the ops write only into what they allocate, or views of it (a heads
/// view of the packed form's output, pieces of the backward's flat buffer), which matrices_of
/// always describes.
Matrices output(const Tensor& t) {
  const auto m = matrices_of(t, true);
  TALLY_INTERNAL_ASSERT(m.has_value(), "scaled_dot_product_attention: an output of strides ", t.strides(), " it cannot write in place");
  return *m;
}

/// m's B matrices [rows, n] where one matmul call reaches them all: as they lie if one batch
/// stride does, else (a heads view, two levels) copied into scratch `slot`, contiguous. A matmul
/// call per run of heads would be many small products: at a GPT's sizes in float32, about 1.5
/// times the time of one copy and one call.
Matrices one_batch_stride(const Matrices& m, int64_t B, int64_t rows, int64_t n, int slot) {
  if (m.inner == B) return m;
  const Elements dense = scratch(slot, B * rows * n, m.element_size);
  const auto bytes = static_cast<size_t>(n * m.element_size);
#pragma omp parallel for schedule(static) if (B * rows * n > (1 << 15))
  for (int64_t b = 0; b < B; ++b)
    for (int64_t r = 0; r < rows; ++r) std::memcpy(dense.at((b * rows + r) * n), m.row_of(b, r), bytes);
  return {dense.base, m.element_size, 0, B, rows * n, n};
}

/// A block's [B, rows, n] result into rows [r0, r0 + rows) of `dst`'s matrices.
void copy_block(Elements block, const Matrices& dst, int64_t B, int64_t r0, int64_t rows, int64_t n) {
  const auto bytes = static_cast<size_t>(n * block.size);
#pragma omp parallel for schedule(static) if (B * rows * n > (1 << 15))
  for (int64_t b = 0; b < B; ++b)
    for (int64_t r = 0; r < rows; ++r) std::memcpy(dst.row_of(b, r0 + r), block.at((b * rows + r) * n), bytes);
}

/// The forward's blocked products, from and into matrices where they lie.
void forward_blocked(Dtype dt, const AttentionShape& s, bool causal, double scale, const Matrices& q_in, const Matrices& k_in,
                     const Matrices& v_in, const Matrices& out) {
  const Matrices q = one_batch_stride(q_in, s.B, s.L, s.E, 3), k = one_batch_stride(k_in, s.B, s.S, s.E, 4),
                 v = one_batch_stride(v_in, s.B, s.S, s.Ev, 5);
  const std::vector<QueryBlock> blocks = query_blocks(s, causal);
  const int64_t max_rows = blocks.front().rows, es = q.element_size;
  const Elements scores = scratch(0, s.B * max_rows * blocks.back().keys, es), o = scratch(1, s.B * max_rows * s.Ev, es);
  for (const QueryBlock& blk : blocks) {
    const int64_t area = blk.rows * blk.keys;
    kernels::matmul(dt, s.B, blk.rows, blk.keys, s.E, q.ref(blk.r0), k.ref(0, true), scores.data());
    ops::detail::attention_probs_rows(dt, scores.data(), {blk.keys}, scores.data(), {blk.keys}, s.B * blk.rows, blk.keys,
                                      causal ? blk.rows : 0, blk.r0, scale);
    kernels::matmul(dt, s.B, blk.rows, s.Ev, blk.keys, {scores.data(), area, blk.keys, 1}, v.ref(0), o.data());
    copy_block(o, out, s.B, blk.r0, blk.rows, s.Ev);
  }
}

/// The output's sizes, [..., L, Ev].
DimVector output_sizes(const Tensor& q, const Tensor& v) {
  DimVector sizes(q.sizes());
  sizes.back() = v.size(-1);
  return sizes;
}

/// dq, dk and dv as views of the backward's flat buffer, in that order.
std::array<Tensor, 3> gradient_views(const Tensor& flat, const Tensor& q, const Tensor& k, const Tensor& v) {
  const int64_t nq = q.numel(), nk = k.numel();
  return {flat.narrow(0, 0, nq).view(q.sizes()), flat.narrow(0, nq, nk).view(k.sizes()), flat.narrow(0, nq + nk, v.numel()).view(v.sizes())};
}

}  // namespace

void check_attention(const Tensor& q, const Tensor& k, const Tensor& v, double scale) {
  TALLY_CHECK(q.dim() >= 2 && k.dim() == q.dim() && v.dim() == q.dim(),
              "scaled_dot_product_attention: query, key and value must be [..., L, E], [..., S, E] and [..., S, Ev] of one rank, ",
              "got query ", q.sizes(), ", key ", k.sizes(), " and value ", v.sizes());
  TALLY_CHECK(q.sizes().slice(0, q.dim() - 2) == k.sizes().slice(0, k.dim() - 2) &&
                  q.sizes().slice(0, q.dim() - 2) == v.sizes().slice(0, v.dim() - 2),
              "scaled_dot_product_attention: query, key and value must have the same batch dims, got query ", q.sizes(), ", key ",
              k.sizes(), " and value ", v.sizes());
  TALLY_CHECK(q.size(-1) == k.size(-1) && k.size(-2) == v.size(-2), "scaled_dot_product_attention: query ", q.sizes(), " and key ",
              k.sizes(), " must share E (the last dim), key and value ", v.sizes(), " S (the second last)");
  TALLY_CHECK_TYPE_ERROR(q.dtype() == k.dtype() && q.dtype() == v.dtype(), "scaled_dot_product_attention: Expected query, key, and value ",
                         "to have the same dtype, but got query.dtype: ", dtype_name(q.dtype()), " key.dtype: ", dtype_name(k.dtype()),
                         " and value.dtype: ", dtype_name(v.dtype()), " instead.");
  TALLY_CHECK_TYPE_ERROR(q.is_floating_point() && !is_float8(q.dtype()), "scaled_dot_product_attention: not implemented for '",
                         dtype_name(q.dtype()), "'");
  TALLY_CHECK(scale > 0 && std::isfinite(scale), "scaled_dot_product_attention: the scale must be positive and finite, got ", scale);
}

namespace {

/// The backward's blocked products, from and into matrices where they lie.
void backward_blocked(Dtype dt, const AttentionShape& s, bool causal, double scale, const Matrices& q_in, const Matrices& k_in,
                      const Matrices& v_in, const Matrices& go_in, const Matrices& dq, const Matrices& dk, const Matrices& dv) {
  const Matrices q = one_batch_stride(q_in, s.B, s.L, s.E, 3), k = one_batch_stride(k_in, s.B, s.S, s.E, 4),
                 v = one_batch_stride(v_in, s.B, s.S, s.Ev, 5), go = one_batch_stride(go_in, s.B, s.L, s.Ev, 6);
  const std::vector<QueryBlock> blocks = query_blocks(s, causal);
  const int64_t LS = s.L * s.S;
  // Under a causal mask no query sees the keys from L on; their gradients are 0.
  const int64_t seen = causal ? std::min(s.S, s.L) : s.S, key_block = causal ? kBlockRows : s.S;
  // P and dS for every row, kept for this call only: the blocks of keys read them by columns.
  // Entries right of a block's keys are never written nor read.
  const int64_t es = q.element_size, widest = std::max(s.E, s.Ev);
  const int64_t block_elements =
      s.B * std::max(blocks.front().rows * std::max(blocks.back().keys, widest), std::min(key_block, seen) * widest);
  const Elements p = scratch(0, s.B * LS, es), ds = scratch(1, s.B * LS, es), block = scratch(2, block_elements, es);
  for (const QueryBlock& blk : blocks) {
    const RowLayout dense{blk.keys}, in_full{s.S, blk.rows, LS};
    const int64_t rows = s.B * blk.rows;
    // P: the scores again, then softmax into P's rows.
    kernels::matmul(dt, s.B, blk.rows, blk.keys, s.E, q.ref(blk.r0), k.ref(0, true), block.data());
    ops::detail::attention_probs_rows(dt, block.data(), dense, p.at(blk.r0 * s.S), in_full, rows, blk.keys, causal ? blk.rows : 0,
                                      blk.r0, scale);
    // dP = dO vᵀ, then dS = scale·P·(dP − Σ dP·P) into dS's rows.
    kernels::matmul(dt, s.B, blk.rows, blk.keys, s.Ev, go.ref(blk.r0), v.ref(0, true), block.data());
    ops::detail::softmax_backward_rows(dt, block.data(), dense, p.at(blk.r0 * s.S), in_full, ds.at(blk.r0 * s.S), in_full, rows,
                                       blk.keys, scale);
    // dq = dS k over the keys the block sees.
    kernels::matmul(dt, s.B, blk.rows, s.E, blk.keys, {ds.at(blk.r0 * s.S), LS, s.S, 1}, k.ref(0), block.data());
    copy_block(block, dq, s.B, blk.r0, blk.rows, s.E);
  }
  // dk and dv by blocks of keys: keys [c0, c0 + n) meet the query rows from `first` on (under a
  // causal mask, the rows at or below them, whose blocks' P and dS cover these keys).
  for (int64_t c0 = 0; c0 < seen; c0 += key_block) {
    const int64_t n = std::min(key_block, seen - c0), first = causal ? c0 : 0, m = s.L - first;
    for (auto [grad_of, a, from, width] : {std::tuple{&dv, p, &go, s.Ev}, std::tuple{&dk, ds, &q, s.E}}) {
      // (P or dS)[:, first:, c0:c0+n]ᵀ (dO or q)[:, first:]
      kernels::matmul(dt, s.B, n, width, m, {a.at(first * s.S + c0), LS, 1, s.S}, from->ref(first), block.data());
      copy_block(block, *grad_of, s.B, c0, n, width);
    }
  }
  for (auto [grad_of, width] : {std::pair{&dk, s.E}, std::pair{&dv, s.Ev}})
    for (int64_t b = 0; b < s.B; ++b)
      for (int64_t r = seen; r < s.S; ++r) std::memset(grad_of->row_of(b, r), 0, static_cast<size_t>(width * es));
}

/// dq, dk and dv (written where they lie) from the output's gradient and the inputs.
void backward_into(const Tensor& dq, const Tensor& dk, const Tensor& dv, const Tensor& grad, const Tensor& query, const Tensor& key,
                   const Tensor& value, bool causal, double scale) {
  const AttentionShape s(query, key, value);
  if (dq.is_cuda() || s.L == 0 || s.S == 0 || s.E == 0) {
    const auto composed = composed_gradients(grad, query, key, value, causal, scale);
    dq.copy_(composed[0]);
    dk.copy_(composed[1]);
    dv.copy_(composed[2]);
    return;
  }
  Tensor staged[4];
  const Matrices mq = input(query, staged[0]), mk = input(key, staged[1]), mv = input(value, staged[2]), mgo = input(grad, staged[3]),
                 mdq = output(dq), mdk = output(dk), mdv = output(dv);
  if (const auto p = bf16_kernel_problem(s, dq.dtype(), causal, scale))
    kernels::attention_bf16_backward(*p, mq.halves(), mk.halves(), mv.halves(), mgo.halves(), mdq.halves(), mdk.halves(), mdv.halves());
  else if (const auto p32 = f32_kernel_problem(s, dq.dtype(), causal, scale))
    kernels::attention_f32_backward(*p32, mq.floats(), mk.floats(), mv.floats(), mgo.floats(), mdq.floats(), mdk.floats(), mdv.floats());
  else
    backward_blocked(dq.dtype(), s, causal, scale, mq, mk, mv, mgo, mdq, mdk, mdv);
}

/// The backward's cost: the scores' product and softmax again, dP's product, softmax's backward,
/// and the three gradient products. The bytes are the inputs and the gradients: the fused kernel
/// keeps P and dS in cache (the blocked products on other paths write them once and read them
/// back).
ops::Cost backward_cost(const Tensor& out, const Tensor& grad, const Tensor& q, const Tensor& k, const Tensor& v, bool causal,
                        double scale) {
  const AttentionShape s(q, k, v);
  const auto [area, key_area] = computed_areas(q, s, causal, scale);
  // q kᵀ again, dP = dout vᵀ and dq = dS k over the scores; dk = dSᵀ q and dv = Pᵀ dout over the key strips.
  const int64_t flops = 2 * area * (2 * s.E + s.Ev) + 2 * key_area * (s.E + s.Ev) + ops::detail::softmax_flops_per_element(scale) * area +
                        ops::detail::softmax_backward_flops_per_element(scale) * area;
  return {flops, ops::bytes_held(grad) + ops::bytes_held(q) + ops::bytes_held(k) + ops::bytes_held(v), out.nbytes()};
}

/// Attention's gradients dq, dk and dv, flattened one after another into one 1-D output.
struct AttentionBackward {
  static constexpr std::string_view name = "scaled_dot_product_attention_backward";
  static constexpr bool supports_cuda = true;
  static ops::OutputSpec meta(const Tensor& grad, const Tensor& q, const Tensor& k, const Tensor& v, bool, double scale) {
    check_attention(q, k, v, scale);
    const DimVector expected = output_sizes(q, v);
    TALLY_CHECK(grad.sizes() == IntArrayRef(expected) && grad.dtype() == q.dtype(), "scaled_dot_product_attention_backward: gradient ",
                grad.sizes(), " ", dtype_name(grad.dtype()), " for an output ", IntArrayRef(expected), " ", dtype_name(q.dtype()));
    return {{q.numel() + k.numel() + v.numel()}, q.dtype()};
  }
  static void compute(const Tensor& out, const Tensor& grad, const Tensor& q, const Tensor& k, const Tensor& v, bool causal,
                      double scale) {
    const auto [dq, dk, dv] = gradient_views(out, q, k, v);
    backward_into(dq, dk, dv, grad, q, k, v, causal, scale);
  }
  static ops::Cost cost(const Tensor& out, const Tensor& grad, const Tensor& q, const Tensor& k, const Tensor& v, bool causal,
                        double scale) {
    return backward_cost(out, grad, q, k, v, causal, scale);
  }
};

struct Attention {
  static constexpr std::string_view name = "scaled_dot_product_attention";
  static constexpr bool supports_cuda = true;
  static ops::OutputSpec meta(const Tensor& q, const Tensor& k, const Tensor& v, bool, double scale) {
    check_attention(q, k, v, scale);
    return {output_sizes(q, v), q.dtype()};
  }
  static void compute(const Tensor& out, const Tensor& query, const Tensor& key, const Tensor& value, bool causal, double scale) {
    const AttentionShape s(query, key, value);
    if (out.numel() == 0) return;
    // No keys: an empty sum; no features: uniform probabilities over the values.
    if (out.is_cuda() || s.S == 0 || s.E == 0) {
      Tensor(out).copy_(matmul(composed_probabilities(query, key, causal, scale), value));
      return;
    }
    Tensor staged[3];
    const Matrices q = input(query, staged[0]), k = input(key, staged[1]), v = input(value, staged[2]), o = output(out);
    if (const auto p = bf16_kernel_problem(s, out.dtype(), causal, scale))
      kernels::attention_bf16_forward(*p, q.halves(), k.halves(), v.halves(), o.halves());
    else if (const auto p32 = f32_kernel_problem(s, out.dtype(), causal, scale))
      kernels::attention_f32_forward(*p32, q.floats(), k.floats(), v.floats(), o.floats());
    else
      forward_blocked(out.dtype(), s, causal, scale, q, k, v, o);
  }
  // The two products over the scores the blocks compute, and softmax on each of them.
  static ops::Cost cost(const Tensor& out, const Tensor& q, const Tensor& k, const Tensor& v, bool causal, double scale) {
    const AttentionShape s(q, k, v);
    const int64_t area = computed_areas(q, s, causal, scale).scores;
    return {2 * area * (s.E + s.Ev) + ops::detail::softmax_flops_per_element(scale) * area, ops::bytes_held(q) + ops::bytes_held(k) + ops::bytes_held(v),
            out.nbytes()};
  }
  // The inputs only: the probabilities are recomputed.
  static ops::SavedTensors saved(const SmallVector<bool, 4>&) { return {{true, true, true}, false}; }
  static TensorList backward(const ops::BackwardContext& c, const Tensor& q, const Tensor& k, const Tensor& v, bool causal, double scale) {
    // One op writes all three gradients, one after another in one buffer; a recording backward
    // composes them instead.
    const auto grads = GradMode::is_enabled()
                           ? composed_gradients(c.grad.to(q.dtype()), q, k, v, causal, scale)
                           : gradient_views(ops::apply<AttentionBackward>(c.grad.to(q.dtype()), q, k, v, causal, scale), q, k, v);
    TensorList out(3);
    for (size_t i = 0; i < 3; ++i)
      if (c.needs_grad(i)) out[i] = grads[i];
    return out;
  }
};

/// Head i of qkv [..., T, 3, h, E] (flash-attention's qkvpacked layout) as [..., h, T, E], a view.
Tensor head(const Tensor& qkv, int64_t i) { return qkv.select(-3, i).transpose(-3, -2); }

void check_packed(const Tensor& qkv) {
  TALLY_CHECK(qkv.dim() >= 4 && qkv.size(-3) == 3, "scaled_dot_product_attention_packed: expected qkv of shape [..., T, 3, h, E] ",
              "(query, key and value stacked per position), got ", qkv.sizes());
}

/// qkv's output (and its gradient's) sizes, [..., T, h, E].
DimVector packed_output_sizes(const Tensor& qkv) {
  DimVector sizes(qkv.sizes());
  sizes.erase(sizes.end() - 3);
  return sizes;
}

struct AttentionPackedBackward;

/// Attention on query, key and value stacked per position, qkv [..., T, 3, h, E], as a projection
/// to 3·h·E features lays them out, to out [..., T, h, E], which is [..., T, h·E] as a view: the
/// same op on the heads, read and written where they lie (no permuted copies), whose gradient
/// is one tensor laid out as qkv. Three inputs cut from one projection would each get a
/// zero-filled gradient of the whole projection, to be added up.
struct AttentionPacked {
  static constexpr std::string_view name = Attention::name;
  static constexpr bool supports_cuda = true;
  static ops::OutputSpec meta(const Tensor& qkv, bool causal, double scale) {
    check_packed(qkv);
    Attention::meta(head(qkv, 0), head(qkv, 1), head(qkv, 2), causal, scale);
    return {packed_output_sizes(qkv), qkv.dtype()};
  }
  static void compute(const Tensor& out, const Tensor& qkv, bool causal, double scale) {
    Attention::compute(out.transpose(-3, -2), head(qkv, 0), head(qkv, 1), head(qkv, 2), causal, scale);
  }
  static ops::Cost cost(const Tensor& out, const Tensor& qkv, bool causal, double scale) {
    return Attention::cost(out, head(qkv, 0), head(qkv, 1), head(qkv, 2), causal, scale);
  }
  static ops::SavedTensors saved(const SmallVector<bool, 4>&) { return {{true}, false}; }
  static TensorList backward(const ops::BackwardContext& c, const Tensor& qkv, bool causal, double scale) {
    if (GradMode::is_enabled()) {  // a recording backward: the composed gradients, stacked as qkv is
      const auto g = composed_gradients(c.grad.to(qkv.dtype()).transpose(-3, -2), head(qkv, 0), head(qkv, 1), head(qkv, 2), causal, scale);
      return {stack({g[0].transpose(-3, -2), g[1].transpose(-3, -2), g[2].transpose(-3, -2)}, -3)};
    }
    return {ops::apply<AttentionPackedBackward>(c.grad.to(qkv.dtype()), qkv, causal, scale)};
  }
};

/// The gradient of qkv [..., T, 3, h, E] from the output's [..., T, h, E].
struct AttentionPackedBackward {
  static constexpr std::string_view name = AttentionBackward::name;
  static constexpr bool supports_cuda = true;
  static ops::OutputSpec meta(const Tensor& grad, const Tensor& qkv, bool causal, double scale) {
    check_packed(qkv);
    TALLY_CHECK(grad.dim() == qkv.dim() - 1, "scaled_dot_product_attention_backward: gradient ", grad.sizes(), " for an output ",
                IntArrayRef(packed_output_sizes(qkv)));
    AttentionBackward::meta(grad.transpose(-3, -2), head(qkv, 0), head(qkv, 1), head(qkv, 2), causal, scale);
    return {DimVector(qkv.sizes()), qkv.dtype()};
  }
  static void compute(const Tensor& out, const Tensor& grad, const Tensor& qkv, bool causal, double scale) {
    backward_into(head(out, 0), head(out, 1), head(out, 2), grad.transpose(-3, -2), head(qkv, 0), head(qkv, 1), head(qkv, 2), causal,
                  scale);
  }
  static ops::Cost cost(const Tensor& out, const Tensor& grad, const Tensor& qkv, bool causal, double scale) {
    return backward_cost(out, grad, head(qkv, 0), head(qkv, 1), head(qkv, 2), causal, scale);
  }
};

}  // namespace

double attention_scale(const Tensor& query, std::optional<double> scale) {
  return scale.value_or(query.dim() >= 1 && query.size(-1) > 0 ? 1.0 / std::sqrt(static_cast<double>(query.size(-1))) : 1.0);
}

Tensor scaled_dot_product_attention(const Tensor& query, const Tensor& key, const Tensor& value, bool is_causal,
                                    std::optional<double> scale) {
  return ops::apply<Attention>(query, key, value, is_causal, attention_scale(query, scale));
}

Tensor scaled_dot_product_attention_packed(const Tensor& qkv, bool is_causal, std::optional<double> scale) {
  return ops::apply<AttentionPacked>(qkv, is_causal, attention_scale(qkv, scale));
}

std::vector<std::pair<std::string, std::string>> attention_paths() {
  const std::string blocked =
      fmt::format("batched products on the matmul paths, blocks of {} query rows, rounded as the composed ops", kBlockRows);
  return {{"bfloat16", bf16_kernel_available()
                           ? "fused AVX512_BF16 kernel (vdpbf16ps) for even head sizes: scores in registers and L2, never in memory; "
                             "under a causal mask only the strips of 6 rows the mask leaves anything in"
                           : fmt::format("{} (the fused kernel needs AVX512_BF16 and the avx512 kernel set)", blocked)},
          {"float32", f32_kernel_available()
                          ? fmt::format("fused AVX-512 kernel (FMA): scores in registers and L2, never in memory; under a causal mask "
                                        "whole blocks of {} rows, as the batched products",
                                        kBlockRows)
                          : fmt::format("{} (the fused kernel needs the avx512 kernel set)", blocked)},
          {"other dtypes", blocked}};
}

}  // namespace tally
