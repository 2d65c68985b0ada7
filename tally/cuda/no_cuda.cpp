// A build without CUDA (TALLY_CUDA off, or no toolkit found): tally::cuda answers "no GPU", and
// every entry point that needs one raises DeviceError. No CUDA tensor can be made in such a
// build (allocation is the first thing to raise), so ops never reach the kernel stubs.

#include "tally/cuda/runtime.h"
#include "tally/cuda/install_allocator.h"
#include "tally/error/error.h"
#include "tally/kernels/cuda/kernels.h"

namespace tally::cuda {

[[maybe_unused]] const bool allocator_installed = detail::install_allocator();

namespace detail_nc {
[[noreturn]] void no_cuda() {
  throw DeviceError("Torch not compiled with CUDA enabled: this tally was built without CUDA "
                    "(configure with -DTALLY_CUDA=ON on a machine with the CUDA toolkit)");
}
}  // namespace detail_nc
using detail_nc::no_cuda;

bool is_built() { return false; }
bool is_available() { return false; }
int device_count() { return 0; }
void synchronize(int) { no_cuda(); }
DeviceProperties get_device_properties(int) { no_cuda(); }
int64_t memory_allocated(int) { return 0; }
int64_t max_memory_allocated(int) { return 0; }
int64_t memory_reserved(int) { return 0; }
MemoryStats memory_stats(int) { return {}; }
void reset_peak_memory_stats(int) {}
void merge_peak_memory_stats(const MemoryStats&, int) {}
void empty_cache() {}
bool allow_tf32() { return false; }
double time_per_call(int, const std::function<void()>&, int, int) { no_cuda(); }
DeviceGuard::DeviceGuard(int) { no_cuda(); }
DeviceGuard::~DeviceGuard() = default;
void set_allow_tf32(bool) {}

namespace detail {
void* allocate(int64_t, MemoryCategory, int) { no_cuda(); }
void deallocate(void*, int64_t, MemoryCategory, int) {}
void recategorize(int64_t, MemoryCategory, MemoryCategory, int) {}
void copy_bytes(void*, bool, const void*, bool, int64_t, int, bool) { no_cuda(); }
void* allocate_pinned(int64_t) { no_cuda(); }
void free_pinned(void*) {}
EventTimer::EventTimer(int) { no_cuda(); }
EventTimer::~EventTimer() = default;
double EventTimer::elapsed_seconds() { no_cuda(); }
}  // namespace detail

}  // namespace tally::cuda

namespace tally::kernels::cuda {
void binary(BinaryOp, const Launch&) { ::tally::cuda::detail_nc::no_cuda(); }
void unary(UnaryOp, const Launch&) { ::tally::cuda::detail_nc::no_cuda(); }
void pow_scalar(const Launch&, double) { ::tally::cuda::detail_nc::no_cuda(); }
void clamp(const Launch&, bool, double, bool, double) { ::tally::cuda::detail_nc::no_cuda(); }
void pointwise(PointwiseOp, const Launch&, double) { ::tally::cuda::detail_nc::no_cuda(); }
void lerp(const Launch&, double) { ::tally::cuda::detail_nc::no_cuda(); }
void where(const Launch&) { ::tally::cuda::detail_nc::no_cuda(); }
void copy(const Launch&) { ::tally::cuda::detail_nc::no_cuda(); }
void fill(const Launch&, const unsigned char[8]) { ::tally::cuda::detail_nc::no_cuda(); }
void reduce_rows(ReduceOp, uint8_t, const void*, int64_t, int64_t, uint8_t, void*, void*) { ::tally::cuda::detail_nc::no_cuda(); }
int64_t reduce_rows_scratch_bytes() { ::tally::cuda::detail_nc::no_cuda(); }
void softmax_rows(uint8_t, const void*, void*, int64_t, int64_t, bool) { ::tally::cuda::detail_nc::no_cuda(); }
void index_select_rows(uint8_t, const void*, void*, const int64_t*, int64_t, int64_t, int64_t, int64_t) {
  ::tally::cuda::detail_nc::no_cuda();
}
void index_add_rows(uint8_t, void*, const int64_t*, const void*, int64_t, int64_t, int64_t, int64_t) {
  ::tally::cuda::detail_nc::no_cuda();
}
void adam_update(uint8_t, int64_t, void*, const void*, void*, void*, void*, const optim::AdamScalars&) {
  ::tally::cuda::detail_nc::no_cuda();
}
void sgd_update(uint8_t, int64_t, void*, const void*, void*, const optim::SgdScalars&) { ::tally::cuda::detail_nc::no_cuda(); }
void adagrad_update(uint8_t, int64_t, void*, const void*, void*, const optim::AdagradScalars&) { ::tally::cuda::detail_nc::no_cuda(); }
void rmsprop_update(uint8_t, int64_t, void*, const void*, void*, void*, void*, const optim::RmspropScalars&) {
  ::tally::cuda::detail_nc::no_cuda();
}
void matmul(uint8_t, uint8_t, int64_t, int64_t, int64_t, int64_t, Matrix, Matrix, void*, const float*, const float*, bool) {
  ::tally::cuda::detail_nc::no_cuda();
}
}  // namespace tally::kernels::cuda
