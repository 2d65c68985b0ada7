#include "einops/common.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

namespace einops_test {

namespace fs = std::filesystem;

void TorchReference::add(const std::string& id, const std::string& kind, const std::string& text,
                         const std::vector<tally::Tensor>& inputs) {
  if (dir_.empty()) {
    std::random_device rd;
    for (int attempt = 0; attempt < 100 && dir_.empty(); ++attempt) {
      fs::path p = fs::temp_directory_path() / ("tally_einops_" + std::to_string(rd()));
      if (fs::create_directory(p)) dir_ = p.string();
    }
  }
  std::string shapes;
  for (size_t k = 0; k < inputs.size(); ++k) {
    // The logical values in row-major order, whatever the input's strides.
    tally::Tensor c = inputs[k].to(tally::kFloat32).contiguous();
    std::ofstream(dir_ + "/" + id + "_" + std::to_string(k) + ".bin", std::ios::binary)
        .write(static_cast<const char*>(c.data_ptr()), c.nbytes());
    if (k) shapes += ";";
    if (c.dim() == 0) shapes += "-";
    for (int64_t d = 0; d < c.dim(); ++d) {
      if (d) shapes += "x";
      shapes += std::to_string(c.size(d));
    }
  }
  manifest_ += id + "\t" + kind + "\t" + text + "\t" + shapes + "\n";
}

void TorchReference::add_einsum(const std::string& id, const std::string& equation, const std::vector<tally::Tensor>& inputs) {
  add(id, "einsum", equation, inputs);
}

void TorchReference::add_expr(const std::string& id, const std::string& expression, const std::vector<tally::Tensor>& inputs) {
  add(id, "expr", expression, inputs);
}

TorchReference::~TorchReference() {
  std::error_code ec;
  if (!dir_.empty()) fs::remove_all(dir_, ec);
}

std::string TorchReference::run() {
  std::ofstream(dir_ + "/cases.txt") << manifest_;
  const std::string log = dir_ + "/reference.log";
  const std::string cmd = std::string("'") + TALLY_TEST_PYTHON + "' '" + TALLY_TEST_DIR + "/einops/torch_reference.py' '" +
                          dir_ + "' > '" + log + "' 2>&1";
  if (std::system(cmd.c_str()) != 0) {
    std::stringstream ss;
    ss << std::ifstream(log).rdbuf();
    return "torch_reference.py failed: " + cmd + "\n" + ss.str();
  }
  return {};
}

tally::Tensor TorchReference::result(const std::string& id) const {
  std::vector<int64_t> shape;
  std::ifstream s(dir_ + "/" + id + ".shape");
  for (int64_t d; s >> d;) shape.push_back(d);
  tally::Tensor out = tally::empty(shape, tally::kFloat64);
  std::ifstream(dir_ + "/" + id + ".out", std::ios::binary).read(static_cast<char*>(out.data_ptr()), out.nbytes());
  return out;
}

}  // namespace einops_test
