// A case passes when tally and torch agree on the outcome: both raise, or both return results
// of the same dtype, shape and (within tolerance) values. An "upcast" reference (torch lacks the
// half-precision CPU kernel) is compared the same way; it is float32 math rounded to the half type.
// Gradient cases then also compare the inputs' gradients (gradient_check.h).
//
// On a machine with a GPU every case runs a second time with its inputs on cuda:0, against the
// same torch results: the CUDA ops are then checked against PyTorch directly, not only against
// tally's CPU. A case whose op has no CUDA kernel is counted, not failed.

#include "differential/family_runner.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <optional>
#include <set>

#include "differential/compare.h"
#include "differential/gradient_check.h"
#include "differential/known_failures.h"
#include "differential/npy_tensor.h"
#include "differential/ops_table.h"
#include "differential/reference_run.h"
#include "tally/cuda/runtime.h"

namespace tally::difftest {
namespace {

/// The families whose new outputs are laid out as PyTorch's are: elementwise ops (Note [Output
/// layout] in tally/core/geometry.h), views, copies and the *_like factories (core/memory_format.h);
/// in-place and out= results are the written tensor itself.
bool checks_layout(const std::string& family) {
  static const std::set<std::string> families = {"Unary", "Binary", "Scalar", "Promotion", "Comparison", "Pow",
                                                 "InPlace", "Forms", "Selection", "Logical", "Conversion", "Shape"};
  return families.count(family) > 0;
}

// Why the case fails on `device`, or nullopt when tally agrees with torch; `no_kernel` is set
// when the op has no kernel for the device.
std::optional<std::string> check(const ReferencedCase& rc, const std::string& dir, const Device& device, bool& no_kernel) {
  const std::string status = rc.result.at("status");
  if (status == "harness_error") return "reference.py called torch wrongly: " + rc.result.at("error").get<std::string>();
  std::vector<Tensor> bases, views;
  for (size_t k = 0; k < rc.c.inputs.size(); ++k) {
    const InputSpec& spec = rc.c.inputs[k];
    bases.push_back(to_tensor(load_npy(dir, rc.id + "_in" + std::to_string(k) + ".npy", spec.dtype), spec.dtype).to(device));
    if (rc.c.gradient && spec.requires_grad) bases.back().requires_grad_();  // before the view, as in torch
    views.push_back(make_view(bases.back(), spec));
  }
  std::vector<Tensor> outs;
  try {
    outs = run_tally_op(rc.c.op, views, bases, rc.c.args);
  } catch (const Error& e) {
    // An op the GPU has no kernel for says so (NotImplementedError naming CUDA): counted apart.
    if (device.is_cuda() && dynamic_cast<const NotImplementedError*>(&e) && std::string(e.what()).find("CUDA") != std::string::npos) {
      no_kernel = true;
      return std::nullopt;
    }
    if (status == "error") return std::nullopt;
    return "tally raised \"" + std::string(e.what()) + "\" but torch returned a result";
  } catch (const std::exception& e) {
    return "unexpected non-tally exception: " + std::string(e.what());
  }
  if (status == "error") {
    std::string got = "tally returned a result";
    if (!outs.empty()) got += " of dtype " + std::string(dtype_name(outs[0].dtype()));
    return "torch raises \"" + rc.result.at("error").get<std::string>() + "\" but " + got;
  }
  const nlohmann::json& want = rc.result.at("outputs");
  if (outs.size() != want.size())
    return "tally returned " + std::to_string(outs.size()) + " outputs, torch " + std::to_string(want.size());
  for (size_t k = 0; k < outs.size(); ++k) {
    const Dtype want_dtype = dtype_from_name(want[k].at("dtype").get<std::string>());
    const NpyArray expected = load_npy(dir, rc.id + "_out" + std::to_string(k) + ".npy", want_dtype);
    if (auto why = compare(outs[k], expected, want_dtype, rc.c.accumulates, rc.c.exact))
      return (outs.size() > 1 ? "output " + std::to_string(k) + ": " : "") + *why +
             (status == "upcast" ? " [reference: float32 math rounded to the half type]" : "");
    if (checks_layout(rc.c.family))
      if (auto why = compare_strides(outs[k], want[k].at("strides").get<std::vector<int64_t>>()))
        return (outs.size() > 1 ? "output " + std::to_string(k) + ": " : "") + *why;
  }
  if (rc.c.gradient) return check_gradients(rc, dir, bases, outs);
  return std::nullopt;
}

void run_family_on(const std::string& family, const Device& device) {
  const ReferenceRun& run = reference_run();
  ASSERT_TRUE(run.error.empty()) << run.error;
  const char* verbose_env = std::getenv("TALLY_DIFF_VERBOSE");
  const bool verbose = verbose_env && std::string(verbose_env) == "1";
  const std::vector<KnownFailure>& known = known_failures();
  std::vector<int> matched(known.size(), 0), matched_failing(known.size(), 0);
  int total = 0, passed = 0, raised = 0, upcast = 0, known_count = 0, no_kernel = 0;
  const std::string where = device.is_cpu() ? "" : " on " + device.str();
  for (const ReferencedCase& rc : run.cases) {
    if (rc.c.family != family) continue;
    ++total;
    std::optional<std::string> problem;
    bool without_kernel = false;
    try {
      problem = check(rc, run.dir, device, without_kernel);
    } catch (const std::exception& e) {
      problem = std::string("harness error: ") + e.what();
    }
    if (without_kernel) {
      ++no_kernel;
      continue;
    }
    const std::string name = rc.c.name() + where;
    size_t entry = known.size();
    for (size_t i = 0; i < known.size() && entry == known.size(); ++i)
      if (std::regex_search(name, known[i].re)) entry = i;
    if (entry < known.size()) ++matched[entry];
    if (!problem) {
      ++passed;
      raised += rc.result.at("status") == "error";
      upcast += rc.result.at("status") == "upcast";
    } else if (entry < known.size()) {
      ++known_count;
      ++matched_failing[entry];
      if (verbose) std::printf("[differential] known failure: %s\n    %s\n", name.c_str(), problem->c_str());
    } else {
      ADD_FAILURE() << name << "\n    " << *problem;
    }
  }
  for (size_t i = 0; i < known.size(); ++i)
    if (matched[i] > 0 && matched_failing[i] == 0)
      std::printf("[differential] known failure /%s/ now passes in %s: remove it from known_failures.cpp\n",
                  known[i].pattern.c_str(), family.c_str());
  EXPECT_GT(total, 0) << "no cases for family " << family;
  std::printf("[differential] %s%s: %d cases, %d passed (%d both raise, %d vs float32 reference), %d known failures",
              family.c_str(), where.c_str(), total, passed, raised, upcast, known_count);
  if (device.is_cuda()) std::printf(", %d without a CUDA kernel", no_kernel);
  std::printf("\n");
}

}  // namespace

void run_family(const std::string& family) {
  run_family_on(family, Device(kCPU));
  if (cuda::is_available()) run_family_on(family, Device("cuda:0"));
}

}  // namespace tally::difftest
