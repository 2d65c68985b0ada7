#include "tally/data/prefetcher.h"

#include "tally/cuda/runtime.h"
#include "tally/error/error.h"

namespace tally::data {

Prefetcher::Prefetcher(TokenLoader loader, int64_t depth, Device device)
    : loader_(std::move(loader)), depth_(depth), device_(device), consumed_(loader_.state()) {
  TALLY_CHECK(depth >= 1, "Prefetcher: depth must be at least 1, got ", depth);
  TALLY_CHECK_TYPE(DeviceError, !device.is_cuda() || cuda::is_available(), "Prefetcher: batches for ", device.str(),
                   " but CUDA is not available");
  worker_ = std::thread([this] { work(); });
}

Prefetcher::~Prefetcher() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  space_.notify_all();
  worker_.join();
}

void Prefetcher::work() {
  while (true) {
    {
      std::unique_lock lock(mu_);
      space_.wait(lock, [&] { return stop_ || static_cast<int64_t>(queue_.size()) < depth_; });
      if (stop_) return;
    }
    Item item;
    try {
      item.batch = loader_.next();
      item.after = loader_.state();
      if (device_.is_cuda()) {  // Note [Prefetching to the GPU]
        const Tensor x = item.batch.first.pin_memory(), y = item.batch.second.pin_memory();
        item.batch = {x.to(device_, /*non_blocking=*/true), y.to(device_, /*non_blocking=*/true)};
        cuda::synchronize(device_.index());
      }
    } catch (...) {
      item.error = std::current_exception();
    }
    const bool failed = item.error != nullptr;
    {
      std::lock_guard lock(mu_);
      queue_.push_back(std::move(item));
    }
    ready_.notify_one();
    if (failed) return;  // the error stays queued for every later next()
  }
}

std::pair<Tensor, Tensor> Prefetcher::next() {
  std::unique_lock lock(mu_);
  ready_.wait(lock, [&] { return !queue_.empty(); });
  if (queue_.front().error) std::rethrow_exception(queue_.front().error);
  Item item = std::move(queue_.front());
  queue_.pop_front();
  consumed_ = item.after;
  lock.unlock();
  space_.notify_one();
  return std::move(item.batch);
}

LoaderState Prefetcher::state() const {
  std::lock_guard lock(mu_);
  return consumed_;
}

}  // namespace tally::data
