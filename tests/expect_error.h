#pragma once
// expect_error<Type>(fn, {parts...}): fn() must throw Type (or a subclass) whose message holds
// every part. Shared by the tests that check error messages word for word.

#include <gtest/gtest.h>

#include <exception>
#include <initializer_list>
#include <string>

namespace tally::test {

template <class Error, class Fn>
void expect_error(Fn&& fn, std::initializer_list<std::string> parts) {
  try {
    fn();
    ADD_FAILURE() << "expected an error containing '" << *parts.begin() << "'";
  } catch (const Error& e) {
    const std::string msg = e.what();
    for (const std::string& part : parts)
      EXPECT_NE(msg.find(part), std::string::npos) << "message \"" << msg << "\" lacks \"" << part << "\"";
  } catch (const std::exception& e) {
    ADD_FAILURE() << "wrong error type: " << e.what();
  }
}

}  // namespace tally::test
