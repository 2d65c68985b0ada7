#pragma once
// tally::optim: every optimizer, the LR schedules and gradient clipping.

#include "tally/optim/adagrad.h"
#include "tally/optim/adam.h"
#include "tally/optim/adamw.h"
#include "tally/optim/clip_grad.h"
#include "tally/optim/lr_scheduler.h"
#include "tally/optim/optimizer.h"
#include "tally/optim/rmsprop.h"
#include "tally/optim/sgd.h"
