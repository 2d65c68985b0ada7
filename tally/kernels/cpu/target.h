#pragma once
// The CPU target this translation unit is compiled for, as a namespace name, and whether it is the
// primary pass of its source file (Note [CPU kernel dispatch] in kernels/cpu/dispatch.h).
//
// TALLY_CPU_TARGET follows the compiler's ISA macros, so the same header names the target of a
// kernel pass (-march=x86-64-v4 gives avx512, x86-64-v3 avx2), of the primary pass (baseline in a
// portable build) and of a -march=native build (whatever the build machine has):
//   avx512    AVX-512 F + BW + DQ + VL (x86-64-v4)
//   avx2      AVX2 + FMA (x86-64-v3, which also brings F16C)
//   baseline  anything else (plain x86-64, or another architecture)

// TALLY_CPU_LEVEL is the same choice as a number, for #if: 2, 1 or 0.
#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512DQ__) && defined(__AVX512VL__)
#define TALLY_CPU_TARGET avx512
#define TALLY_CPU_LEVEL 2
#elif defined(__AVX2__) && defined(__FMA__)
#define TALLY_CPU_TARGET avx2
#define TALLY_CPU_LEVEL 1
#else
#define TALLY_CPU_TARGET baseline
#define TALLY_CPU_LEVEL 0
#endif

// A kernel-only pass (TALLY_KERNELS_ONLY, set by CMake) compiles a source file's kernels and
// nothing else: public functions, meta, cost and backward exist once, in the primary pass.
#if defined(TALLY_KERNELS_ONLY)
#define TALLY_PRIMARY_PASS 0
#else
#define TALLY_PRIMARY_PASS 1
#endif
