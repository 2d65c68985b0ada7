// flip as one op (a copy whose source walks backwards along the flipped dims); roll, repeat and
// repeat_interleave composed of views, cat and reshape's copy, each costed by what it is made of.

#include "tally/ops/reorder.h"

#include <cstring>
#include <vector>

#include "tally/ops/apply.h"
#include "tally/ops/join.h"

namespace tally {

namespace {

/// `dims` wrapped into [0, rank) as flags, each named once (PyTorch's message otherwise).
std::vector<bool> flipped_dims(const Tensor& x, IntArrayRef dims) {
  std::vector<bool> flipped(static_cast<size_t>(x.dim()), false);
  for (int64_t d : dims) {
    const int64_t w = maybe_wrap_dim(d, x.dim());
    TALLY_CHECK(x.dim() == 0 || !flipped[static_cast<size_t>(w)], "dim ", w, " appears multiple times in the list of dims ", dims);
    if (x.dim() > 0) flipped[static_cast<size_t>(w)] = true;
  }
  return flipped;
}

/// The bytes of `count` elements of `size` bytes from src, in reverse element order, to dst.
void reverse_elements(char* dst, const char* src, int64_t count, int64_t size) {
  for (int64_t i = 0; i < count; ++i) std::memcpy(dst + i * size, src + (count - 1 - i) * size, static_cast<size_t>(size));
}

struct Flip {
  static constexpr std::string_view name = "flip";
  static constexpr bool supports_cuda = false;  // no GPU kernel yet: refused with the device named
  static ops::OutputSpec meta(const Tensor& x, IntArrayRef dims) {
    flipped_dims(x, dims);
    return {DimVector(x.sizes()), x.dtype()};
  }
  // out is contiguous. The dims after the last flipped one are copied as whole blocks; each
  // position of the dims up to it reads its block from the mirrored position of a contiguous x.
  static void compute(const Tensor& out, const Tensor& x, IntArrayRef dims) {
    if (out.numel() == 0) return;
    const std::vector<bool> flipped = flipped_dims(x, dims);
    const Tensor src = x.contiguous();
    int64_t last = -1;
    for (int64_t d = 0; d < x.dim(); ++d)
      if (flipped[static_cast<size_t>(d)]) last = d;
    if (last < 0) {
      Tensor(out).copy_(src);
      return;
    }
    const int64_t size = x.element_size();
    int64_t block = size;  // bytes of the dims after `last`
    for (int64_t d = last + 1; d < x.dim(); ++d) block *= x.size(d);
    int64_t outer = 1;  // positions of the dims before `last`
    for (int64_t d = 0; d < last; ++d) outer *= x.size(d);
    const int64_t n = x.size(last);
    const char* s = static_cast<const char*>(src.data_ptr());
    char* o = static_cast<char*>(out.data_ptr());
    // Work items: rows of `last` whose elements are reversed (block of one element), or the
    // blocks themselves, so that flipping dim 0 alone still splits over both threads.
    const bool by_rows = block == size;
    const int64_t items = by_rows ? outer : outer * n;
#pragma omp parallel for schedule(static) if (out.nbytes() >= (int64_t{1} << 18))
    for (int64_t item = 0; item < items; ++item) {
      const int64_t p = by_rows ? item : item / n, i = by_rows ? 0 : item % n;
      // p's source position: each flipped dim before `last` mirrored.
      int64_t rest = p, source = 0, scale = 1;
      for (int64_t d = last - 1; d >= 0; --d) {
        const int64_t k = rest % x.size(d);
        rest /= x.size(d);
        source += (flipped[static_cast<size_t>(d)] ? x.size(d) - 1 - k : k) * scale;
        scale *= x.size(d);
      }
      const char* from = s + source * n * block;
      char* to = o + p * n * block;
      if (by_rows)
        reverse_elements(to, from, n, size);
      else
        std::memcpy(to + i * block, from + (n - 1 - i) * block, static_cast<size_t>(block));
    }
  }
  static ops::Cost cost(const Tensor& out, const Tensor& x, IntArrayRef) { return {0, ops::bytes_held(x), out.nbytes()}; }
  static constexpr bool backward_reads_values = false;
  static TensorList backward(const ops::BackwardContext& c, const Tensor&, IntArrayRef dims) { return {flip(c.grad, dims)}; }
};

}  // namespace

Tensor flip(const Tensor& x, IntArrayRef dims) { return ops::apply<Flip>(x, dims); }

Tensor roll(const Tensor& x, IntArrayRef shifts, IntArrayRef dims) {
  TALLY_CHECK(!shifts.empty(), "`shifts` required");
  if (dims.empty()) {
    TALLY_CHECK(shifts.size() == 1, "shifts and dimensions must align. shifts: ", shifts.size(), ", dims: 0 (roll as if flattened ",
                "takes one shift)");
    return roll(x.flatten(), shifts, {0}).view(x.sizes());
  }
  TALLY_CHECK(shifts.size() == dims.size(), "shifts and dimensions must align. shifts: ", shifts.size(), ", dims: ", dims.size());
  Tensor out = x;
  for (size_t i = 0; i < dims.size(); ++i) {
    const int64_t d = maybe_wrap_dim(dims[i], x.dim());
    const int64_t n = x.dim() == 0 ? 1 : x.size(d);
    if (n == 0) continue;
    const int64_t s = ((shifts[i] % n) + n) % n;  // in [0, n): the last s slices come first
    if (s == 0) continue;
    out = cat({out.narrow(d, n - s, s), out.narrow(d, 0, n - s)}, d);
  }
  return out.is_same(x) ? x.clone() : out;  // a new tensor, as PyTorch's, whatever the shifts
}

Tensor repeat(const Tensor& x, IntArrayRef repeats) {
  const int64_t nd = static_cast<int64_t>(repeats.size());
  TALLY_CHECK(nd >= x.dim(), "Number of dimensions of repeat dims can not be smaller than number of dimensions of tensor: repeats ",
              repeats, " for a tensor of shape ", x.sizes());
  DimVector out_sizes;
  for (int64_t r : repeats)
    TALLY_CHECK(r >= 0, "Trying to create tensor with negative dimension ", r, ": repeats ", repeats, " for a tensor of shape ", x.sizes());
  for (int64_t i = 0; i < nd; ++i) {
    const int64_t size = i < nd - x.dim() ? 1 : x.size(i - (nd - x.dim()));
    out_sizes.push_back(repeats[static_cast<size_t>(i)] * size);
  }
  // x as [1, s0, 1, s1, ...] (a view: only size-1 dims are added), expanded to [r0, s0, r1, s1, ...],
  // copied and folded to [r0·s0, r1·s1, ...]: one copy on the ledger, and always a new tensor (a
  // reshape could be a view of x, with repeats of one or of a size-1 dim).
  Tensor t = x;
  while (t.dim() < nd) t = t.unsqueeze(0);
  DimVector expanded;
  for (int64_t i = 0; i < nd; ++i) {
    t = t.unsqueeze(2 * i);
    expanded.push_back(repeats[static_cast<size_t>(i)]);
    expanded.push_back(t.size(2 * i + 1));
  }
  return t.expand(expanded).clone(MemoryFormat::Contiguous).view(out_sizes);
}

Tensor repeat_interleave(const Tensor& x, int64_t repeats, std::optional<int64_t> dim) {
  TALLY_CHECK(repeats >= 0, "repeats can not be negative, got ", repeats);
  if (!dim) return repeat_interleave(x.flatten(), repeats, 0);
  const Tensor t = x.dim() == 0 ? x.view({1}) : x;
  const int64_t d = maybe_wrap_dim(*dim, t.dim());
  DimVector expanded(t.sizes()), out_sizes(t.sizes());
  expanded.insert(expanded.begin() + d + 1, repeats);
  out_sizes[static_cast<size_t>(d)] *= repeats;
  // Each slice along d gets a new dim after d, expanded to `repeats`, copied and folded in.
  return t.unsqueeze(d + 1).expand(expanded).clone(MemoryFormat::Contiguous).view(out_sizes);
}

Tensor Tensor::flip(IntArrayRef dims) const { return tally::flip(*this, dims); }
Tensor Tensor::roll(IntArrayRef shifts, IntArrayRef dims) const { return tally::roll(*this, shifts, dims); }
Tensor Tensor::repeat(IntArrayRef repeats) const { return tally::repeat(*this, repeats); }
Tensor Tensor::repeat_interleave(int64_t repeats, std::optional<int64_t> dim) const { return tally::repeat_interleave(*this, repeats, dim); }

}  // namespace tally
