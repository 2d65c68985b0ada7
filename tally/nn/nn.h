#pragma once
// tally::nn: modules, layers, initialisation and the functional forms.

#include "tally/nn/activation.h"
#include "tally/nn/container.h"
#include "tally/nn/cruncher.h"
#include "tally/nn/functional.h"
#include "tally/nn/init.h"
#include "tally/nn/layer.h"
#include "tally/nn/linear.h"
#include "tally/nn/module.h"
#include "tally/nn/normalization.h"
#include "tally/nn/transformer.h"
