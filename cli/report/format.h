#pragma once
// Numbers for humans ("1.23 GFLOP", "45.6 MiB", "12.3 ms") and escaping for what the report puts
// into HTML and into its embedded JSON.

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace tally::cli::report {

/// `s` with & < > " ' replaced by entities: safe as element text and as a quoted attribute value.
std::string html_escape(std::string_view s);
/// `j` as JSON text that is safe inside <script>: < > & become \u003c \u003e \u0026 (so no `</script>`
/// or `<!--` can appear) and invalid UTF-8 is replaced rather than thrown on.
std::string json_for_script(const nlohmann::ordered_json& j);

/// 1.23e9 -> "1.23 G" + unit: SI prefixes, three significant digits; `unit` may be empty.
std::string si(double v, std::string_view unit);
/// A FLOP count: "1.23 GFLOP".
inline std::string flops_text(double v) { return si(v, "FLOP"); }
/// A byte count with binary prefixes: "45.6 MiB".
std::string bytes_text(double v);
/// bytes_text with its sign, "+" included: a change ("+11.7 MiB", "-32.0 KiB").
std::string signed_bytes_text(double v);
/// A duration: "812 ns", "12.3 ms", "4.56 s", "12.5 min", "3.20 h".
std::string seconds_text(double v);
/// A fraction in [0, 1] as a percentage: "31.0%".
std::string percent_text(double fraction);
/// A plain number with up to `digits` significant digits: "1.42", "80300".
std::string number_text(double v, int digits = 3);

}  // namespace tally::cli::report
