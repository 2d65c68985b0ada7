#pragma once
// The corpus `tally train` learns when given no data: English-like sentences from a small
// grammar, written out by a seeded generator, so every machine trains on the same bytes with no
// download. Its structure is learnable at several scales (spelling inside words, which words may
// follow which, agreement between a sentence's subject and verb, paired quotes and a sentence
// counter), so a small model's loss falls far below the bytes' unigram entropy.

#include <cstdint>
#include <span>
#include <string>

namespace tally::train {

/// `bytes` bytes of the built-in corpus; the same bytes for the same arguments on every machine.
std::string builtin_corpus(int64_t bytes, uint64_t seed = 0);

/// The entropy of the tokens' unigram distribution in nats: the loss of a model that knows only
/// token frequencies, the line a trained model must fall well below.
double unigram_entropy(std::span<const int64_t> counts);

}  // namespace tally::train
