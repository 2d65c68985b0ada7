// Differential tests against PyTorch 1.13: one test per op family, each running every case its
// builder in catalog.cpp lists (ops × dtypes × layouts). See reference.py for the torch side.

#include <gtest/gtest.h>

#include "differential/family_runner.h"

using tally::difftest::run_family;

TEST(Differential, Unary) { run_family("Unary"); }
TEST(Differential, Binary) { run_family("Binary"); }
TEST(Differential, Scalar) { run_family("Scalar"); }
TEST(Differential, Promotion) { run_family("Promotion"); }
TEST(Differential, Comparison) { run_family("Comparison"); }
TEST(Differential, Pow) { run_family("Pow"); }
TEST(Differential, InPlace) { run_family("InPlace"); }
TEST(Differential, Forms) { run_family("Forms"); }
TEST(Differential, Selection) { run_family("Selection"); }
TEST(Differential, Reduction) { run_family("Reduction"); }
TEST(Differential, Extrema) { run_family("Extrema"); }
TEST(Differential, Ordering) { run_family("Ordering"); }
TEST(Differential, Indexing) { run_family("Indexing"); }
TEST(Differential, Logical) { run_family("Logical"); }
TEST(Differential, Softmax) { run_family("Softmax"); }
TEST(Differential, Join) { run_family("Join"); }
TEST(Differential, Matmul) { run_family("Matmul"); }
TEST(Differential, Triangle) { run_family("Triangle"); }
TEST(Differential, Shape) { run_family("Shape"); }
TEST(Differential, Conversion) { run_family("Conversion"); }
// Backward against torch: elementwise and selection ops; reductions, structure ops and views.
TEST(Differential, Gradients) { run_family("Gradients"); }
TEST(Differential, GradientsStructure) { run_family("GradientsStructure"); }
