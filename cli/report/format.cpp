// Number formatting and escaping for the report (format.h).

#include "cli/report/format.h"

#include <fmt/core.h>

#include <array>
#include <string>
#include <cmath>
#include <utility>

namespace tally::cli::report {

namespace {

// Three significant digits without an exponent: 1.23, 45.6, 789.
std::string three_digits(double v) {
  const double a = std::fabs(v);
  if (a >= 99.95) return fmt::format("{:.0f}", v);
  if (a >= 9.995) return fmt::format("{:.1f}", v);
  return fmt::format("{:.2f}", v);
}

}  // namespace

std::string html_escape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string json_for_script(const nlohmann::ordered_json& j) {
  const std::string text = j.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
  std::string out;
  out.reserve(text.size());
  // These three only occur inside JSON strings, where \uXXXX means the same character.
  for (char c : text) {
    switch (c) {
      case '<': out += "\\u003c"; break;
      case '>': out += "\\u003e"; break;
      case '&': out += "\\u0026"; break;
      default: out += c;
    }
  }
  return out;
}

std::string si(double v, std::string_view unit) {
  if (!std::isfinite(v)) return fmt::format("{} {}", v, unit);
  static constexpr std::array<std::pair<double, const char*>, 6> prefixes{
      {{1e18, "E"}, {1e15, "P"}, {1e12, "T"}, {1e9, "G"}, {1e6, "M"}, {1e3, "k"}}};
  const double a = std::fabs(v);
  // "1.23 GFLOP", "1.23 G" (no unit: no trailing space), "512 FLOP".
  auto with = [&](const std::string& digits, std::string_view prefix) {
    const std::string suffix = std::string(prefix) + std::string(unit);
    return suffix.empty() ? digits : digits + " " + suffix;
  };
  for (const auto& [scale, prefix] : prefixes)
    if (a >= 0.9995 * scale) return with(three_digits(v / scale), prefix);
  if (a == 0 || a >= 0.9995) return with(number_text(v), "");
  if (a >= 0.9995e-3) return with(three_digits(v * 1e3), "m");
  return with(fmt::format("{:.3g}", v), "");
}

std::string bytes_text(double v) {
  if (!std::isfinite(v)) return fmt::format("{} B", v);
  static constexpr std::array<const char*, 6> units{"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  size_t i = 0;
  double x = v;
  while (std::fabs(x) >= 1024 && i + 1 < units.size()) {
    x /= 1024;
    ++i;
  }
  return i == 0 ? fmt::format("{:.0f} B", x) : fmt::format("{} {}", three_digits(x), units[i]);
}

std::string signed_bytes_text(double v) {
  std::string text = bytes_text(v);
  if (v >= 0) text.insert(0, 1, '+');  // not "+" + text: GCC 12 warns falsely (-Wrestrict) on that
  return text;
}

std::string seconds_text(double v) {
  if (!std::isfinite(v)) return fmt::format("{} s", v);
  const double a = std::fabs(v);
  if (a == 0) return "0 s";
  if (a < 0.9995e-6) return fmt::format("{} ns", three_digits(v * 1e9));
  if (a < 0.9995e-3) return fmt::format("{} µs", three_digits(v * 1e6));
  if (a < 0.9995) return fmt::format("{} ms", three_digits(v * 1e3));
  if (a < 120) return fmt::format("{} s", three_digits(v));
  if (a < 7200) return fmt::format("{} min", three_digits(v / 60));
  return fmt::format("{} h", three_digits(v / 3600));
}

std::string percent_text(double fraction) { return fmt::format("{:.1f}%", fraction * 100); }

std::string number_text(double v, int digits) {
  if (std::isfinite(v) && v == std::floor(v) && std::fabs(v) < 1e15) return fmt::format("{:.0f}", v);
  return fmt::format("{:.{}g}", v, digits);
}

}  // namespace tally::cli::report
