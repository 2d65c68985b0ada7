#pragma once
// The α-β model of this job's link (Hockney's): a collective that sends b bytes from each rank takes
// α + b/β, α its latency (the messages' start-up, the synchronisation) and β the bandwidth the
// ranks see. Calibrated when a data-parallel run starts, with the collective its gradient
// reduction runs, at two sizes; the run then reports, each step, its communication time as
// predicted by the model against the time measured.

#include <cstdint>

#include "tally/dist/process_group.h"

namespace tally::dist {

struct LinkModel {
  double latency_s = 0;    ///< α
  double bytes_per_s = 0;  ///< β: bytes sent per rank per second, by the bandwidth-optimal count (comm_cost.h)
  /// `collectives` collectives that send `bytes_sent` bytes from this rank in all.
  double seconds(int64_t collectives, int64_t bytes_sent) const {
    return static_cast<double>(collectives) * latency_s + (bytes_per_s > 0 ? static_cast<double>(bytes_sent) / bytes_per_s : 0.0);
  }
};

/// Measure the link now, on every rank of `group` at once (a collective call): the median time of
/// a reduction (`ordered`: a reduce-scatter, else an all-reduce) of one float32 per rank and of
/// `numel` float32s in all (the run's largest bucket: the caches see the sizes the run sends),
/// fitted by α + b/β. One process: α = 0 and no bandwidth (nothing is sent).
LinkModel calibrate_link(ProcessGroup& group, bool ordered, int64_t numel);

}  // namespace tally::dist
