#include "tally/dist/link_model.h"

#include <algorithm>
#include <chrono>
#include <vector>

#include "tally/dist/comm_cost.h"
#include "tally/ops/creation.h"

namespace tally::dist {

namespace {

struct Timing {
  double seconds;
  int64_t bytes_sent;
};

/// The median of `reps` reductions of `numel` float32 elements (a multiple of the world size), after
/// one to warm up.
Timing time_reduction(ProcessGroup& group, bool ordered, int64_t numel, int reps) {
  const Tensor input = zeros({numel}), output = zeros({numel / group.size()});
  auto once = [&] { return ordered ? group.reduce_scatter(output, input) : group.allreduce(input); };
  once()->wait();
  int64_t bytes = 0;
  std::vector<double> times;
  for (int i = 0; i < reps; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    auto work = once();
    work->wait();
    bytes = work->cost().bytes_sent;
    times.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  std::nth_element(times.begin(), times.begin() + reps / 2, times.end());
  return {times[static_cast<size_t>(reps / 2)], bytes};
}

}  // namespace

LinkModel calibrate_link(ProcessGroup& group, bool ordered, int64_t numel) {
  const int p = group.size();
  if (p == 1) return {};
  const Timing small = time_reduction(group, ordered, p, 21);
  const Timing large = time_reduction(group, ordered, std::max<int64_t>(slice_numel(numel, p), 2) * p, 7);
  LinkModel m;
  const double dt = large.seconds - small.seconds;
  m.bytes_per_s = dt > 0 ? static_cast<double>(large.bytes_sent - small.bytes_sent) / dt : 0.0;
  m.latency_s = std::max(0.0, small.seconds - (m.bytes_per_s > 0 ? static_cast<double>(small.bytes_sent) / m.bytes_per_s : 0.0));
  return m;
}

}  // namespace tally::dist
