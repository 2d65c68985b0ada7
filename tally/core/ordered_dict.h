#pragma once
// A dictionary keyed by name that remembers insertion order (libtorch's OrderedDict). Module
// parameters, state dicts and optimizer state are all name → tensor maps whose order is part of
// their meaning: parameters are listed in registration order, and a checkpoint written from one
// is read back in the same order.

#include <initializer_list>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "tally/error/error.h"

namespace tally {

/// One entry: libtorch's `item.key()` and `item.value()`, and, its members being public,
/// `item.first`/`item.second` and structured bindings (`for (const auto& [name, t] : dict)`).
template <class Value>
struct OrderedDictItem {
  std::string first;
  Value second;
  const std::string& key() const { return first; }
  Value& value() { return second; }
  const Value& value() const { return second; }
  /// The value, as libtorch's items give it: `*dict[0]`, `item->size()`.
  Value& operator*() { return second; }
  const Value& operator*() const { return second; }
  Value* operator->() { return &second; }
  const Value* operator->() const { return &second; }
};

template <class Value>
class OrderedDict {
 public:
  using Item = OrderedDictItem<Value>;

  /// Add `key`; a key already present is an error that names it, in libtorch's words ("Key 'a'
  /// already defined", with the key description in place of "Key").
  Value& insert(std::string key, Value value) {
    TALLY_CHECK(!index_.contains(key), what_, " '", key, "' already defined");
    index_.emplace(key, items_.size());
    items_.push_back(Item{std::move(key), std::move(value)});
    return items_.back().second;
  }
  /// Add `key` or overwrite its value, keeping its position.
  Value& insert_or_assign(std::string key, Value value) {
    if (auto it = index_.find(key); it != index_.end()) return items_[it->second].second = std::move(value);
    return insert(std::move(key), std::move(value));
  }
  /// The value of `key`, or nullptr.
  const Value* find(const std::string& key) const {
    auto it = index_.find(key);
    return it == index_.end() ? nullptr : &items_[it->second].second;
  }
  Value* find(const std::string& key) {
    auto it = index_.find(key);
    return it == index_.end() ? nullptr : &items_[it->second].second;
  }
  bool contains(const std::string& key) const { return index_.contains(key); }
  /// The value of `key`; a missing key is an error that names it ("Key 'b' is not defined").
  const Value& at(const std::string& key) const {
    const Value* v = find(key);
    TALLY_CHECK_INDEX(v != nullptr, what_, " '", key, "' is not defined");
    return *v;
  }
  Value& at(const std::string& key) { return const_cast<Value&>(std::as_const(*this).at(key)); }
  const Value& operator[](const std::string& key) const { return at(key); }
  Value& operator[](const std::string& key) { return at(key); }
  /// The item at position `i` in insertion order (libtorch's dict[0].key()).
  const Item& operator[](size_t i) const {
    TALLY_CHECK_INDEX(i < items_.size(), "Index ", i, " is out of bounds for an OrderedDict of ", items_.size(), " items");
    return items_[i];
  }
  Item& operator[](size_t i) { return const_cast<Item&>(std::as_const(*this)[i]); }
  const Item& front() const {
    TALLY_CHECK_INDEX(!items_.empty(), "Called front() on an empty OrderedDict");
    return items_.front();
  }
  Item& front() { return const_cast<Item&>(std::as_const(*this).front()); }
  const Item& back() const {
    TALLY_CHECK_INDEX(!items_.empty(), "Called back() on an empty OrderedDict");
    return items_.back();
  }
  Item& back() { return const_cast<Item&>(std::as_const(*this).back()); }
  /// Insert every item of `other`, in its order; a key already here is an error, as insert's.
  void update(const OrderedDict& other) {
    for (const Item& item : other) insert(item.first, item.second);
  }

  std::vector<std::string> keys() const {
    std::vector<std::string> out;
    out.reserve(items_.size());
    for (const Item& item : items_) out.push_back(item.first);
    return out;
  }
  std::vector<Value> values() const {
    std::vector<Value> out;
    out.reserve(items_.size());
    for (const Item& item : items_) out.push_back(item.second);
    return out;
  }
  const std::vector<Item>& items() const { return items_; }
  size_t size() const { return items_.size(); }
  bool empty() const { return items_.empty(); }
  bool is_empty() const { return items_.empty(); }  // libtorch's name
  void clear() {
    items_.clear();
    index_.clear();
  }
  auto begin() const { return items_.begin(); }
  auto end() const { return items_.end(); }
  /// Iteration that may change the values (not the keys: an item's key is its index entry).
  auto begin() { return items_.begin(); }
  auto end() { return items_.end(); }
  /// What the keys name, for error messages ("parameter", "state"; libtorch's key_description).
  const std::string& key_description() const { return what_; }

  explicit OrderedDict(std::string key_description = "Key") : what_(std::move(key_description)) {}
  /// `{{"a", x}, {"b", y}}`, in that order; a repeated key is an error that names it.
  OrderedDict(std::initializer_list<std::pair<std::string, Value>> items) : what_("Key") {
    for (const auto& [key, value] : items) insert(key, value);
  }

 private:
  std::string what_;
  std::vector<Item> items_;
  std::unordered_map<std::string, size_t> index_;
};

class Tensor;
/// Named tensors in order: a module's or an optimizer's state, a checkpoint's contents.
using StateDict = OrderedDict<Tensor>;

/// The entries whose key starts with `prefix`, in order, with the prefix removed ("model.w" → "w"):
/// one part of a state made of several.
template <class Value>
OrderedDict<Value> with_prefix_removed(const OrderedDict<Value>& all, const std::string& prefix) {
  OrderedDict<Value> out;
  for (const auto& [key, value] : all)
    if (key.starts_with(prefix)) out.insert(key.substr(prefix.size()), value);
  return out;
}

}  // namespace tally
