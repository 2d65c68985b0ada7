#pragma once
// Containers: ModuleList (children "0", "1", ... with no forward of its own) and Sequential (a
// Layer that runs its children in order).

#include <memory>
#include <vector>

#include "tally/nn/layer.h"

namespace tally::nn {

class ModuleList : public Module {
 public:
  ModuleList() : Module("ModuleList") { make_transparent(); }
  /// Append `module` as child "<size>".
  void push_back(std::shared_ptr<Module> module);
  size_t size() const { return modules_.size(); }
  bool empty() const { return modules_.empty(); }
  /// Child i as Module.
  const std::shared_ptr<Module>& operator[](size_t i) const;
  /// Child i as its own type (a wrong type is an error naming both).
  template <class M>
  std::shared_ptr<M> at(size_t i) const {
    auto m = std::dynamic_pointer_cast<M>((*this)[i]);
    TALLY_CHECK(m != nullptr, "ModuleList: child ", i, " is a ", (*this)[i]->type_name(), ", not the type asked for");
    return m;
  }
  auto begin() const { return modules_.begin(); }
  auto end() const { return modules_.end(); }

 private:
  std::vector<std::shared_ptr<Module>> modules_;
};

class Sequential : public Layer {
 public:
  Sequential() : Layer("Sequential") {}
  explicit Sequential(std::vector<std::shared_ptr<Layer>> layers);
  /// Append `layer` as child "<size>".
  void push_back(std::shared_ptr<Layer> layer);
  size_t size() const { return layers_.size(); }
  const std::shared_ptr<Layer>& operator[](size_t i) const;
  Tensor forward(const Tensor& x) override;

 private:
  std::vector<std::shared_ptr<Layer>> layers_;
};

}  // namespace tally::nn
