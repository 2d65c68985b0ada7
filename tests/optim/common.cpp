#include "optim/common.h"

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

namespace optim_test {

using namespace tally;
namespace fs = std::filesystem;

namespace {

Tensor random_tensor(const std::vector<int64_t>& shape, float scale, std::mt19937& rng) {
  Tensor t = empty(shape, kFloat32);
  std::normal_distribution<float> normal(0.0f, scale);
  float* d = t.data_ptr<float>();
  for (int64_t i = 0; i < t.numel(); ++i) d[i] = normal(rng);
  return t;
}

}  // namespace

const Problem& Problem::get() {
  static const Problem problem = [] {
    Problem p;
    p.shapes = {{4, 5}, {3, 5}, {37}, {200, 200}};
    std::mt19937 rng(1234);
    for (const auto& s : p.shapes) p.initial.push_back(random_tensor(s, 1.0f, rng));
    for (int t = 0; t < kSteps; ++t) {
      std::vector<Tensor> step;
      for (size_t k = 0; k < p.shapes.size(); ++k) {
        Tensor g = random_tensor(p.shapes[k], 0.5f, rng);
        step.push_back(k == 2 && t % 3 == 0 ? Tensor() : g);
      }
      p.grads.push_back(std::move(step));
    }
    return p;
  }();
  return problem;
}

std::vector<Tensor> Problem::fresh_params(Dtype dtype) const {
  std::vector<Tensor> params;
  for (size_t k = 0; k < initial.size(); ++k) {
    if (k == 1) {
      // Stored transposed: the parameter is a [3, 5] view with strides [1, 3].
      params.push_back(initial[k].t().contiguous().to(dtype, /*non_blocking=*/false, /*copy=*/true).t());
      EXPECT_FALSE(params.back().is_contiguous());
    } else {
      params.push_back(initial[k].to(dtype, /*non_blocking=*/false, /*copy=*/true));
    }
    params.back().requires_grad_();
  }
  return params;
}

void Problem::set_grads(std::vector<Tensor>& params, int t) const {
  for (size_t k = 0; k < params.size(); ++k) {
    const Tensor& g = grads[t][k];
    params[k].set_grad(g.defined() ? g.to(params[k].dtype(), /*non_blocking=*/false, /*copy=*/true) : Tensor());
  }
}

TorchReference::TorchReference() {
  std::random_device rd;
  for (int attempt = 0; attempt < 100 && dir_.empty(); ++attempt) {
    fs::path p = fs::temp_directory_path() / ("tally_optim_" + std::to_string(rd()));
    if (fs::create_directory(p)) dir_ = p.string();
  }
  const Problem& problem = Problem::get();
  auto write = [&](const std::string& name, const Tensor& t) {
    std::ofstream(dir_ + "/" + name, std::ios::binary).write(static_cast<const char*>(t.data_ptr()), t.nbytes());
  };
  std::string shapes;
  for (size_t k = 0; k < problem.shapes.size(); ++k) {
    write(std::string("p").append(std::to_string(k)).append(".bin"), problem.initial[k]);
    if (k) shapes += ";";
    for (size_t d = 0; d < problem.shapes[k].size(); ++d) shapes.append(d ? "x" : "").append(std::to_string(problem.shapes[k][d]));
  }
  for (int t = 0; t < Problem::kSteps; ++t)
    for (size_t k = 0; k < problem.shapes.size(); ++k)
      if (problem.grads[t][k].defined()) write(std::string("g").append(std::to_string(t)).append("_").append(std::to_string(k)).append(".bin"), problem.grads[t][k]);
  manifest_ = "params " + shapes + "\nsteps " + std::to_string(Problem::kSteps) + "\n";
}

TorchReference::~TorchReference() {
  std::error_code ec;
  if (!dir_.empty()) fs::remove_all(dir_, ec);
}

void TorchReference::add_optim(const std::string& id, const std::string& expression) {
  manifest_ += id + "\toptim\t" + expression + "\n";
}

void TorchReference::add_clip(const std::string& id, double max_norm, double norm_type) {
  std::ostringstream os;
  os.precision(17);
  os << max_norm << " " << (std::isinf(norm_type) ? std::string(norm_type > 0 ? "inf" : "-inf") : std::to_string(norm_type));
  manifest_ += id + "\tclip\t" + os.str() + "\n";
}

std::string TorchReference::run() {
  std::ofstream(dir_ + "/cases.txt") << manifest_;
  const std::string log = dir_ + "/reference.log";
  const std::string cmd = std::string("'") + TALLY_TEST_PYTHON + "' '" + TALLY_TEST_DIR + "/optim/torch_reference.py' '" + dir_ +
                          "' > '" + log + "' 2>&1";
  if (std::system(cmd.c_str()) != 0) {
    std::stringstream ss;
    ss << std::ifstream(log).rdbuf();
    return "torch_reference.py failed: " + cmd + "\n" + ss.str();
  }
  std::string version;
  std::ifstream(dir_ + "/torch_version.txt") >> version;
  torch_major_ = std::atoi(version.c_str());
  return {};
}

bool TorchReference::has(const std::string& name) const { return fs::exists(dir_ + "/" + name + ".bin"); }

Tensor TorchReference::result(const std::string& name, IntArrayRef sizes) const {
  Tensor out = empty(sizes, kFloat64);
  std::ifstream f(dir_ + "/" + name + ".bin", std::ios::binary);
  f.read(static_cast<char*>(out.data_ptr()), out.nbytes());
  EXPECT_EQ(f.gcount(), out.nbytes()) << name << ": the reference wrote another size";
  return out;
}

void expect_close(const Tensor& got, const Tensor& want, double rtol, const std::string& what) {
  ASSERT_EQ(got.sizes().vec(), want.sizes().vec()) << what;
  const Tensor a = got.to(kFloat64).contiguous(), b = want.to(kFloat64).contiguous();
  const double* x = a.data_ptr<double>();
  const double* y = b.data_ptr<double>();
  double largest = 0;
  for (int64_t i = 0; i < b.numel(); ++i) largest = std::max(largest, std::abs(y[i]));
  double worst = 0;
  int64_t worst_at = 0;
  for (int64_t i = 0; i < b.numel(); ++i) {
    const double rel = std::abs(x[i] - y[i]) / std::max(std::abs(y[i]), 1e-3 * largest);
    if (rel > worst || std::isnan(rel)) worst = rel, worst_at = i;
  }
  EXPECT_LE(worst, rtol) << what << ": element " << worst_at << " is " << x[worst_at] << ", PyTorch's " << y[worst_at];
  if (std::getenv("TALLY_OPTIM_VERBOSE")) std::printf("%-40s worst relative error %.3g\n", what.c_str(), worst);
}

}  // namespace optim_test
