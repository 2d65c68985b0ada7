// A hand-written scanner: the grammar is small enough that a table-driven lexer would be harder
// to read, and every error can point at the exact character that broke it.

#include "tally/einops/pattern.h"

#include <algorithm>

namespace tally::einops::detail {
namespace {

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }
// Bytes >= 0x80 are accepted so that UTF-8 names (einops allows any Python identifier) work.
bool is_name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         static_cast<unsigned char>(c) >= 0x80;
}
bool is_digit(char c) { return c >= '0' && c <= '9'; }

class Parser {
 public:
  Parser(std::string_view text, const PatternContext& ctx, std::string_view side)
      : text_(text), ctx_(ctx), side_(side), base_(text.data() - ctx.pattern.data()) {}

  Expression run() {
    size_t i = 0;
    while (i < text_.size()) {
      const char c = text_[i];
      if (is_space(c)) {
        ++i;
      } else if (c == '(') {
        if (open_) fail(ctx_, "nested brackets are not allowed: '(' at position ", pos(i), " is inside the group opened at position ", pos(open_at_));
        open_ = true;
        open_at_ = i;
        out_.dims.push_back(Dim{{}, true});
        ++i;
      } else if (c == ')') {
        if (!open_) fail(ctx_, "unbalanced brackets: ')' at position ", pos(i), " has no matching '('");
        open_ = false;
        ++i;
      } else if (c == '.') {
        size_t j = i;
        while (j < text_.size() && text_[j] == '.') ++j;
        if (j - i != 3) fail(ctx_, "'", text_.substr(i, j - i), "' at position ", pos(i), " is not an ellipsis: write '...'");
        add_axis(Axis{Axis::Kind::ellipsis, "...", 0}, i);
        i = j;
      } else if (is_name_char(c)) {
        size_t j = i;
        while (j < text_.size() && is_name_char(text_[j])) ++j;
        add_token(text_.substr(i, j - i), i);
        i = j;
      } else {
        fail(ctx_, "unexpected character '", c, "' at position ", pos(i), " (names are letters, digits and '_')");
      }
    }
    if (open_) fail(ctx_, "unbalanced brackets: '(' at position ", pos(open_at_), " is never closed");
    return std::move(out_);
  }

 private:
  size_t pos(size_t i) const { return base_ + i; }

  void add_token(std::string_view token, size_t at) {
    if (is_digit(token[0])) {
      if (!std::all_of(token.begin(), token.end(), is_digit))
        fail(ctx_, "'", token, "' at position ", pos(at), " is not a valid axis name (names cannot start with a digit)");
      if (token.size() > 15) fail(ctx_, "anonymous axis length ", token, " is too large");
      const int64_t length = std::stoll(std::string(token));
      if (length == 0) fail(ctx_, "anonymous axis length must be positive, got 0 at position ", pos(at));
      // "1" is a unit dimension, exactly like "()": it holds no axis.
      if (length == 1) {
        if (!open_) out_.dims.push_back(Dim{{}, false});
        return;
      }
      add_axis(Axis{Axis::Kind::anonymous, std::string(token), length}, at);
      return;
    }
    for (const Dim& d : out_.dims)
      for (const Axis& a : d.axes)
        if (a.kind == Axis::Kind::named && a.name == token)
          fail(ctx_, "duplicate name '", token, "' on ", side_, " (at position ", pos(at), ")");
    add_axis(Axis{Axis::Kind::named, std::string(token), 0}, at);
  }

  void add_axis(Axis axis, size_t at) {
    if (axis.kind == Axis::Kind::ellipsis) {
      if (out_.has_ellipsis) fail(ctx_, "'...' appears twice on ", side_, " (again at position ", pos(at), ")");
      out_.has_ellipsis = true;
      out_.ellipsis_bracketed = open_;
    }
    if (open_) {
      out_.dims.back().axes.push_back(std::move(axis));
    } else {
      out_.dims.push_back(Dim{{std::move(axis)}, false});
    }
  }

  std::string_view text_;
  const PatternContext& ctx_;
  std::string_view side_;
  size_t base_;
  bool open_ = false;
  size_t open_at_ = 0;
  Expression out_;
};

}  // namespace

std::vector<std::string_view> Expression::names() const {
  std::vector<std::string_view> out;
  for (const Dim& d : dims)
    for (const Axis& a : d.axes)
      if (a.kind == Axis::Kind::named) out.push_back(a.name);
  return out;
}

Expression parse_expression(std::string_view text, const PatternContext& ctx, std::string_view side) {
  return Parser(text, ctx, side).run();
}

std::pair<std::string_view, std::string_view> split_arrow(const PatternContext& ctx) {
  const size_t arrow = ctx.pattern.find("->");
  if (arrow == std::string_view::npos) fail(ctx, "missing '->' between the input and output sides");
  if (ctx.pattern.find("->", arrow + 2) != std::string_view::npos)
    fail(ctx, "'->' appears more than once (second at position ", ctx.pattern.find("->", arrow + 2), ")");
  return {ctx.pattern.substr(0, arrow), ctx.pattern.substr(arrow + 2)};
}

std::vector<std::string_view> split_commas(std::string_view text) {
  std::vector<std::string_view> out;
  size_t start = 0;
  for (size_t i = 0; i <= text.size(); ++i) {
    if (i == text.size() || text[i] == ',') {
      out.push_back(text.substr(start, i - start));
      start = i + 1;
    }
  }
  return out;
}

std::string_view trim(std::string_view text) {
  while (!text.empty() && is_space(text.front())) text.remove_prefix(1);
  while (!text.empty() && is_space(text.back())) text.remove_suffix(1);
  return text;
}

}  // namespace tally::einops::detail
