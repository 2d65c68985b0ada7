// Shared HTML pieces (html.h).

#include "cli/report/html.h"

#include "cli/report/format.h"

namespace tally::cli::report {

std::string render_table(const Table& t, std::string_view cls) {
  std::string out = cls.empty() ? "<table>" : "<table class=\"" + std::string(cls) + "\">";
  out += "<thead><tr>";
  for (const auto& h : t.head) out += "<th>" + h + "</th>";
  out += "</tr></thead><tbody>";
  for (const auto& row : t.rows) {
    out += "<tr>";
    for (const auto& c : row) out += "<td>" + c + "</td>";
    out += "</tr>";
  }
  return out + "</tbody></table>";
}

std::string render_kv(const std::vector<std::pair<std::string, std::string>>& rows) {
  std::string out = "<table class=\"kv\"><tbody>";
  for (const auto& [label, value] : rows) out += "<tr><th>" + html_escape(label) + "</th><td>" + value + "</td></tr>";
  return out + "</tbody></table>";
}

std::string missing_value() { return "<span class=\"missing\">not recorded</span>"; }

std::string missing_block(std::string_view why) { return "<p class=\"missing\">" + html_escape(why) + "</p>"; }

}  // namespace tally::cli::report
