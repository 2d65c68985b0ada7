// tally's all-reduce against Open MPI's own MPI_Allreduce loop, in the same run and on the same
// ranks: float32 buffers of 1 to 256 MiB, the median of `reps` each, alternating the two. tally's
// path is dist::world().allreduce (queued to its communication thread, Note [One thread talks to
// MPI]); Open MPI's is MPI_Allreduce from the main thread while tally's thread is idle, on a buffer
// from the same allocator. Bus
// bandwidth is NCCL's: 2·(p−1)/p·S over the time. Usage: mpirun -np P allreduce [reps].
// Rank 0 prints one JSON line per size.

#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "tally/dist/process_group.h"
#include "tally/tally.h"

using namespace tally;

namespace {

template <class F>
double seconds_of(F&& f) {
  const auto t0 = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

double median(std::vector<double> v) {
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  const int reps = argc > 1 ? std::atoi(argv[1]) : 11;
  dist::ProcessGroup& group = dist::world();  // initialises MPI under mpirun
  const int p = group.size();
  for (int64_t mib = 1; mib <= 256; mib *= 2) {
    const int64_t n = mib << 18;  // float32 elements
    // Both in tally's allocator, so that neither path gets pages (or huge pages) the other lacks.
    const Tensor ours = ones({n}), theirs = ones({n});
    std::vector<double> ours_s, theirs_s;
    for (int i = 0; i <= reps; ++i) {  // the first of each is a warm-up
      MPI_Barrier(MPI_COMM_WORLD);
      const double a = seconds_of([&] { group.allreduce(ours)->wait(); });
      MPI_Barrier(MPI_COMM_WORLD);
      const double b = seconds_of([&] { MPI_Allreduce(MPI_IN_PLACE, theirs.data_ptr(), static_cast<int>(n), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD); });
      if (i > 0) ours_s.push_back(a), theirs_s.push_back(b);
    }
    // Every rank's time is the slowest rank's: take the maximum of the medians.
    double t[2] = {median(ours_s), median(theirs_s)};
    MPI_Allreduce(MPI_IN_PLACE, t, 2, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    const double bus = 2.0 * (p - 1) / p * static_cast<double>(n * 4);
    if (group.rank() == 0)
      std::printf("{\"ranks\": %d, \"mib\": %lld, \"tally_s\": %.6g, \"mpi_s\": %.6g, \"tally_bus_gb_s\": %.3f, \"mpi_bus_gb_s\": %.3f, "
                  "\"tally_over_mpi_bandwidth\": %.3f}\n",
                  p, static_cast<long long>(mib), t[0], t[1], bus / t[0] / 1e9, bus / t[1] / 1e9, t[1] / t[0]);
  }
  return 0;
}
