#pragma once
// tally::einops: einsum, rearrange, reduce and repeat with einops' grammar, and enforced shape
// names. Every pattern is parsed once per process and cached.

#include "tally/einops/einsum.h"
#include "tally/einops/plan_cache.h"
#include "tally/einops/rearrange.h"
#include "tally/einops/shape_scope.h"
