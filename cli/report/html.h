#pragma once
// Small pieces of HTML the report's sections share. Cells and values passed in are HTML already
// (escaped by the caller); these functions escape nothing themselves.

#include <cmath>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tally::cli::report {

/// A table: header cells and rows of cells, all HTML.
struct Table {
  std::vector<std::string> head;
  std::vector<std::vector<std::string>> rows;
};

/// `<table class="cls">` with a header row; numeric-looking cells are right-aligned by CSS.
std::string render_table(const Table& t, std::string_view cls = "");
/// Label/value rows as a two-column definition table (labels are plain text, escaped here).
std::string render_kv(const std::vector<std::pair<std::string, std::string>>& rows);
/// A "not recorded" marker for a missing value (HTML).
std::string missing_value();
/// A paragraph saying what is missing and why (text escaped).
std::string missing_block(std::string_view why);

/// `f(v)`, or the missing marker when v is NaN.
template <class F>
std::string value_or_missing(double v, F f) {
  return std::isnan(v) ? missing_value() : f(v);
}

}  // namespace tally::cli::report
