#include "tally/train/corpus.h"

#include <array>
#include <cmath>
#include <string_view>

namespace tally::train {

namespace {

/// SplitMix64: a tiny generator whose output is fixed by its seed on every platform.
struct SplitMix {
  uint64_t state;
  uint64_t next() {
    uint64_t z = (state += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
  }
  template <size_t N>
  std::string_view pick(const std::array<std::string_view, N>& words) {
    return words[next() % N];
  }
};

constexpr std::array<std::string_view, 12> kAdjectives = {"small", "quiet", "red", "old", "bright", "heavy",
                                                           "young", "clever", "tired", "happy", "strange", "green"};
constexpr std::array<std::string_view, 12> kNouns = {"cat", "dog", "bird", "child", "teacher", "farmer",
                                                      "robot", "river", "garden", "window", "engine", "city"};
// Verbs by the subject's number: a singular subject takes the first form, a plural one the second.
constexpr std::array<std::array<std::string_view, 2>, 10> kVerbs = {{{"sees", "see"},
                                                                      {"likes", "like"},
                                                                      {"follows", "follow"},
                                                                      {"finds", "find"},
                                                                      {"watches", "watch"},
                                                                      {"carries", "carry"},
                                                                      {"paints", "paint"},
                                                                      {"builds", "build"},
                                                                      {"visits", "visit"},
                                                                      {"counts", "count"}}};
constexpr std::array<std::string_view, 6> kPlaces = {"near the river", "in the garden", "by the window",
                                                      "under the bridge", "at the market", "on the hill"};
constexpr std::array<std::string_view, 6> kSpeech = {"look at that", "it is late", "come with me",
                                                      "what a day", "we should go", "listen"};

// Built by appending: GCC 12 warns (-Wrestrict, wrongly) on "literal" + std::string.
std::string noun_phrase(SplitMix& r, bool plural) {
  std::string s = (r.next() % 2) ? "the " : (plural ? "some " : "a ");
  if (r.next() % 2) s.append(r.pick(kAdjectives)).append(" ");
  s.append(r.pick(kNouns));
  if (plural) s.append(s.back() == 'h' ? "es" : "s");
  return s;
}

std::string sentence(SplitMix& r, int64_t number) {
  const bool plural = r.next() % 3 == 0;
  std::string subject = noun_phrase(r, plural);
  subject[0] = static_cast<char>(subject[0] - 'a' + 'A');
  std::string s = std::to_string(number);
  s.append(". ").append(subject).append(" ").append(kVerbs[r.next() % kVerbs.size()][plural ? 1 : 0]).append(" ");
  s.append(noun_phrase(r, r.next() % 3 == 0));
  if (r.next() % 2) s.append(" ").append(r.pick(kPlaces));
  if (r.next() % 4 == 0) s.append(", and says \"").append(r.pick(kSpeech)).append("\"");
  return s.append(".\n");
}

}  // namespace

std::string builtin_corpus(int64_t bytes, uint64_t seed) {
  SplitMix r{seed};
  std::string text;
  text.reserve(static_cast<size_t>(bytes) + 128);
  for (int64_t n = 1; static_cast<int64_t>(text.size()) < bytes; ++n) text += sentence(r, n % 1000);
  text.resize(static_cast<size_t>(bytes));
  return text;
}

double unigram_entropy(std::span<const int64_t> counts) {
  double total = 0;
  for (int64_t c : counts) total += static_cast<double>(c);
  double h = 0;
  for (int64_t c : counts)
    if (c > 0) h -= static_cast<double>(c) / total * std::log(static_cast<double>(c) / total);
  return h;
}

}  // namespace tally::train
