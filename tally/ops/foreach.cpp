#include "tally/ops/foreach.h"

#include "tally/ops/apply.h"
#include "tally/ops/elementwise.h"

namespace tally {

namespace {

/// While alive, the ops run on this thread are summed into one ledger row named `name`, which
/// the observer installed before it receives when the scope ends (nothing is installed when no
/// observer is listening).
class OneLedgerRow final : public ops::OpObserver {
 public:
  explicit OneLedgerRow(std::string_view name) : name_(name), previous_(ops::set_op_observer(this)) {
    if (!previous_) ops::set_op_observer(nullptr);
  }
  ~OneLedgerRow() override {
    if (!previous_) return;
    ops::set_op_observer(previous_);
    if (ran_) previous_->on_op(name_, total_, seconds_);
  }
  OneLedgerRow(const OneLedgerRow&) = delete;
  OneLedgerRow& operator=(const OneLedgerRow&) = delete;
  void on_op(std::string_view, const ops::Cost& cost, double seconds) override {
    total_ += cost;
    seconds_ += seconds;
    ran_ = true;
  }

 private:
  std::string_view name_;
  ops::OpObserver* previous_;
  ops::Cost total_;
  double seconds_ = 0;
  bool ran_ = false;
};

/// Runs step(i) for each index of `self` as one ledger row named `op`, after checking that every
/// other list is as long as `self` (PyTorch's message).
template <class Step, class... Lists>
void for_each_index(std::string_view op, const TensorList& self, Step step, const Lists&... others) {
  [[maybe_unused]] auto same_length = [&](const TensorList& other) {
    TALLY_CHECK(other.size() == self.size(), op, ": Tensor lists must have the same number of tensors, got ", self.size(),
                " and ", other.size());
  };
  (same_length(others), ...);
  OneLedgerRow row(op);
  for (size_t i = 0; i < self.size(); ++i) step(i);
}

}  // namespace

void _foreach_add_(TensorList& self, const TensorList& other, Scalar alpha) {
  for_each_index("_foreach_add_", self, [&](size_t i) { self[i].add_(other[i], alpha); }, other);
}

void _foreach_add_(TensorList& self, Scalar value) {
  for_each_index("_foreach_add_", self, [&](size_t i) { self[i].add_(value); });
}

void _foreach_mul_(TensorList& self, Scalar value) {
  for_each_index("_foreach_mul_", self, [&](size_t i) { self[i].mul_(value); });
}

void _foreach_mul_(TensorList& self, const TensorList& other) {
  for_each_index("_foreach_mul_", self, [&](size_t i) { self[i].mul_(other[i]); }, other);
}

void _foreach_addcmul_(TensorList& self, const TensorList& t1, const TensorList& t2, Scalar value) {
  for_each_index("_foreach_addcmul_", self, [&](size_t i) { self[i].addcmul_(t1[i], t2[i], value); }, t1, t2);
}

void _foreach_addcdiv_(TensorList& self, const TensorList& t1, const TensorList& t2, Scalar value) {
  for_each_index("_foreach_addcdiv_", self, [&](size_t i) { self[i].addcdiv_(t1[i], t2[i], value); }, t1, t2);
}

void _foreach_lerp_(TensorList& self, const TensorList& end, Scalar weight) {
  for_each_index("_foreach_lerp_", self, [&](size_t i) { self[i].lerp_(end[i], weight); }, end);
}

void _foreach_zero_(TensorList& self) {
  for_each_index("_foreach_zero_", self, [&](size_t i) { self[i].zero_(); });
}

void zero_grads(const TensorList& params, bool set_to_none) {
  TensorList grads;
  for (const Tensor& p : params) {
    if (!p.grad().defined()) continue;
    if (set_to_none) Tensor(p).set_grad(Tensor());
    else grads.push_back(p.grad());
  }
  if (grads.empty()) return;
  NoGradGuard no_grad;
  _foreach_zero_(grads);
}

TensorList _foreach_sqrt(const TensorList& x) {
  TensorList out(x.size());
  for_each_index("_foreach_sqrt", x, [&](size_t i) { out[i] = sqrt(x[i]); });
  return out;
}

}  // namespace tally
