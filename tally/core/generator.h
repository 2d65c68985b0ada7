#pragma once
// Random numbers. A Generator is counter-based: element i of a draw is a hash of (seed,
// offset + i), so results do not depend on the number of threads, and the whole state is two
// integers — which a checkpoint stores to resume bit-exactly.

#include <atomic>
#include <cstdint>

namespace tally {

/// The serialisable state of a Generator.
struct GeneratorState {
  uint64_t seed = 0;
  uint64_t offset = 0;  ///< counters consumed so far
};

/// A source of random numbers (torch.Generator).
class Generator {
 public:
  explicit Generator(uint64_t seed = 67280421310721ULL) : state_{seed, 0} {}
  /// Restart the sequence from `seed`.
  void manual_seed(uint64_t seed) { state_ = {seed, 0}; }
  /// The seed last set.
  uint64_t initial_seed() const { return state_.seed; }
  /// The full state, for checkpoints.
  GeneratorState get_state() const { return state_; }
  /// Restore a state from get_state().
  void set_state(GeneratorState s) { state_ = s; }
  /// Reserve `n` counters and return the first; draw i uses counter first + i. Threads drawing
  /// from one generator at once get disjoint counters (Note [Concurrent backward]).
  uint64_t reserve(uint64_t n) { return std::atomic_ref<uint64_t>(state_.offset).fetch_add(n, std::memory_order_relaxed); }
  /// 64 random bits for counter `c` (SplitMix64 finaliser over seed and counter).
  uint64_t bits(uint64_t c) const {
    uint64_t z = state_.seed * 0x9E3779B97F4A7C15ULL + c * 0xD1B54A32D192ED03ULL + 0x632BE59BD9B4E019ULL;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
  }
  /// Uniform on [0, 1) for counter `c`: the top 53 of its bits, every value exact in a double.
  double uniform01(uint64_t c) const { return static_cast<double>(bits(c) >> 11) * 0x1.0p-53; }

 private:
  GeneratorState state_;
};

/// The generator used when none is passed.
Generator& default_generator();
/// Seed the default generator (torch.manual_seed).
void manual_seed(uint64_t seed);

}  // namespace tally
