#pragma once
// AdamW (PyTorch 1.13's torch.optim.AdamW) is Adam with decoupled weight decay: both are in
// adam.h. This header is where libtorch users look for it.

#include "tally/optim/adam.h"
