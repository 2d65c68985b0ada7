// kernels::tanh on the vec_math target this test binary is built for (the portable plain-array
// target is checked in test_vec_math_portable.cpp).

#include "tests/kernels/vec_math_checks.h"

TEST(VecMath, TanhWithinSixUlpAndExactlyOneWhereItRounds) { tally::kernels::vec_checks::check_tanh(); }
