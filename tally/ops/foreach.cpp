#include "tally/ops/foreach.h"

#include "tally/ops/apply.h"
#include "tally/ops/elementwise.h"

namespace tally {

namespace {

/// While alive, the ops run on this thread are summed into one ledger row named `name`, which
/// the observer installed before it receives when the scope ends.
class OneLedgerRow final : public ops::OpObserver {
 public:
  explicit OneLedgerRow(std::string_view name)
      : name_(name), previous_(ops::set_op_observer(this)) {}
  ~OneLedgerRow() override {
    ops::set_op_observer(previous_);
    if (previous_ && ran_) previous_->on_op(name_, total_, seconds_);
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

void check_lengths(std::string_view op, const TensorList& a, const TensorList& b) {
  TALLY_CHECK(a.size() == b.size(), op, ": Tensor lists must have the same number of tensors, got ", a.size(), " and ", b.size());
}

}  // namespace

void _foreach_add_(TensorList& self, const TensorList& other, Scalar alpha) {
  check_lengths("_foreach_add_", self, other);
  OneLedgerRow row("_foreach_add_");
  for (size_t i = 0; i < self.size(); ++i) self[i].add_(other[i], alpha);
}

void _foreach_add_(TensorList& self, Scalar value) {
  OneLedgerRow row("_foreach_add_");
  for (Tensor& t : self) t.add_(value);
}

void _foreach_mul_(TensorList& self, Scalar value) {
  OneLedgerRow row("_foreach_mul_");
  for (Tensor& t : self) t.mul_(value);
}

void _foreach_mul_(TensorList& self, const TensorList& other) {
  check_lengths("_foreach_mul_", self, other);
  OneLedgerRow row("_foreach_mul_");
  for (size_t i = 0; i < self.size(); ++i) self[i].mul_(other[i]);
}

void _foreach_addcmul_(TensorList& self, const TensorList& t1, const TensorList& t2, Scalar value) {
  check_lengths("_foreach_addcmul_", self, t1);
  check_lengths("_foreach_addcmul_", self, t2);
  OneLedgerRow row("_foreach_addcmul_");
  for (size_t i = 0; i < self.size(); ++i) self[i].addcmul_(t1[i], t2[i], value);
}

void _foreach_addcdiv_(TensorList& self, const TensorList& t1, const TensorList& t2, Scalar value) {
  check_lengths("_foreach_addcdiv_", self, t1);
  check_lengths("_foreach_addcdiv_", self, t2);
  OneLedgerRow row("_foreach_addcdiv_");
  for (size_t i = 0; i < self.size(); ++i) self[i].addcdiv_(t1[i], t2[i], value);
}

void _foreach_lerp_(TensorList& self, const TensorList& end, Scalar weight) {
  check_lengths("_foreach_lerp_", self, end);
  OneLedgerRow row("_foreach_lerp_");
  for (size_t i = 0; i < self.size(); ++i) self[i].lerp_(end[i], weight);
}

void _foreach_zero_(TensorList& self) {
  OneLedgerRow row("_foreach_zero_");
  for (Tensor& t : self) t.zero_();
}

TensorList _foreach_sqrt(const TensorList& x) {
  OneLedgerRow row("_foreach_sqrt");
  TensorList out;
  out.reserve(x.size());
  for (const Tensor& t : x) out.push_back(sqrt(t));
  return out;
}

}  // namespace tally
