#pragma once
// The tests' error helpers: expect_error<Type>(fn, {parts...}) (fn() must throw Type, or a
// subclass, whose message holds every part) and message_of(fn) (the message of the tally::Error
// fn() throws, to compare word for word).

#include <gtest/gtest.h>

#include <exception>
#include <functional>
#include <initializer_list>
#include <string>

#include "tally/error/error.h"

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

/// The message of the tally::Error fn() throws, or "no error".
inline std::string message_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace tally::test
