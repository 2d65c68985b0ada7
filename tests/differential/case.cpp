// Case naming, serialisation for reference.py, and the C++ half of the layout rules (the Python
// half is make_view in reference.py; the two must build the same view from the same base).

#include "differential/case.h"

#include <sstream>
#include <stdexcept>

namespace tally::difftest {

std::string layout_name(Layout layout) {
  switch (layout) {
    case Layout::Contiguous: return "contiguous";
    case Layout::Transposed: return "transposed";
    case Layout::Sliced: return "sliced";
    case Layout::Expanded: return "expanded";
  }
  return "?";
}

static std::string shape_str(const std::vector<int64_t>& shape) {
  std::ostringstream os;
  os << "[";
  for (size_t i = 0; i < shape.size(); ++i) os << (i ? "," : "") << shape[i];
  os << "]";
  return os.str();
}

std::string Case::name() const {
  std::ostringstream os;
  if (gradient) os << "grad ";  // keeps names distinct from the forward case on the same inputs
  os << op << "(";
  for (size_t i = 0; i < inputs.size(); ++i) {
    const InputSpec& in = inputs[i];
    os << (i ? ", " : "") << dtype_name(in.dtype) << shape_str(in.shape);
    if (in.layout != Layout::Contiguous) os << "/" << layout_name(in.layout);
    if (in.domain != "normal" && in.domain != "mask") os << ":" << in.domain;
    if (gradient && is_floating_point(in.dtype) && !in.requires_grad) os << "/nograd";
  }
  os << ")";
  if (!args.empty()) os << " " << args.dump();
  return os.str();
}

nlohmann::json to_json(const Case& c, const std::string& id) {
  nlohmann::json inputs = nlohmann::json::array();
  for (const InputSpec& in : c.inputs)
    inputs.push_back({{"shape", in.shape}, {"dtype", std::string(dtype_name(in.dtype))},
                      {"domain", in.domain}, {"layout", layout_name(in.layout)},
                      {"requires_grad", in.requires_grad}});
  return {{"id", id}, {"name", c.name()}, {"op", c.op}, {"args", c.args}, {"inputs", inputs},
          {"float32_reference", c.float32_reference}, {"gradient", c.gradient}};
}

Tensor make_view(const Tensor& base, const InputSpec& spec) {
  Tensor view = base;
  const int64_t nd = base.dim();
  switch (spec.layout) {
    case Layout::Contiguous: break;
    case Layout::Transposed: view = base.transpose(nd - 2, nd - 1); break;
    case Layout::Sliced: view = base.slice(nd - 1, 1, std::nullopt, 2); break;
    case Layout::Expanded: view = base.expand(spec.shape); break;
  }
  if (view.sizes().vec() != spec.shape)
    throw std::runtime_error("make_view: " + layout_name(spec.layout) + " view of the base has shape " +
                             shape_str(view.sizes().vec()) + ", expected " +
                             shape_str(spec.shape));
  return view;
}

}  // namespace tally::difftest
