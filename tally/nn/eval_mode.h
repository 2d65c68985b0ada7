#pragma once
// A scope in eval mode.

#include "tally/nn/module.h"

namespace tally::nn {

/// Eval mode for a module while it lives, then the mode the module had: a generation, or an
/// evaluation in the middle of training, leaves training mode as it found it.
class EvalModeGuard {
 public:
  explicit EvalModeGuard(Module& module) : module_(module), was_training_(module.is_training()) { module.eval(); }
  ~EvalModeGuard() { module_.train(was_training_); }
  EvalModeGuard(const EvalModeGuard&) = delete;
  EvalModeGuard& operator=(const EvalModeGuard&) = delete;

 private:
  Module& module_;
  bool was_training_;
};

}  // namespace tally::nn
