#pragma once
// Tensor: a handle to storage + sizes + strides (in elements) + offset + dtype, as in PyTorch.
// Copying a Tensor copies the handle; views share storage and never copy bytes.

#include <concepts>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

#include "tally/core/device.h"
#include "tally/core/int_array_ref.h"
#include "tally/core/memory_format.h"
#include "tally/core/scalar.h"
#include "tally/core/storage.h"
#include "tally/core/tensor_options.h"
#include "tally/dtype/dtype.h"
#include "tally/table/binary_ops.h"
#include "tally/table/unary_ops.h"

namespace tally {

class Tensor;
class Generator;  // tally/core/generator.h
namespace indexing {
class TensorIndex;  // tally/core/indexing.h, included at the end: it holds a Tensor
}
using TensorList = std::vector<Tensor>;
struct AutogradMeta;  // defined by the autograd layer

/// The state a Tensor handle points to.
struct TensorImpl {
  Storage storage;
  DimVector sizes;
  DimVector strides;  // in elements
  int64_t storage_offset = 0;    // in elements
  Dtype dtype = kFloat32;
  std::shared_ptr<AutogradMeta> autograd;  // null until autograd needs it
};

/// An n-dimensional strided view of a storage.
class Tensor {
 public:
  /// An undefined tensor (like a default-constructed torch::Tensor).
  Tensor() = default;
  explicit Tensor(std::shared_ptr<TensorImpl> impl) : impl_(std::move(impl)) {}

  // ---- metadata ----
  /// Whether this handle points at a tensor.
  bool defined() const { return impl_ != nullptr; }
  /// Sizes of every dimension.
  IntArrayRef sizes() const { return impl().sizes; }
  /// Sizes of every dimension (torch's `shape`).
  IntArrayRef shape() const { return impl().sizes; }
  /// Size of dimension `dim` (negative counts from the end).
  int64_t size(int64_t dim) const;
  /// Element strides of every dimension.
  IntArrayRef strides() const { return impl().strides; }
  /// Element stride of dimension `dim`.
  int64_t stride(int64_t dim) const;
  /// Number of dimensions.
  int64_t dim() const { return static_cast<int64_t>(impl().sizes.size()); }
  /// Number of dimensions (alias of dim()).
  int64_t ndimension() const { return dim(); }
  /// Number of elements.
  int64_t numel() const;
  /// Element type.
  Dtype dtype() const { return impl().dtype; }
  /// Element type (libtorch's name).
  Dtype scalar_type() const { return impl().dtype; }
  /// Bytes per element.
  int64_t element_size() const { return tally::element_size(dtype()); }
  /// numel() * element_size(): the bytes this tensor's elements occupy.
  int64_t nbytes() const { return numel() * element_size(); }
  /// Where the elements are (torch's `x.device`).
  Device device() const { return impl().storage ? impl().storage->device() : Device(kCPU); }
  /// The dtype and device, as factories take them (libtorch's `x.options()`):
  /// `zeros(sizes, x.options())` makes a tensor of x's dtype on x's device.
  TensorOptions options() const { return TensorOptions(dtype()).device(device()); }
  /// Whether the elements are in a GPU's memory.
  bool is_cuda() const { return device().is_cuda(); }
  /// Whether the elements are in host memory.
  bool is_cpu() const { return device().is_cpu(); }
  /// Whether the elements are in page-locked host memory (pin_memory()).
  bool is_pinned() const { return impl().storage && impl().storage->is_pinned(); }
  /// Offset of element [0, ..., 0] in the storage, in elements.
  int64_t storage_offset() const { return impl().storage_offset; }
  /// The storage this tensor views.
  const Storage& storage() const { return impl().storage; }
  /// Address of element [0, ..., 0].
  void* data_ptr() const;
  /// Typed address of element [0, ..., 0]; T must match dtype().
  template <class T> T* data_ptr() const;
  /// Whether the elements are laid out densely in row-major order (PyTorch's rule: size-1 dims
  /// may have any stride).
  bool is_contiguous() const;
  /// Whether this is a floating-point tensor.
  bool is_floating_point() const { return tally::is_floating_point(dtype()); }
  /// The single element's value (raises unless numel() == 1).
  template <class T> T item() const;
  /// The single element as a Scalar.
  Scalar item() const;
  /// In-place writes to this tensor's storage so far (torch's `x._version`), shared by its views.
  int64_t _version() const { return storage() ? static_cast<int64_t>(storage()->version()) : 0; }
  /// Whether two handles view the same storage.
  bool is_same_storage(const Tensor& other) const { return defined() && other.defined() && storage() == other.storage(); }
  /// libtorch's name for is_same_storage: a write through either can change the other.
  bool is_alias_of(const Tensor& other) const { return is_same_storage(other); }
  /// Whether both handles are the same tensor object.
  bool is_same(const Tensor& other) const { return impl_ == other.impl_; }
  /// The impl (for kernels and the autograd layer).
  TensorImpl& impl() const;
  /// Shared pointer to the impl.
  const std::shared_ptr<TensorImpl>& impl_ptr() const { return impl_; }

  // ---- views (never copy) ----
  /// Same data with new sizes; raises if the strides do not allow it. One size may be -1.
  Tensor view(IntArrayRef sizes) const;
  /// view() when possible, otherwise a contiguous copy with the new sizes.
  Tensor reshape(IntArrayRef sizes) const;
  /// Flatten dims start_dim..end_dim into one.
  Tensor flatten(int64_t start_dim = 0, int64_t end_dim = -1) const;
  /// Swap two dimensions.
  Tensor transpose(int64_t dim0, int64_t dim1) const;
  /// Transpose of a tensor with at most 2 dims.
  Tensor t() const;
  /// Reorder dimensions.
  Tensor permute(IntArrayRef dims) const;
  /// Broadcast size-1 dims (and new leading dims) to `sizes` with stride 0; -1 keeps a size.
  Tensor expand(IntArrayRef sizes) const;
  /// expand() to other's sizes.
  Tensor expand_as(const Tensor& other) const { return expand(other.sizes()); }
  /// Remove every size-1 dimension.
  Tensor squeeze() const;
  /// Remove dimension `dim` if its size is 1.
  Tensor squeeze(int64_t dim) const;
  /// Insert a size-1 dimension at `dim`.
  Tensor unsqueeze(int64_t dim) const;
  /// The slice at `index` along `dim`, removing that dimension.
  Tensor select(int64_t dim, int64_t index) const;
  /// Elements start, start+step, ... < end along `dim` (Python slice bounds are clamped).
  Tensor slice(int64_t dim = 0, std::optional<int64_t> start = std::nullopt, std::optional<int64_t> end = std::nullopt,
               int64_t step = 1) const;
  /// `length` elements from `start` along `dim` (bounds are checked, not clamped).
  Tensor narrow(int64_t dim, int64_t start, int64_t length) const;
  /// Python-style indexing with integers, Slice, None and Ellipsis (a view), and with int64 or
  /// bool tensors (a copy; tally/ops/advanced_index.h): x.index({Slice(), mask}) is x[:, mask].
  Tensor index(std::initializer_list<indexing::TensorIndex> indices) const;
  /// Same, with a vector of indices.
  Tensor index(const std::vector<indexing::TensorIndex>& indices) const;
  /// ATen's index.Tensor: indices[d] indexes dim d, an undefined tensor keeps the whole dim.
  Tensor index(const TensorList& indices) const;
  /// x[indices] = values, in place: the view the basic indices pick is written, through the
  /// tensor indices where there are any (tally/ops/advanced_index.h).
  Tensor& index_put_(std::initializer_list<indexing::TensorIndex> indices, const Tensor& values) const;
  Tensor& index_put_(std::initializer_list<indexing::TensorIndex> indices, Scalar value) const;
  Tensor& index_put_(const std::vector<indexing::TensorIndex>& indices, const Tensor& values) const;
  Tensor& index_put_(const std::vector<indexing::TensorIndex>& indices, Scalar value) const;
  /// ATen's index_put_: with `accumulate`, repeated positions add up (in index order).
  Tensor& index_put_(const TensorList& indices, const Tensor& values, bool accumulate = false) const;
  Tensor index_put(const TensorList& indices, const Tensor& values, bool accumulate = false) const;
  /// tally/ops/advanced_index.h.
  Tensor nonzero() const;
  Tensor masked_select(const Tensor& mask) const;
  Tensor masked_scatter(const Tensor& mask, const Tensor& source) const;
  Tensor& masked_scatter_(const Tensor& mask, const Tensor& source) const;
  Tensor take(const Tensor& index) const;
  /// x[i]: row i along the first dim, a view (libtorch's operator[], select(0, i)).
  Tensor operator[](int64_t index) const { return select(0, index); }
  /// A view with the given geometry over the same storage (torch.as_strided).
  Tensor as_strided(IntArrayRef sizes, IntArrayRef strides, std::optional<int64_t> storage_offset = std::nullopt) const;
  /// Returns a new handle to the same data with no autograd history.
  Tensor detach() const;
  /// Points this tensor at `new_data`'s storage, sizes and dtype, keeping its autograd identity
  /// (PyTorch's `param.data = new_data`): Module::to(dtype) converts parameters this way, so every
  /// handle to a parameter (a submodule's, an optimizer's) sees the converted one.
  void set_data(const Tensor& new_data);

  // ---- autograd (tally/autograd) ----
  /// Whether gradients flow to this tensor.
  bool requires_grad() const;
  /// Mark a leaf as needing gradients; returns *this.
  Tensor& requires_grad_(bool requires_grad = true) const;
  /// The accumulated gradient: populated on leaves, and on non-leaves after retain_grad(); else undefined.
  const Tensor& grad() const;
  /// The gradient slot itself, for writing (libtorch's mutable_grad): `w.mutable_grad().zero_()`
  /// in an optimizer step, or `w.mutable_grad() = Tensor()` to drop it (PyTorch's `w.grad = None`).
  Tensor& mutable_grad() const;
  /// Replace the accumulated gradient (an undefined tensor clears it, as optimizers' zero_grad(set_to_none) do).
  void set_grad(const Tensor& grad);
  /// Whether this tensor was created by the user rather than by an op that records history.
  bool is_leaf() const;
  /// The node that produced this tensor, or null for leaves.
  std::shared_ptr<struct Node> grad_fn() const;
  /// Keep .grad() for this non-leaf after backward.
  void retain_grad();
  /// Call `hook(leaf)` each time a backward pass has added this leaf's gradient into grad()
  /// (PyTorch's register_post_accumulate_grad_hook), after the addition, on the thread running
  /// that backward. Data-parallel training starts a bucket's all-reduce from it while the rest of
  /// backward runs. Returns a handle for remove_post_accumulate_grad_hook. ValueError on a
  /// non-leaf, or on a tensor that does not require gradients.
  unsigned register_post_accumulate_grad_hook(std::function<void(const Tensor&)> hook) const;
  /// Remove a hook by the handle its registration returned; ValueError for a handle this tensor
  /// does not hold.
  void remove_post_accumulate_grad_hook(unsigned handle) const;
  /// register_hook's registration, for one hook type.
  unsigned register_grad_hook(std::function<Tensor(const Tensor&)> hook) const;
  /// Call `hook(grad)` with this tensor's gradient each time a backward pass computes it, before
  /// it is used (accumulated into a leaf's grad(), passed on by a non-leaf's grad_fn); a hook that
  /// returns a defined tensor replaces the gradient (PyTorch's Tensor.register_hook). Hooks run
  /// in registration order. Returns a handle for remove_hook. ValueError on a tensor that does
  /// not require gradients.
  template <class Hook>
  unsigned register_hook(Hook&& hook) const {
    if constexpr (std::is_void_v<std::invoke_result_t<Hook, const Tensor&>>) {
      return register_grad_hook([h = std::forward<Hook>(hook)](const Tensor& g) {
        h(g);
        return Tensor();
      });
    } else {
      return register_grad_hook(std::function<Tensor(const Tensor&)>(std::forward<Hook>(hook)));
    }
  }
  /// Remove a register_hook hook by its handle; ValueError for a handle this tensor does not hold.
  void remove_hook(unsigned handle) const;
  /// Compute gradients of this tensor with respect to the leaves (torch.Tensor.backward);
  /// `gradient` is required unless this is a single-element tensor. The graph is freed unless
  /// retain_graph, which defaults to create_graph. With create_graph, the backward pass is itself
  /// recorded, so the gradients can be differentiated again. With `inputs`, only their grad()
  /// receives the gradient (tally/autograd/engine.h).
  void backward(const Tensor& gradient = Tensor(), std::optional<bool> retain_graph = std::nullopt, bool create_graph = false,
                const std::vector<Tensor>& inputs = {}) const;

  // ---- copies and writes ----
  /// This tensor if contiguous, otherwise a contiguous (row-major) copy.
  Tensor contiguous() const;
  /// A copy with its own storage, laid out as `memory_format` says: by default (Preserve) as
  /// this tensor is, as PyTorch's clone(), so x.t().clone() is transposed too.
  Tensor clone(std::optional<MemoryFormat> memory_format = std::nullopt) const;
  /// Copy `src` (broadcast, converted) into this tensor's elements; returns *this.
  Tensor& copy_(const Tensor& src) const;
  /// Set every element to `value`.
  Tensor& fill_(Scalar value) const;
  /// Set every element to zero.
  Tensor& zero_() const { return fill_(0); }
  /// Fill with U(from, to) (floating dtypes), as libtorch's uniform_.
  Tensor& uniform_(double from = 0, double to = 1, Generator* gen = nullptr) const;
  /// Fill with N(mean, std²) (floating dtypes), as libtorch's normal_.
  Tensor& normal_(double mean = 0, double std = 1, Generator* gen = nullptr) const;
  /// Fill with integers uniform on [from, to), which must be values of the dtype (torch's random_);
  /// [0, to); or without bounds [0, 2^mantissa digits] for a float and [0, max] for an integer.
  Tensor& random_(int64_t from, int64_t to, Generator* gen = nullptr) const;
  Tensor& random_(int64_t to, Generator* gen = nullptr) const;
  Tensor& random_(Generator* gen = nullptr) const;
  /// Give the tensor `sizes`, contiguous, keeping its storage where it holds enough elements past
  /// the offset and otherwise moving to a larger one that starts with the old bytes (libtorch's
  /// resize_: new elements are uninitialised). Refused for a tensor that requires grad.
  Tensor& resize_(IntArrayRef sizes) const;
  /// A copy on `device` converted to `dtype`, as libtorch's: `x.to("cuda:0")`, `x.to(kBFloat16)`.
  /// Self on the same device in the same dtype, unless `copy` (as PyTorch's, whatever
  /// `memory_format` says). A copy is laid out as `memory_format` says: by default (Preserve) as
  /// this tensor is. With `non_blocking` a copy between pinned host memory and the
  /// GPU returns before it finishes. Differentiable: the gradient goes back converted.
  Tensor to(Device device, Dtype dtype, bool non_blocking = false, bool copy = false,
            std::optional<MemoryFormat> memory_format = std::nullopt) const;
  /// to(this device, dtype, ...).
  Tensor to(Dtype dtype, bool non_blocking = false, bool copy = false, std::optional<MemoryFormat> memory_format = std::nullopt) const;
  /// to(device, this dtype, ...).
  Tensor to(Device device, bool non_blocking = false, bool copy = false, std::optional<MemoryFormat> memory_format = std::nullopt) const;
  /// to(the options' device and dtype, this tensor's where they are unset): libtorch's
  /// `x.to(x.options().dtype(kFloat64))`.
  /// (A template taking TensorOptions alone, so that `to(kCPU)` and `to(kFloat64)` stay the
  /// Device and Dtype overloads rather than becoming ambiguous.)
  template <class Options>
    requires std::same_as<Options, TensorOptions>
  Tensor to(const Options& options, bool non_blocking = false, bool copy = false,
            std::optional<MemoryFormat> memory_format = std::nullopt) const {
    return to(options.device_or(device()), options.dtype_or(dtype()), non_blocking, copy, memory_format);
  }
  /// to(kCPU).
  Tensor cpu() const { return to(Device(kCPU)); }
  /// to(Device("cuda:index")).
  Tensor cuda(int index = 0) const { return to(Device(kCUDA, index)); }
  /// A copy in page-locked host memory, which the GPU reads and writes asynchronously (CPU tensors only).
  Tensor pin_memory() const;

  // ---- operators as methods (defined in tally/ops) ----
  Tensor add(const Tensor& other, Scalar alpha = 1) const;
  Tensor sub(const Tensor& other, Scalar alpha = 1) const;
  /// With a number: self + alpha·other, self − alpha·other, self·other, self / other.
  Tensor add(Scalar other, Scalar alpha = 1) const;
  Tensor sub(Scalar other, Scalar alpha = 1) const;
  Tensor mul(Scalar other) const;
  Tensor div(Scalar other) const;
  Tensor& add_(const Tensor& other, Scalar alpha = 1) const;
  Tensor& sub_(const Tensor& other, Scalar alpha = 1) const;
  Tensor& add_(Scalar other) const;
  Tensor& sub_(Scalar other) const;
  Tensor& mul_(Scalar other) const;
  Tensor& div_(Scalar other) const;
  Tensor& pow_(Scalar exponent) const;
  /// self + value·t1·t2; self + value·t1/t2; self + weight·(end − self) (the optimizers' steps).
  Tensor addcmul(const Tensor& t1, const Tensor& t2, Scalar value = 1) const;
  Tensor addcdiv(const Tensor& t1, const Tensor& t2, Scalar value = 1) const;
  Tensor lerp(const Tensor& end, Scalar weight) const;
  Tensor& addcmul_(const Tensor& t1, const Tensor& t2, Scalar value = 1) const;
  Tensor& addcdiv_(const Tensor& t1, const Tensor& t2, Scalar value = 1) const;
  Tensor& lerp_(const Tensor& end, Scalar weight) const;
  Tensor& clamp_(std::optional<Scalar> min, std::optional<Scalar> max = std::nullopt) const;
  /// The unary ops of tally/table/unary_ops.h, each as a method and in place: `x.exp()`, `x.exp_()`.
#define TALLY_UNARY_METHODS_(fn, Name, summary) \
  Tensor fn() const;                            \
  Tensor& fn##_() const;
  TALLY_FORALL_UNARY_OPS(TALLY_UNARY_METHODS_)
#undef TALLY_UNARY_METHODS_
  /// The binary ops of tally/table/binary_ops.h, each as a method and in place: `a.maximum(b)`,
  /// `a.maximum_(b)` (in place, the result must fit self's dtype: a comparison writes 0 or 1).
#define TALLY_BINARY_METHODS_(fn, Name, summary) \
  Tensor fn(const Tensor& other) const;          \
  Tensor& fn##_(const Tensor& other) const;
  TALLY_FORALL_BINARY_OPS(TALLY_BINARY_METHODS_)
#undef TALLY_BINARY_METHODS_
  Tensor pow(Scalar exponent) const;
  Tensor clamp(std::optional<Scalar> min, std::optional<Scalar> max = std::nullopt) const;
  Tensor masked_fill(const Tensor& mask, Scalar value) const;
  Tensor eq(Scalar other) const;
  Tensor sum() const;
  Tensor sum(IntArrayRef dims, bool keepdim = false) const;
  Tensor mean() const;
  Tensor mean(IntArrayRef dims, bool keepdim = false) const;
  Tensor prod() const;
  Tensor prod(int64_t dim, bool keepdim = false) const;
  Tensor max() const;
  std::tuple<Tensor, Tensor> max(int64_t dim, bool keepdim = false) const;
  Tensor min() const;
  std::tuple<Tensor, Tensor> min(int64_t dim, bool keepdim = false) const;
  Tensor amax(IntArrayRef dims = {}, bool keepdim = false) const;
  Tensor amin(IntArrayRef dims = {}, bool keepdim = false) const;
  Tensor argmax(std::optional<int64_t> dim = std::nullopt, bool keepdim = false) const;
  Tensor argmin(std::optional<int64_t> dim = std::nullopt, bool keepdim = false) const;
  /// tally/ops/sort.h: ordering along a dim, and drawing categories.
  std::tuple<Tensor, Tensor> sort(int64_t dim = -1, bool descending = false) const;
  Tensor argsort(int64_t dim = -1, bool descending = false) const;
  std::tuple<Tensor, Tensor> topk(int64_t k, int64_t dim = -1, bool largest = true, bool sorted = true) const;
  Tensor multinomial(int64_t num_samples, bool replacement = false, Generator* gen = nullptr) const;
  Tensor any() const;
  Tensor any(int64_t dim, bool keepdim = false) const;
  Tensor all() const;
  Tensor all(int64_t dim, bool keepdim = false) const;
  Tensor var(IntArrayRef dims = {}, int64_t correction = 1, bool keepdim = false) const;
  Tensor std(IntArrayRef dims = {}, int64_t correction = 1, bool keepdim = false) const;
  /// The p-norm over `dims` (all when empty): linalg::vector_norm (tally/ops/norm.h).
  Tensor norm(double p = 2, IntArrayRef dims = {}, bool keepdim = false) const;
  /// tally/ops/reorder.h: the elements reversed along `dims`; rolled; tiled; each repeated in place.
  Tensor flip(IntArrayRef dims) const;
  Tensor roll(IntArrayRef shifts, IntArrayRef dims = {}) const;
  Tensor repeat(IntArrayRef repeats) const;
  Tensor repeat_interleave(int64_t repeats, std::optional<int64_t> dim = std::nullopt) const;
  Tensor softmax(int64_t dim) const;
  Tensor log_softmax(int64_t dim) const;
  Tensor matmul(const Tensor& other) const;
  Tensor index_select(int64_t dim, const Tensor& index) const;
  Tensor gather(int64_t dim, const Tensor& index) const;
  Tensor scatter(int64_t dim, const Tensor& index, const Tensor& src) const;
  Tensor scatter(int64_t dim, const Tensor& index, Scalar value) const;
  Tensor scatter_add(int64_t dim, const Tensor& index, const Tensor& src) const;
  Tensor& scatter_(int64_t dim, const Tensor& index, const Tensor& src) const;
  Tensor& scatter_(int64_t dim, const Tensor& index, Scalar value) const;
  Tensor& scatter_add_(int64_t dim, const Tensor& index, const Tensor& src) const;
  Tensor triu(int64_t diagonal = 0) const;
  Tensor tril(int64_t diagonal = 0) const;
  /// Whether sizes, dtype and every value are equal (torch.equal).
  bool equal(const Tensor& other) const;
  /// Elementwise |a - b| <= atol + rtol * |b| (NaNs unequal unless equal_nan).
  bool allclose(const Tensor& other, double rtol = 1e-5, double atol = 1e-8, bool equal_nan = false) const;

  /// Python's repr, as PyTorch prints: tensor([[1., 2.], ...]). (operator<< prints as libtorch.)
  std::string to_string() const;

 private:
  std::shared_ptr<TensorImpl> impl_;
};

/// Prints as libtorch prints (`std::cout << t`): the values in columns, then
/// "[ CPUFloatType{2,3} ]" (core/print_libtorch.cpp). to_string() gives Python's repr instead.
std::ostream& operator<<(std::ostream& os, const Tensor& t);
/// The same (at::print), with the line width that splits a wide matrix into column blocks.
std::ostream& print(std::ostream& os, const Tensor& t, int64_t linesize = 80);
/// print() to std::cout.
void print(const Tensor& t, int64_t linesize = 80);

/// Wrap `dim` (which may be negative) into [0, ndim); raises IndexError with PyTorch's message.
int64_t maybe_wrap_dim(int64_t dim, int64_t ndim, bool scalar_as_1d = true);

/// Bytes a tensor's elements take: numel * element_size (the lecture's get_memory_usage).
inline int64_t memory_usage(const Tensor& t) { return t.numel() * t.element_size(); }

template <class T>
T* Tensor::data_ptr() const {
  TALLY_CHECK_TYPE_ERROR(dtype_of<std::remove_cv_t<T>>() == dtype(), "data_ptr: expected dtype ",
                         dtype_name(dtype_of<std::remove_cv_t<T>>()), " but tensor has dtype ", dtype_name(dtype()));
  return static_cast<T*>(data_ptr());
}

template <class T>
T Tensor::item() const {
  const Scalar value = item();
  // A value the type cannot hold raises, as libtorch's checked conversion (item<int>() of 1e10
  // was INT_MIN, of NaN an arbitrary integer): integers by range, floats by finite range.
  if constexpr (std::is_same_v<T, int8_t> || std::is_same_v<T, int16_t> || std::is_same_v<T, int32_t> || std::is_same_v<T, int64_t> ||
                std::is_same_v<T, uint8_t> || std::is_same_v<T, float> || std::is_same_v<T, double>)
    check_scalar_fits(value, dtype_of<T>(), "item");
  return value.to<T>();
}

}  // namespace tally

// After Tensor: an index list entry may hold a tensor.
#include "tally/core/indexing.h"  // IWYU pragma: export
