// sort, argsort, topk and multinomial. Each ordering op computes indices; the values are a
// gather at those indices, so their gradient is gather's (scatter back to where each value came
// from) and no second rule is kept.
//
// Cost: a comparison sort of n elements makes about n·log2(n) comparisons, counted as FLOPs as
// argmax counts its comparisons; topk's partial sort about n·log2(k). multinomial counts one
// FLOP per weight (the running sum, or the division by an exponential draw).

#include "tally/ops/sort.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <numeric>
#include <vector>

#include <omp.h>

#include "tally/kernels/cpu/parallel.h"
#include "tally/ops/apply.h"
#include "tally/ops/creation.h"
#include "tally/ops/gather.h"

namespace tally {

namespace {

/// ⌈log2 n⌉ for n ≥ 1.
int64_t ceil_log2(int64_t n) { return n <= 1 ? 0 : static_cast<int64_t>(std::bit_width(static_cast<uint64_t>(n - 1))); }

/// The size of `dim` (a 0-d tensor is one slice of one element).
int64_t slice_length(const Tensor& x, int64_t dim) { return x.dim() == 0 ? 1 : x.size(dim); }

/// x's slices along `dim` as the rows of a contiguous [slices, n] tensor (a view when x is so already).
Tensor as_rows(const Tensor& x, int64_t dim) {
  if (x.dim() == 0) return x.reshape({1, 1});
  int64_t slices = 1;  // counted, not numel / n, which an empty dim would leave undefined
  for (int64_t d = 0; d < x.dim(); ++d)
    if (d != dim) slices *= x.size(d);
  return x.transpose(dim, -1).contiguous().reshape({slices, x.size(dim)});
}

/// Writes `rows` ([slices, m], contiguous, in as_rows' order) into `out` (x's shape with `dim` of size m).
void from_rows(const Tensor& out, const Tensor& rows, int64_t dim) {
  if (out.dim() == 0) {
    Tensor(out).copy_(rows.reshape({}));
    return;
  }
  DimVector moved(out.sizes());
  std::swap(moved[static_cast<size_t>(dim)], moved.back());
  Tensor(out).copy_(rows.view(moved).transpose(dim, -1));
}

/// "a comes before b" for the values of one slice: ascending or descending, NaN above every number.
template <class C>
struct Order {
  bool descending;
  bool operator()(C a, C b) const {
    if constexpr (std::is_floating_point_v<C>) {
      if (std::isnan(a) || std::isnan(b)) return descending ? std::isnan(a) && !std::isnan(b) : std::isnan(b) && !std::isnan(a);
    }
    return descending ? a > b : a < b;
  }
};

/// For each row of `rows` ([slices, n]), the first k of its indices in `order`, ties in index
/// order, into the matching row of `idx` ([slices, k], int64). One thread's scratch row each.
void ordered_indices(const Tensor& rows, const Tensor& idx, int64_t k, bool descending, std::string_view op) {
  const int64_t slices = rows.size(0), n = rows.size(1);
  if (slices == 0 || k == 0) return;
  const bool whole = k == n;  // a sort: each output row is its own scratch
  std::vector<int64_t> scratch(whole ? 0 : static_cast<size_t>(kernels::num_threads() * n));
  int64_t* const out = idx.data_ptr<int64_t>();
  dispatch(rows.dtype(), op, [&]<class T>() {
    using C = compute_t<T>;
    const T* const base = static_cast<const T*>(rows.data_ptr());
    const Order<C> before{descending};
    const int64_t grain = std::max<int64_t>(1, kernels::kElementwiseGrain / std::max<int64_t>(n, 1));
    kernels::parallel_for(slices, grain, [&](int64_t begin, int64_t end) {
      int64_t* order = whole ? nullptr : scratch.data() + static_cast<size_t>(omp_get_thread_num() * n);
      for (int64_t r = begin; r < end; ++r) {
        const T* v = base + r * n;
        auto comes_first = [&](int64_t a, int64_t b) { return before(static_cast<C>(v[a]), static_cast<C>(v[b])); };
        if (whole) {
          int64_t* o = out + r * n;
          std::iota(o, o + n, int64_t{0});
          std::stable_sort(o, o + n, comes_first);
        } else {
          std::iota(order, order + n, int64_t{0});
          std::partial_sort(order, order + k, order + n,
                            [&](int64_t a, int64_t b) { return comes_first(a, b) || (!comes_first(b, a) && a < b); });
          std::copy(order, order + k, out + r * k);
        }
      }
    });
  });
}

/// The first k indices of each slice of x along `dim` in the order, written into out (x's shape with `dim` of size k).
void indices_along(const Tensor& out, const Tensor& x, int64_t dim, int64_t k, bool descending, std::string_view op) {
  dim = maybe_wrap_dim(dim, x.dim());
  const Tensor rows = as_rows(x, dim);
  const Tensor idx = empty({rows.size(0), k}, TensorOptions(kInt64));
  ordered_indices(rows, idx, k, descending, op);
  from_rows(out, idx, dim);
}

struct Argsort {
  static constexpr std::string_view name = "argsort";
  static constexpr bool supports_cuda = false;  // no GPU kernel yet: refused with the device named
  static ops::OutputSpec meta(const Tensor& x, int64_t dim, bool) {
    check_arith(x.dtype(), name);
    maybe_wrap_dim(dim, x.dim());
    return {DimVector(x.sizes()), kInt64};
  }
  static void compute(const Tensor& out, const Tensor& x, int64_t dim, bool descending) {
    indices_along(out, x, dim, slice_length(x, maybe_wrap_dim(dim, x.dim())), descending, name);
  }
  static ops::Cost cost(const Tensor& out, const Tensor& x, int64_t dim, bool) {
    const int64_t n = slice_length(x, maybe_wrap_dim(dim, x.dim()));
    return {x.numel() * ceil_log2(n), ops::bytes_held(x), out.nbytes()};
  }
};

struct TopkIndices {
  static constexpr std::string_view name = "topk";
  static constexpr bool supports_cuda = false;
  static ops::OutputSpec meta(const Tensor& x, int64_t k, int64_t dim, bool) {
    TALLY_CHECK_TYPE_ERROR(x.dtype() != kBool, "\"topk_cpu\" not implemented for 'Bool'");
    check_arith(x.dtype(), name);
    dim = maybe_wrap_dim(dim, x.dim());
    TALLY_CHECK_INDEX(k >= 0 && k <= slice_length(x, dim), "selected index k out of range: k = ", k, " for dim ", dim,
                      " of size ", slice_length(x, dim), " (input of shape ", x.sizes(), ")");
    DimVector sizes(x.sizes());
    if (x.dim() > 0) sizes[static_cast<size_t>(dim)] = k;
    return {sizes, kInt64};
  }
  static void compute(const Tensor& out, const Tensor& x, int64_t k, int64_t dim, bool largest) {
    indices_along(out, x, dim, k, largest, name);
  }
  static ops::Cost cost(const Tensor& out, const Tensor& x, int64_t k, int64_t, bool) {
    return {x.numel() * std::max<int64_t>(ceil_log2(k), 1), ops::bytes_held(x), out.nbytes()};
  }
};

/// PyTorch's multinomial checks, in its order, with its messages.
void check_multinomial(const Tensor& probs, int64_t num_samples, bool replacement) {
  TALLY_CHECK(probs.dim() == 1 || probs.dim() == 2, "prob_dist must be 1 or 2 dim, got shape ", probs.sizes());
  TALLY_CHECK_TYPE_ERROR(is_floating_point(probs.dtype()) && !is_float8(probs.dtype()),
                         "multinomial only supports floating-point dtypes for input, got: ", dtype_name(probs.dtype()));
  TALLY_CHECK(num_samples > 0, "cannot sample n_sample <= 0 samples (num_samples = ", num_samples, ")");
  const int64_t n = probs.size(-1);
  TALLY_CHECK(replacement || num_samples <= n, "cannot sample n_sample > prob_dist.size(-1) samples without replacement: ",
              num_samples, " samples from ", n, " categories");
  TALLY_CHECK(n <= (int64_t{1} << 24), "number of categories cannot exceed 2^24, got ", n);
}

struct Multinomial {
  static constexpr std::string_view name = "multinomial";
  static constexpr bool supports_cuda = false;
  static ops::OutputSpec meta(const Tensor& probs, int64_t num_samples, bool replacement, Generator*) {
    check_multinomial(probs, num_samples, replacement);
    DimVector sizes(probs.sizes());
    sizes.back() = num_samples;
    return {sizes, kInt64};
  }
  static void compute(const Tensor& out, const Tensor& probs, int64_t num_samples, bool replacement, Generator* gen) {
    const int64_t n = probs.size(-1), rows = probs.dim() == 2 ? probs.size(0) : 1;
    const Tensor w = probs.to(kFloat64).contiguous();  // the weights in double: sums of many stay exact enough
    const double* wp = w.data_ptr<double>();
    int64_t* o = out.data_ptr<int64_t>();
    for (int64_t i = 0; i < w.numel(); ++i)
      TALLY_CHECK(std::isfinite(wp[i]) && wp[i] >= 0, "probability tensor contains either `inf`, `nan` or element < 0: element ", i,
                  " is ", wp[i]);
    Generator& g = gen ? *gen : default_generator();
    const uint64_t first = g.reserve(static_cast<uint64_t>(rows * (replacement ? num_samples : n)));
    std::vector<double> cdf(static_cast<size_t>(n));
    std::vector<int64_t> order(static_cast<size_t>(n));
    for (int64_t r = 0; r < rows; ++r) {
      const double* p = wp + r * n;
      const double total = std::accumulate(p, p + n, 0.0);
      TALLY_CHECK(total > 0, "invalid multinomial distribution (sum of probabilities <= 0) in row ", r);
      if (replacement) {
        // Inverse CDF: the first category whose running sum exceeds u·total. A category of
        // weight 0 adds nothing to the sum, so it is never the first to exceed it.
        std::partial_sum(p, p + n, cdf.begin());
        for (int64_t s = 0; s < num_samples; ++s) {
          const double u = g.uniform01(first + static_cast<uint64_t>(r * num_samples + s)) * total;
          const auto at = std::upper_bound(cdf.begin(), cdf.end(), u) - cdf.begin();
          o[r * num_samples + s] = std::min<int64_t>(at, n - 1);
        }
      } else {
        // Without replacement: the k largest of w_i / E_i, E_i ~ Exp(1), are distributed as k
        // draws one after another, each in proportion to the weights left (Efraimidis and
        // Spirakis' keys; PyTorch's CPU kernel uses the same). Weight 0 gives key 0: last.
        for (int64_t i = 0; i < n; ++i) {
          const double e = -std::log1p(-g.uniform01(first + static_cast<uint64_t>(r * n + i)));
          cdf[static_cast<size_t>(i)] = p[i] / e;
        }
        std::iota(order.begin(), order.end(), int64_t{0});
        std::partial_sort(order.begin(), order.begin() + num_samples, order.end(), [&](int64_t a, int64_t b) {
          const double ka = cdf[static_cast<size_t>(a)], kb = cdf[static_cast<size_t>(b)];
          return ka > kb || (ka == kb && a < b);
        });
        std::copy(order.begin(), order.begin() + num_samples, o + r * num_samples);
      }
    }
  }
  static ops::Cost cost(const Tensor& out, const Tensor& probs, int64_t, bool, Generator*) {
    return {probs.numel(), ops::bytes_held(probs), out.nbytes()};
  }
};

}  // namespace

Tensor argsort(const Tensor& x, int64_t dim, bool descending) { return ops::apply<Argsort>(x, dim, descending); }
Tensor argsort(const Tensor& x, bool, int64_t dim, bool descending) { return argsort(x, dim, descending); }

std::tuple<Tensor, Tensor> sort(const Tensor& x, int64_t dim, bool descending) {
  Tensor idx = argsort(x, dim, descending);
  return {gather(x, dim, idx), idx};
}
std::tuple<Tensor, Tensor> sort(const Tensor& x, std::optional<bool>, int64_t dim, bool descending) { return sort(x, dim, descending); }

std::tuple<Tensor, Tensor> topk(const Tensor& x, int64_t k, int64_t dim, bool largest, bool) {
  Tensor idx = ops::apply<TopkIndices>(x, k, dim, largest);
  return {gather(x, dim, idx), idx};
}

Tensor multinomial(const Tensor& probs, int64_t num_samples, bool replacement, Generator* gen) {
  return ops::apply<Multinomial>(probs, num_samples, replacement, gen);
}

std::tuple<Tensor, Tensor> Tensor::sort(int64_t dim, bool descending) const { return tally::sort(*this, dim, descending); }
Tensor Tensor::argsort(int64_t dim, bool descending) const { return tally::argsort(*this, dim, descending); }
std::tuple<Tensor, Tensor> Tensor::topk(int64_t k, int64_t dim, bool largest, bool sorted) const {
  return tally::topk(*this, k, dim, largest, sorted);
}
Tensor Tensor::multinomial(int64_t num_samples, bool replacement, Generator* gen) const {
  return tally::multinomial(*this, num_samples, replacement, gen);
}

}  // namespace tally
