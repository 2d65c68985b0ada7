#include "tally/ops/creation.h"

#include <cmath>

#include "tally/core/geometry.h"

namespace tally {

Tensor zeros(IntArrayRef sizes, TensorOptions options) { return full(sizes, 0, options.dtype(options.dtype_or(get_default_dtype()))); }
Tensor ones(IntArrayRef sizes, TensorOptions options) { return full(sizes, 1, options.dtype(options.dtype_or(get_default_dtype()))); }

namespace {
/// `t` with every element `value`, at version 0: a new tensor, not a user's in-place write.
Tensor filled(Tensor t, Scalar value) {
  t.fill_(value);
  t.storage()->reset_version();
  return t;
}
/// Options for a tensor like `t`: its dtype and device unless given.
TensorOptions like(const Tensor& t, TensorOptions options) {
  return options.dtype(options.dtype_or(t.dtype())).device(options.device_or(t.device()));
}
/// A factory whose values are computed element by element on the host (arange, eye, tensor,
/// scalar_tensor): `fill` writes them into a new CPU tensor, which moves to the device `options`
/// asks for. On the meta device there are no values, so nothing is computed.
template <class Fill>
Tensor made_on_host(IntArrayRef sizes, Dtype dtype, const TensorOptions& options, Fill fill) {
  const Device d = options.device_or();
  if (d.is_meta()) return empty(sizes, TensorOptions(dtype).device(d));
  Tensor t = empty(sizes, dtype);
  fill(t);
  if (d.is_cpu()) return t;
  Tensor moved = t.to(d);
  moved.storage()->reset_version();
  return moved;
}
}  // namespace

Tensor full(IntArrayRef sizes, Scalar value, TensorOptions options) {
  return filled(empty(sizes, options.dtype(options.dtype_or(value.natural_dtype()))), value);
}

Tensor empty_like(const Tensor& t, TensorOptions options, std::optional<MemoryFormat> memory_format) {
  return empty_strided(t.sizes(), strides_in_format(memory_format, t.sizes(), t.strides()), like(t, options));
}
Tensor zeros_like(const Tensor& t, TensorOptions options, std::optional<MemoryFormat> memory_format) {
  return full_like(t, 0, options, memory_format);
}
Tensor ones_like(const Tensor& t, TensorOptions options, std::optional<MemoryFormat> memory_format) {
  return full_like(t, 1, options, memory_format);
}
Tensor full_like(const Tensor& t, Scalar value, TensorOptions options, std::optional<MemoryFormat> memory_format) {
  return filled(empty_like(t, options, memory_format), value);
}

Tensor scalar_tensor(Scalar value, TensorOptions options) {
  // Written directly rather than through fill_: every `x * 2` wraps its number this way, and a
  // 1-element store is not work the ledger should list. (On the GPU `x * 2` keeps its number on
  // the host: a 0-d CPU tensor joins a CUDA op as a kernel argument, Note [Devices].)
  return made_on_host({}, options.dtype_or(value.natural_dtype()), options, [&](Tensor& t) {
    dispatch(t.dtype(), "scalar_tensor", [&]<class T>() { *static_cast<T*>(t.data_ptr()) = value.to<T>(); });
  });
}

Tensor wrapped_number(Scalar value, Dtype dtype, const Tensor& like) {
  return scalar_tensor(value, TensorOptions(dtype).device(like.device().is_meta() ? Device(kMeta) : Device(kCPU)));
}

Tensor arange(Scalar end, TensorOptions options) { return arange(0, end, 1, options); }

namespace {
__extension__ typedef __int128 int128;  // GCC's, which -Wpedantic accepts so marked
/// ⌈(e − s) / st⌉ for integers, in 128 bits: e − s + st − 1 passes int64's range near its ends.
int128 integer_count(int64_t s, int64_t e, int64_t st) { return (static_cast<int128>(e) - s + st + (st > 0 ? -1 : 1)) / st; }
/// An element count as int64, or PyTorch's error where it has none (arange(0, 1e20)).
int64_t checked_count(double count) {
  TALLY_CHECK(count >= 0 && count < 0x1p63, "arange: invalid size, possible overflow? (", count, " elements)");
  return static_cast<int64_t>(count);
}
}  // namespace

Tensor arange(Scalar start, Scalar end, Scalar step, TensorOptions options) {
  const bool floating = start.is_floating_point() || end.is_floating_point() || step.is_floating_point();
  const Dtype dt = options.dtype_or(floating ? get_default_dtype() : kInt64);
  TALLY_CHECK_TYPE_ERROR(dt != kBool, "\"arange_cpu\" not implemented for 'Bool'");
  int64_t n = 0;
  if (is_integral(dt)) {
    // As PyTorch: an integral dtype computes in int64, so start, end and step truncate first
    // (arange(0, 2.5, 0.5, kInt64) has step 0). The count comes from the truncated bounds for
    // int64 but from the bounds as given for int32 and uint8, as PyTorch's arange_out does:
    // arange(0., 5.5, 1.5) is [0, 1, 2, 3, 4] in int64 and [0, 1, 2, 3] in int32.
    for (const Scalar& bound : {start, end, step}) check_scalar_fits(bound, kInt64, "arange");  // 1e30 has no int64 value
    const int64_t s = start.to_long(), e = end.to_long(), st = step.to_long();
    TALLY_CHECK(st != 0, "arange: step must be nonzero (step ", step.to_double(), " truncated to ", dtype_name(dt), ")");
    TALLY_CHECK((st > 0 && e >= s) || (st < 0 && e <= s), "arange: upper bound and larger bound inconsistent with step sign");
    const double count = dt == kInt64 ? static_cast<double>(integer_count(s, e, st))
                                      : std::ceil((end.to_double() - start.to_double()) / step.to_double());
    n = checked_count(count);
  } else {
    const double s = start.to_double(), e = end.to_double(), st = step.to_double();
    TALLY_CHECK(st != 0, "arange: step must be nonzero");
    TALLY_CHECK(std::isfinite(s) && std::isfinite(e), "arange: unsupported range: ", s, " -> ", e);
    TALLY_CHECK((st > 0 && e >= s) || (st < 0 && e <= s), "arange: upper bound and larger bound inconsistent with step sign");
    n = checked_count(floating ? std::ceil((e - s) / st) : static_cast<double>(integer_count(start.to_long(), end.to_long(), step.to_long())));
  }
  return made_on_host({n}, dt, options, [&](Tensor& t) {
    dispatch(dt, "arange", [&]<class T>() {
      T* p = t.data_ptr<T>();
      const double s = start.to_double(), st = step.to_double();
      for (int64_t i = 0; i < n; ++i) {
        if constexpr (std::is_integral_v<T>) p[i] = static_cast<T>(start.to_long() + i * step.to_long());
        else p[i] = cast_to<T>(s + static_cast<double>(i) * st);
      }
    });
  });
}

namespace {
/// linspace's and logspace's values: `steps` points from start to end, each point i computed as
/// PyTorch's CPU kernel does, from the nearer end (start + step·i in the first half, end −
/// step·(steps−1−i) in the second), so that both ends are exact and the halves symmetric. Floating
/// dtypes compute in their own type, each operation rounded to it as c10's Half and BFloat16
/// operators round; integral ones truncate start and end, then step in double. `map<T>` turns
/// each point into the value stored (identity, or base^point).
template <class Map>
Tensor spaced(const char* name, Scalar start, Scalar end, int64_t steps, TensorOptions options, Map map) {
  TALLY_CHECK(steps >= 0, "number of steps must be non-negative");
  const Dtype dt = options.dtype_or(get_default_dtype());
  TALLY_CHECK_TYPE_ERROR(dt != kBool, "\"", name, "_cpu\" not implemented for 'Bool'");
  return made_on_host({steps}, dt, options, [&](Tensor& t) {
    dispatch(dt, name, [&]<class T>() {
      T* p = t.data_ptr<T>();
      const int64_t halfway = steps == 1 ? 1 : steps / 2;  // one point is start, as PyTorch's
      if constexpr (std::is_integral_v<T>) {
        const T s = static_cast<T>(start.to_long()), e = static_cast<T>(end.to_long());
        const double step = steps > 1 ? static_cast<double>(e - s) / static_cast<double>(steps - 1) : 0.0;
        for (int64_t i = 0; i < steps; ++i)
          p[i] = static_cast<T>(map.template operator()<T>(i < halfway ? s + step * static_cast<double>(i)
                                                                       : e - step * static_cast<double>(steps - 1 - i)));
      } else {
        using Acc = std::conditional_t<std::is_same_v<T, double>, double, float>;
        auto op = [](Acc v) { return static_cast<Acc>(cast_to<T>(v)); };  // one operation in T's arithmetic
        const Acc s = op(static_cast<Acc>(start.to_double())), e = op(static_cast<Acc>(end.to_double()));
        const Acc step = steps > 1 ? op(op(e - s) / op(static_cast<Acc>(steps - 1))) : Acc(0);
        for (int64_t i = 0; i < steps; ++i) {
          const Acc point = i < halfway ? op(s + op(step * op(static_cast<Acc>(i)))) : op(e - op(step * op(static_cast<Acc>(steps - 1 - i))));
          p[i] = cast_to<T>(map.template operator()<T>(point));
        }
      }
    });
  });
}
}  // namespace

Tensor linspace(Scalar start, Scalar end, int64_t steps, TensorOptions options) {
  return spaced("linspace", start, end, steps, options, []<class T>(auto point) { return point; });
}

Tensor logspace(Scalar start, Scalar end, int64_t steps, double base, TensorOptions options) {
  return spaced("logspace", start, end, steps, options, [base]<class T>(auto point) {
    // A floating dtype takes the base rounded to it, as PyTorch's kernel does (3.3 is 3.296875 in
    // bfloat16); an integral one takes it as it is (2.5^2 is 6 in int64).
    using P = decltype(point);
    if constexpr (std::is_integral_v<T>) return std::pow(base, point);
    else return std::pow(static_cast<P>(cast_to<T>(base)), point);
  });
}

Tensor eye(int64_t n, std::optional<int64_t> m, TensorOptions options) {
  const int64_t cols = m.value_or(n);
  TALLY_CHECK(n >= 0 && cols >= 0, "eye: n and m must be non-negative, got n=", n, ", m=", cols);
  return made_on_host({n, cols}, options.dtype_or(get_default_dtype()), options, [&](Tensor& t) {
    t.zero_();
    for (int64_t i = 0; i < std::min(n, cols); ++i) t.index_put_({i, i}, 1);
    t.storage()->reset_version();
  });
}

namespace {
void collect_shape(const NestedList& l, size_t depth, std::vector<int64_t>& shape) {
  if (!l.is_list()) return;
  if (shape.size() <= depth) shape.push_back(static_cast<int64_t>(l.items().size()));
  if (!l.items().empty()) collect_shape(l.items()[0], depth + 1, shape);
}

void flatten_leaves(const NestedList& l, size_t depth, const std::vector<int64_t>& shape, std::vector<Scalar>& out,
                    Scalar::Kind& kind) {
  if (!l.is_list()) {
    TALLY_CHECK(depth == shape.size(), "tensor: expected a sequence at depth ", depth, " but found a number");
    out.push_back(l.value());
    kind = std::max(kind, l.kind());
    return;
  }
  TALLY_CHECK(depth < shape.size() && static_cast<int64_t>(l.items().size()) == shape[depth],
              "tensor: expected sequence of length ", depth < shape.size() ? shape[depth] : 0, " at dim ", depth,
              " (got ", l.items().size(), ")");
  for (const NestedList& item : l.items()) flatten_leaves(item, depth + 1, shape, out, kind);
}

/// A leaf as element type T: an integer leaf converts from its int64 (exact for int64, rounded
/// once for a float), a floating one from its double; bool is value != 0.
template <class T>
T element_from(const Scalar& v) {
  if constexpr (std::is_same_v<T, bool>) return v.is_floating_point() ? v.to_double() != 0 : v.to_long() != 0;
  else if constexpr (std::is_integral_v<T>) return static_cast<T>(v.to_long());  // a float truncates, then wraps
  else if (v.is_floating_point()) return cast_to<T>(v.to_double());
  else return cast_to<T>(v.to_long());
}
}  // namespace

Tensor tensor(const NestedList& data, TensorOptions options) {
  const std::optional<Dtype> dtype = options.dtype_opt();
  std::vector<int64_t> shape;
  collect_shape(data, 0, shape);
  std::vector<Scalar> values;
  Scalar::Kind kind = Scalar::Kind::Bool;
  flatten_leaves(data, 0, shape, values, kind);
  if (values.empty() && !dtype) kind = Scalar::Kind::Float;  // torch.tensor([]) is float32
  const Dtype dt = dtype.value_or(kind == Scalar::Kind::Float ? get_default_dtype() : kind == Scalar::Kind::Int ? kInt64 : kBool);
  // An integer dtype takes only the numbers it holds, as torch.tensor([300], dtype=torch.uint8)
  // raises (300 became 44; NaN became 0); a float dtype rounds, to an infinity beyond its range.
  if (!is_floating_point(dt) && dt != kBool)
    for (const Scalar& v : values) check_scalar_fits(v, dt, "tensor");
  return made_on_host(shape, dt, options, [&](Tensor& t) {
    dispatch(dt, "tensor", [&]<class T>() {
      T* p = t.data_ptr<T>();
      for (size_t i = 0; i < values.size(); ++i) p[i] = element_from<T>(values[i]);
    });
  });
}

}  // namespace tally
