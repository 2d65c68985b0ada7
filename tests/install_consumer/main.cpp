// A program outside the tally tree, built against an installed tally through find_package.
#include <tally/tally.h>

#include <iostream>

int main() {
  tally::Tensor y = tally::matmul(tally::ones({2, 3}), tally::ones({3, 2}));
  std::cout << y << "\n";
  return y.sum().item<float>() == 12.0f ? 0 : 1;
}
