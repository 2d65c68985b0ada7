// The documentation's list of ops without a GPU kernel is the ops' own: every op that apply()
// runs registers whether it has a CUDA kernel (ops::cpu_only_ops()), and docs/cuda.md's line
// "Ops without a GPU kernel: `a`, `b`, ..." must name exactly those. This binary links the whole
// library (tests/CMakeLists.txt), so every op is registered whether or not a test calls it.

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "tally/ops/apply.h"
#include "tally/ops/registry.h"
#include "tally/tally.h"

namespace tally {
namespace {

constexpr std::string_view kListStart = "Ops without a GPU kernel: ";

/// The backticked names on docs/cuda.md's list line, in the order written.
std::vector<std::string> documented_cpu_only_ops() {
  std::ifstream in(std::string(TALLY_TEST_DIR) + "/../docs/cuda.md");
  EXPECT_TRUE(in.good()) << "docs/cuda.md not found beside tests/";
  std::string line;
  while (std::getline(in, line)) {
    if (!line.starts_with(kListStart)) continue;
    std::vector<std::string> names;
    const std::regex name("`([a-z_0-9]+)`");
    for (auto it = std::sregex_iterator(line.begin(), line.end(), name); it != std::sregex_iterator(); ++it) names.push_back((*it)[1]);
    return names;
  }
  ADD_FAILURE() << "docs/cuda.md has no line starting \"" << kListStart << "\"";
  return {};
}

std::string joined(const std::vector<std::string>& names) {
  std::ostringstream os;
  for (size_t i = 0; i < names.size(); ++i) os << (i ? ", " : "") << names[i];
  return os.str();
}

TEST(GpuGaps, DocsListTheOpsThatHaveNoCudaKernel) {
  const std::vector<std::string> registered = ops::cpu_only_ops();
  // The whole library is linked: the ops gradcheck walks are registered without a call here.
  const std::vector<std::string> differentiable = ops::differentiable_ops();
  ASSERT_GE(differentiable.size(), 30u) << "the whole library is not linked into this binary";
  EXPECT_EQ(joined(documented_cpu_only_ops()), joined(registered))
      << "docs/cuda.md's \"" << kListStart << "\" line (sorted) and the ops that declare no CUDA kernel differ";
}

TEST(GpuGaps, ElementwiseTableOpsAllRunOnTheGpu) {
  const std::vector<std::string> registered = ops::cpu_only_ops();
  for (const ops::UnaryOpInfo& op : ops::unary_ops())
    EXPECT_EQ(std::count(registered.begin(), registered.end(), op.name), 0) << op.name << " has no CUDA kernel";
  for (const ops::BinaryOpInfo& op : ops::binary_ops())
    EXPECT_EQ(std::count(registered.begin(), registered.end(), op.name), 0) << op.name << " has no CUDA kernel";
}

}  // namespace
}  // namespace tally
