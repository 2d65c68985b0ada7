#pragma once
// Note [CPU kernel dispatch]
// A portable build (the default; TALLY_NATIVE=OFF) runs on any x86-64 and still uses AVX-512 or
// AVX2 where the CPU has them. Each source file that holds hot loops is compiled three times
// (CMakeLists.txt, TALLY_KERNEL_SOURCES):
//   - the primary pass, for baseline x86-64 like the rest of the library: everything in the file,
//     with its kernels built for baseline;
//   - two kernel-only passes, -march=x86-64-v3 (avx2) and -march=x86-64-v4 (avx512), with
//     TALLY_KERNELS_ONLY defined: the file's public functions (and so meta, cost and backward,
//     which only they reach) are left out by `#if TALLY_PRIMARY_PASS`, so only the kernels listed
//     at the end of the file are compiled.
// An op's kernel is a static member of its op struct (`kernel`, next to `f`/`vec`, meta and
// backward: the op stays defined in one place), and its compute calls it through
// `cpu_kernels().run<&Op::kernel>(args...)`. TALLY_CPU_KERNELS(file, &A::kernel, ...) at the end of
// the file defines, in every pass, a table of the listed kernels, `tables_<target>::file()`, and
// in the primary pass `cpu_kernels()`, which picks the table of the set chosen once per process
// (the CPU's best, or TALLY_CPU_KERNELS=avx512|avx2|baseline): the first run of each kernel looks
// its index up in the primary list and caches the chosen target's entry, so no index is kept by
// hand, and a kernel left out of the list fails on its first call with an InternalError.
//
// Why not GCC's target_clones or target pragmas: vec_math.h selects its intrinsics with the
// preprocessor (__AVX512F__), which a function attribute does not change, and a kernel is a
// template over the op (its functor, its dtype); compiling the whole file per target keeps both.
//
// The ODR hazard: an inline function or template instantiation with external linkage that a
// kernel pass emits (std::vector<float>::resize, say) has the same name as the primary pass's
// copy, and the linker keeps one of them: an AVX-512 copy could then run on a CPU without AVX-512.
// So everything a kernel pass defines has internal linkage or lives in a namespace named after
// its target: op structs are in anonymous namespaces, the kernel headers (vec_math.h,
// elementwise.h, strided_loop.h, reduce.h, parallel.h, box_muller.h) put their code in
// `inline namespace TALLY_CPU_TARGET`, std::vector and friends stay out of kernels (a scratch
// buffer is a type of the file's own), the dtype conversions are always inlined (dtype/half.h),
// and kernels use plain dispatch() (the op's checks ran before, in the primary pass), whose
// error, like unknown_kernel_dtype's, is formatted out of line. The tests
// kernel_pass_symbols_<target> (tests/kernels/check_kernel_symbols.py) list the external symbols
// of every kernel-pass object and fail on any outside its target's namespaces: the hazard shows
// up there, not as a SIGILL on someone else's CPU.

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <utility>

#include "tally/dtype/dtype.h"
#include "tally/kernels/cpu/target.h"

namespace tally::machine {
struct CpuInfo;
}

namespace tally::kernels {

/// The kernel sets a portable build carries, in order of what they need of the CPU.
enum class CpuKernelSet : uint8_t { Baseline, Avx2, Avx512 };

/// "baseline", "avx2" or "avx512".
std::string_view kernel_set_name(CpuKernelSet set);

/// The best set `cpu` can run: avx512 needs AVX-512 F, BW, DQ and VL (x86-64-v4), avx2 needs AVX2,
/// FMA and F16C (x86-64-v3); baseline runs anywhere.
CpuKernelSet best_cpu_kernel_set(const machine::CpuInfo& cpu);

/// The set to run on `cpu`: its best, or the one `forced` names (TALLY_CPU_KERNELS). Raises
/// ValueError for an unknown name or for a set the CPU cannot run, naming both.
CpuKernelSet choose_cpu_kernel_set(const machine::CpuInfo& cpu, std::optional<std::string_view> forced);

/// The kernel set this process runs ("avx512", "avx2" or "baseline"), chosen once on first use;
/// in a -march=native build, the target of that build. Raises ValueError for a bad TALLY_CPU_KERNELS.
std::string_view cpu_kernel_set();

/// Why cpu_kernel_set() is what it is: "chosen from CPU features", "forced by TALLY_CPU_KERNELS"
/// or "built with -march=native".
std::string_view cpu_kernel_set_reason();

/// A kernel entry point with its type erased; KernelTable::run casts it back.
using AnyKernel = void (*)();
/// One pass's kernels of one source file, in the order of its TALLY_CPU_KERNELS list.
using KernelList = std::span<const AnyKernel>;

namespace detail {
/// The entry of the chosen set's list at the index `key` has in `primary` (Note [CPU kernel dispatch]).
AnyKernel select_kernel(KernelList primary, KernelList (*avx2)(), KernelList (*avx512)(), AnyKernel key);
/// Raised from a kernel instantiated for a dtype its op's checks refuse (so never reached): defined
/// once, in the primary pass, so that kernel passes format no message.
[[noreturn]] void unknown_kernel_dtype(Dtype d);
}  // namespace detail

inline namespace TALLY_CPU_TARGET {

/// A source file's kernels: the primary pass's list and, in a portable build, the other targets'.
struct KernelTable {
  KernelList primary;
  KernelList (*avx2)() = nullptr;
  KernelList (*avx512)() = nullptr;

  /// Run kernel K (one of the file's list) in the chosen set's build.
  template <auto K, class... Args>
  decltype(auto) run(Args&&... args) const {
    static const auto chosen = reinterpret_cast<decltype(K)>(::tally::kernels::detail::select_kernel(primary, avx2, avx512, reinterpret_cast<AnyKernel>(K)));
    return chosen(std::forward<Args>(args)...);
  }
};

/// The listed kernels with their types erased.
template <class... Fn>
std::array<AnyKernel, sizeof...(Fn)> erase_kernels(Fn... fn) {
  return {reinterpret_cast<AnyKernel>(fn)...};
}

}  // namespace TALLY_CPU_TARGET
}  // namespace tally::kernels

// Files that include this header without listing kernels (the CLI, tests) never define it.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"
namespace {
/// The kernels of the including source file for the CPU at hand; its TALLY_CPU_KERNELS defines it.
const ::tally::kernels::KernelTable& cpu_kernels();
}  // namespace
#pragma GCC diagnostic pop

#define TALLY_KERNEL_CAT_(a, b) a##b
#define TALLY_KERNEL_CAT(a, b) TALLY_KERNEL_CAT_(a, b)
#if TALLY_PRIMARY_PASS && defined(TALLY_KERNEL_PASSES)
#define TALLY_KERNEL_OTHER_TARGETS_(file)                   \
  namespace tally::kernels::tables_avx2 {                   \
  KernelList file();                                        \
  }                                                         \
  namespace tally::kernels::tables_avx512 {                 \
  KernelList file();                                        \
  }
#define TALLY_KERNEL_OTHER_GETTERS_(file) &::tally::kernels::tables_avx2::file, &::tally::kernels::tables_avx512::file
#else
#define TALLY_KERNEL_OTHER_TARGETS_(file)
#define TALLY_KERNEL_OTHER_GETTERS_(file) nullptr, nullptr
#endif

/// The kernels of this source file (Note [CPU kernel dispatch]): `file` names its table, the rest
/// are the kernels (`&Op::kernel`) its computes run through cpu_kernels(). At global scope, once,
/// at the end of the file.
#define TALLY_CPU_KERNELS(file, ...)                                                                    \
  namespace tally::kernels::TALLY_KERNEL_CAT(tables_, TALLY_CPU_TARGET) {                               \
  KernelList file() {                                                                                   \
    static const auto list = ::tally::kernels::erase_kernels(__VA_ARGS__);                              \
    return list;                                                                                        \
  }                                                                                                     \
  }                                                                                                     \
  TALLY_KERNEL_OTHER_TARGETS_(file)                                                                     \
  namespace {                                                                                           \
  const ::tally::kernels::KernelTable& cpu_kernels() {                                                  \
    static const ::tally::kernels::KernelTable table{                                                   \
        ::tally::kernels::TALLY_KERNEL_CAT(tables_, TALLY_CPU_TARGET)::file(), TALLY_KERNEL_OTHER_GETTERS_(file)}; \
    return table;                                                                                       \
  }                                                                                                     \
  }
