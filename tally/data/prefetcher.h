#pragma once
// A background thread that prepares the next batches while the training step runs. For a model
// on the GPU it is the lecture's x.pin_memory(); x.to(device, non_blocking=True): the worker
// stages each batch in page-locked memory and queues its copy to the device, off the training
// thread.

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <mutex>
#include <thread>
#include <utility>

#include "tally/data/loader.h"

namespace tally::data {

/// Runs a TokenLoader on a worker thread, `depth` batches ahead of the caller, and hands the
/// batches over on `device`.
///
/// Note [Prefetching to the GPU]
/// For a CUDA device the worker pins each batch and copies it with non_blocking=true, which the
/// driver runs as a DMA from the page-locked pages without a staging copy. All of tally's work on
/// a device is queued on one stream, so the copy is ordered after the steps already queued and
/// before any use of the batch; the worker then waits for it (the wait blocks the worker, not the
/// training thread) before it frees the pinned pages, which must outlive the copy.
///
/// Note [Prefetcher state]
/// The worker has already drawn batches the caller has not seen, so its loader's state is
/// ahead of the caller's. Each queued batch therefore carries the loader's state right after
/// it, and state() returns the one of the last batch the caller took: a checkpoint saved after
/// batch k resumes (in a TokenLoader or a new Prefetcher) at batch k + 1 exactly.
class Prefetcher {
 public:
  /// Starts the worker; ValueError for a depth below 1.
  explicit Prefetcher(TokenLoader loader, int64_t depth = 2, Device device = Device(kCPU));
  /// Stops the worker after the batch it is making, if any, and joins it.
  ~Prefetcher();
  Prefetcher(const Prefetcher&) = delete;
  Prefetcher& operator=(const Prefetcher&) = delete;

  /// The next (x, y), waiting for the worker if it is not ready. An error the worker's loader
  /// raised is rethrown here, in order, by this and every later call.
  std::pair<Tensor, Tensor> next();
  /// The loader's state after the last batch next() returned (Note [Prefetcher state]).
  LoaderState state() const;

 private:
  struct Item {
    std::pair<Tensor, Tensor> batch;
    LoaderState after;         // the loader's state once this batch was made
    std::exception_ptr error;  // set instead of batch when making it failed
  };
  void work();

  TokenLoader loader_;  // used by the worker only, once started
  const int64_t depth_;
  const Device device_;
  LoaderState consumed_;  // state after the last batch next() returned
  mutable std::mutex mu_;
  std::condition_variable ready_;  // an item was queued
  std::condition_variable space_;  // an item was taken, or stop_
  std::deque<Item> queue_;
  bool stop_ = false;
  std::thread worker_;  // last: starts once every field above exists
};

}  // namespace tally::data
