// tally::cuda on a build with CUDA: device queries, copies, pinned memory, the ledger's event
// timer and the TF32 switch.

#include "tally/cuda/runtime.h"
#include "tally/cuda/install_allocator.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <vector>

#include "tally/cuda/runtime_internal.h"
#include "tally/error/error.h"

namespace tally::cuda {

[[maybe_unused]] const bool allocator_installed = detail::install_allocator();

namespace detail {

void copy_bytes(void* dst, bool dst_on_device, const void* src, bool src_on_device, int64_t nbytes, int device,
                bool non_blocking) {
  if (nbytes == 0) return;
  DeviceGuard guard(device);
  const cudaMemcpyKind kind = dst_on_device ? (src_on_device ? cudaMemcpyDeviceToDevice : cudaMemcpyHostToDevice)
                                            : (src_on_device ? cudaMemcpyDeviceToHost : cudaMemcpyHostToHost);
  cudaStream_t stream = current_stream(device);
  CUDA_CHECK(cudaMemcpyAsync(dst, src, static_cast<size_t>(nbytes), kind, stream));
  // A copy to or from the host must be over before the host reads or reuses its bytes, unless the
  // caller asked otherwise (pinned memory, non_blocking=true); device-to-device copies stay queued.
  if (!non_blocking && kind != cudaMemcpyDeviceToDevice) CUDA_CHECK(cudaStreamSynchronize(stream));
}

void* allocate_pinned(int64_t nbytes) {
  // Pinned memory is the CUDA driver's: without a GPU, say so rather than the driver's error code.
  TALLY_CHECK_TYPE(DeviceError, device_count() > 0, "pin_memory: no CUDA GPU is available on this machine (pinned memory is for copies to one)");
  void* p = nullptr;
  CUDA_CHECK(cudaHostAlloc(&p, static_cast<size_t>(nbytes > 0 ? nbytes : 1), cudaHostAllocDefault));
  return p;
}
void free_pinned(void* ptr) { cudaFreeHost(ptr); }

EventTimer::EventTimer(int device) : device_(device) {
  DeviceGuard guard(device);
  cudaEvent_t a, b;
  CUDA_CHECK(cudaEventCreate(&a));
  CUDA_CHECK(cudaEventCreate(&b));
  start_ = a;
  stop_ = b;
  CUDA_CHECK(cudaEventRecord(a, current_stream(device)));
}
EventTimer::~EventTimer() {
  cudaEventDestroy(static_cast<cudaEvent_t>(start_));
  cudaEventDestroy(static_cast<cudaEvent_t>(stop_));
}
double EventTimer::elapsed_seconds() {
  DeviceGuard guard(device_);
  auto a = static_cast<cudaEvent_t>(start_), b = static_cast<cudaEvent_t>(stop_);
  CUDA_CHECK(cudaEventRecord(b, current_stream(device_)));
  CUDA_CHECK(cudaEventSynchronize(b));
  float ms = 0;
  CUDA_CHECK(cudaEventElapsedTime(&ms, a, b));
  return ms * 1e-3;
}

}  // namespace detail

double time_per_call(int device, const std::function<void()>& fn, int iters, int rounds) {
  for (int i = 0; i < iters; ++i) fn();
  std::vector<double> per_call;
  for (int r = 0; r < rounds; ++r) {
    detail::EventTimer timer(device);
    for (int i = 0; i < iters; ++i) fn();
    per_call.push_back(timer.elapsed_seconds() / iters);
  }
  std::sort(per_call.begin(), per_call.end());
  return per_call[per_call.size() / 2];
}

DeviceGuard::DeviceGuard(int device) {
  CUDA_CHECK(cudaGetDevice(&previous_));
  if (previous_ != device) {
    TALLY_CHECK_TYPE(DeviceError, device >= 0 && device < device_count(), "CUDA error: invalid device ordinal ", device,
                     " (this machine has ", device_count(), " GPUs)");
    CUDA_CHECK(cudaSetDevice(device));
  }
}
DeviceGuard::~DeviceGuard() {
  int now = -1;
  if (cudaGetDevice(&now) == cudaSuccess && now != previous_) cudaSetDevice(previous_);
}

int device_count() {
  static const int count = [] {
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) {
      cudaGetLastError();  // no driver or no GPU: CUDA is simply not available
      n = 0;
    }
    return n;
  }();
  return count;
}

bool is_built() { return true; }

bool is_available() { return device_count() > 0; }

void synchronize(int device) {
  if (device < 0) {
    CUDA_CHECK(cudaGetDevice(&device));
  }
  DeviceGuard guard(device);
  CUDA_CHECK(cudaDeviceSynchronize());
}

DeviceProperties get_device_properties(int device) {
  TALLY_CHECK_TYPE(DeviceError, device >= 0 && device < device_count(), "CUDA error: invalid device ordinal ", device,
                   " (this machine has ", device_count(), " GPUs)");
  cudaDeviceProp p{};
  CUDA_CHECK(cudaGetDeviceProperties(&p, device));
  DeviceProperties out;
  out.name = p.name;
  out.major = p.major;
  out.minor = p.minor;
  out.multiprocessors = p.multiProcessorCount;
  out.total_memory = static_cast<int64_t>(p.totalGlobalMem);
  out.l2_cache_bytes = p.l2CacheSize;
  out.memory_bus_bits = p.memoryBusWidth;
  // Clock rates left cudaDeviceProp in CUDA 13; the attributes still report them, in kHz.
  int sm_khz = 0, mem_khz = 0;
  if (cudaDeviceGetAttribute(&sm_khz, cudaDevAttrClockRate, device) != cudaSuccess) cudaGetLastError();
  if (cudaDeviceGetAttribute(&mem_khz, cudaDevAttrMemoryClockRate, device) != cudaSuccess) cudaGetLastError();
  out.sm_clock_ghz = sm_khz * 1e-6;
  out.memory_clock_ghz = mem_khz * 1e-6;
  return out;
}

namespace {
std::atomic<bool> tf32{false};
}
bool allow_tf32() { return tf32.load(std::memory_order_relaxed); }
void set_allow_tf32(bool allow) { tf32.store(allow, std::memory_order_relaxed); }

}  // namespace tally::cuda

namespace tally::kernels::cuda {
void raise_error(const std::string& message) { throw DeviceError(message); }
void raise_not_implemented(const std::string& message) { throw NotImplementedError(message); }
}  // namespace tally::kernels::cuda
