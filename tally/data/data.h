#pragma once
// tally::data: token files read a window at a time, get_batch, a resumable loader and its prefetcher.

#include "tally/data/loader.h"
#include "tally/data/npy.h"
#include "tally/data/prefetcher.h"
#include "tally/data/token_file.h"
