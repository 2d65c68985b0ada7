#include "tally/nn/container.h"

#include <string>

namespace tally::nn {

void ModuleList::push_back(std::shared_ptr<Module> module) {
  register_module(std::to_string(modules_.size()), module);
  modules_.push_back(std::move(module));
}

const std::shared_ptr<Module>& ModuleList::operator[](size_t i) const {
  TALLY_CHECK_INDEX(i < modules_.size(), "ModuleList: index ", i, " is out of range for a list of ", modules_.size());
  return modules_[i];
}

Sequential::Sequential(std::vector<std::shared_ptr<Layer>> layers) : Layer("Sequential") {
  for (auto& layer : layers) push_back(std::move(layer));
}

void Sequential::push_back(std::shared_ptr<Layer> layer) {
  register_module(std::to_string(layers_.size()), layer);
  layers_.push_back(std::move(layer));
}

const std::shared_ptr<Layer>& Sequential::operator[](size_t i) const {
  TALLY_CHECK_INDEX(i < layers_.size(), "Sequential: index ", i, " is out of range for ", layers_.size(), " layers");
  return layers_[i];
}

Tensor Sequential::forward(const Tensor& x) {
  auto s = scope();
  Tensor y = x;
  for (const auto& layer : layers_) y = (*layer)(y);
  return y;
}

}  // namespace tally::nn
