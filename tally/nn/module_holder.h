#pragma once
// libtorch's module holders: `struct NetImpl : nn::Module {...}; TALLY_MODULE(Net);` makes `Net` a
// handle to a shared NetImpl, as TORCH_MODULE does, so code written for libtorch ports as it is:
//
//   Net net(4, 8);                                  // constructs a NetImpl(4, 8)
//   Net later{nullptr};                             // empty, to be assigned
//   later = register_module("net", Net(4, 8));      // in a parent's constructor
//   later->forward(x);  later(x);                   // the module's members; forward by call
//
// The shared_ptr form (register_module("fc", std::make_shared<nn::Linear>(4, 2))) stays: tally's
// own layers are plain classes, and a holder's ptr() is the shared_ptr they would be held by.

#include <cstddef>
#include <memory>
#include <type_traits>
#include <utility>

#include "tally/error/error.h"

namespace tally::nn {

template <class Impl>
class ModuleHolder {
 public:
  using ContainedType = Impl;

  /// An empty holder (libtorch's `Net net{nullptr}`); using it raises until it is assigned.
  ModuleHolder(std::nullptr_t) {}  // NOLINT: as libtorch's
  /// Holds an existing module.
  ModuleHolder(std::shared_ptr<Impl> module) : impl_(std::move(module)) {}  // NOLINT: as libtorch's
  /// Constructs the module from `args` (none: Impl's default constructor).
  template <class... Args>
    requires(!(sizeof...(Args) == 1 && (std::is_base_of_v<ModuleHolder, std::decay_t<Args>> && ...)))
  explicit ModuleHolder(Args&&... args) : impl_(std::make_shared<Impl>(std::forward<Args>(args)...)) {}

  Impl* operator->() const { return get(); }
  Impl& operator*() const { return *get(); }
  /// The module, or a ValueError naming the type when the holder is empty.
  Impl* get() const {
    TALLY_CHECK(impl_ != nullptr, "Accessing an empty ModuleHolder (constructed with nullptr and never assigned)");
    return impl_.get();
  }
  const std::shared_ptr<Impl>& ptr() const { return impl_; }
  bool is_empty() const noexcept { return impl_ == nullptr; }
  explicit operator bool() const noexcept { return !is_empty(); }
  /// net(x) calls the module: its own operator() where it has one (a Layer's runs the forward
  /// hooks), else net->forward(x).
  template <class... Args>
  decltype(auto) operator()(Args&&... args) const {
    if constexpr (requires { (*get())(std::forward<Args>(args)...); }) return (*get())(std::forward<Args>(args)...);
    else return get()->forward(std::forward<Args>(args)...);
  }

 private:
  std::shared_ptr<Impl> impl_;
};

}  // namespace tally::nn

/// Declares `Name`, a ModuleHolder of `NameImpl` (libtorch's TORCH_MODULE).
#define TALLY_MODULE(Name)                                                \
  class Name : public ::tally::nn::ModuleHolder<Name##Impl> {            \
   public:                                                               \
    using ::tally::nn::ModuleHolder<Name##Impl>::ModuleHolder;           \
  }
