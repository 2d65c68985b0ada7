#pragma once
// The umbrella header: everything a tally program uses.

#include "tally/core/allocator.h"
#include "tally/core/autograd_meta.h"
#include "tally/core/generator.h"
#include "tally/core/indexing.h"
#include "tally/core/tensor.h"
#include "tally/dtype/dtype.h"
#include "tally/dtype/finfo.h"
#include "tally/accounting/memory_tracker.h"
#include "tally/ops/creation.h"
#include "tally/ops/elementwise.h"
#include "tally/ops/join.h"
#include "tally/ops/matmul.h"
#include "tally/ops/random.h"
#include "tally/ops/reduce.h"
#include "tally/ops/softmax.h"
