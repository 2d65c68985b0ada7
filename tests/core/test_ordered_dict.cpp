// OrderedDict as libtorch's: built from a list, items with key() and value() (and, as before,
// structured bindings), insertion order kept, errors that name the key.

#include <gtest/gtest.h>

#include "tally/tally.h"
#include "tests/expect_error.h"

namespace {

using namespace tally;

TEST(OrderedDict, FromAListInOrderWithKeyAndValue) {
  OrderedDict<int> d = {{"b", 2}, {"a", 1}, {"c", 3}};
  ASSERT_EQ(d.size(), 3u);
  EXPECT_EQ(d.keys(), (std::vector<std::string>{"b", "a", "c"}));
  std::vector<std::string> seen;
  for (const auto& item : d) seen.push_back(item.key() + "=" + std::to_string(item.value()));
  EXPECT_EQ(seen, (std::vector<std::string>{"b=2", "a=1", "c=3"}));
  int sum = 0;
  for (const auto& [key, value] : d) sum += value;  // structured bindings still work
  EXPECT_EQ(sum, 6);
  d.insert_or_assign("a", 10);
  EXPECT_EQ(d.items()[1].value(), 10);
  EXPECT_EQ(d["a"], 10);
}

TEST(OrderedDict, ARepeatedOrMissingKeyIsNamed) {
  tally::test::expect_error<ValueError>([] { OrderedDict<int> d = {{"x", 1}, {"x", 2}}; }, {"Key 'x' already defined"});
  const OrderedDict<int> d = {{"x", 1}};
  tally::test::expect_error<IndexError>([&] { (void)d.at("y"); }, {"Key 'y' is not defined"});
}

TEST(OrderedDict, AStateDictFromAList) {
  const StateDict state = {{"w", ones({2, 3})}, {"b", zeros({3})}};
  EXPECT_EQ(state.keys(), (std::vector<std::string>{"w", "b"}));
  EXPECT_EQ(state.items().front().value().sizes(), IntArrayRef({2, 3}));
}

}  // namespace
