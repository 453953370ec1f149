#include "experiments/report/report_html.h"

#include <cmath>
#include <cstdio>

#include "experiments/report/report_sections.h"

namespace clustertwin::report {

std::string escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string number(double v, int digits) {
  if (!std::isfinite(v)) return "n/a";
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.*f", digits, v);
  std::string text = buffer;
  // Group the integer part's digits in threes, after any sign.
  const size_t start = (text[0] == '-' || text[0] == '+') ? 1 : 0;
  size_t end = text.find('.');
  if (end == std::string::npos) end = text.size();
  for (size_t i = end; i > start + 3; i -= 3)
    text.insert(i - 3, ",");
  return text;
}

std::string times(double v, int digits) {
  return number(v, digits) + "x";
}

std::string percent(double fraction, int digits) {
  return number(100 * fraction, digits) + "%";
}

std::string signed_number(double v, int digits) {
  std::string text = number(v, digits);
  if (!std::isfinite(v)) return text;
  // What rounds to zero carries no sign: "0.0", never "-0.0" or "+0.0".
  if (text.find_first_not_of("-0.,") == std::string::npos) return text[0] == '-' ? text.substr(1) : text;
  return text[0] == '-' ? text : "+" + text;
}

std::string relative_difference(double ours, double paper) {
  return signed_number(100 * (ours / paper - 1), 1) + "%";
}

std::string point_difference(double ours_percent, double paper_percent, int digits) {
  return signed_number(ours_percent - paper_percent, digits) + " points";
}

std::string comparison_table(const std::vector<ComparisonRow>& rows) {
  std::string out =
      "<table class=\"comparison\">\n<tr><th>figure</th><th>paper</th><th>clustertwin</th>"
      "<th>difference</th></tr>\n";
  for (const ComparisonRow& r : rows) {
    out += "<tr><td>" + escape(r.figure) + "</td><td>" + escape(r.paper) + "</td><td>" + escape(r.ours) + "</td><td>" +
           escape(r.difference) + "</td></tr>\n";
  }
  return out + "</table>\n";
}

std::string table(const std::vector<std::string>& header, const std::vector<std::vector<std::string>>& rows) {
  std::string out = "<table class=\"data\">\n<tr>";
  for (const std::string& h : header)
    out += "<th>" + escape(h) + "</th>";
  out += "</tr>\n";
  for (const std::vector<std::string>& row : rows) {
    out += "<tr>";
    for (const std::string& cell : row)
      out += "<td>" + escape(cell) + "</td>";
    out += "</tr>\n";
  }
  return out + "</table>\n";
}

std::string plot(const std::filesystem::path& out_dir, const std::string& system, const std::string& file,
                 const std::string& caption) {
  const std::string link = "../" + system + "/" + file;
  std::error_code ec;
  if (!std::filesystem::is_regular_file(out_dir / system / file, ec)) {
    return "<p class=\"missing\">" + escape(caption) + " (" + escape(link) +
           "): plot not available (gnuplot not installed)</p>\n";
  }
  return "<figure><a href=\"" + escape(link) + "\"><img src=\"" + escape(link) + "\" alt=\"" + escape(caption) +
         "\"></a><figcaption>" + escape(caption) + "</figcaption></figure>\n";
}

std::string paragraph(std::string_view text) {
  return "<p>" + escape(text) + "</p>\n";
}

std::string heading(std::string_view id, std::string_view title) {
  return "<h2 id=\"" + escape(id) + "\">" + escape(title) + "</h2>\n";
}

std::string page(const std::string& title, const std::string& body) {
  return "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>" + escape(title) +
         "</title>\n<style>\n"
         "body { font-family: sans-serif; max-width: 72em; margin: 2em auto; padding: 0 1em; line-height: 1.45; "
         "color: #222; }\n"
         "h1 { border-bottom: 2px solid #444; }\n"
         "h2 { margin-top: 2.5em; border-bottom: 1px solid #aaa; }\n"
         "table { border-collapse: collapse; margin: 1em 0; }\n"
         "th, td { border: 1px solid #bbb; padding: 0.25em 0.6em; vertical-align: top; }\n"
         "th { background: #eee; text-align: left; }\n"
         "table.data td { text-align: right; font-variant-numeric: tabular-nums; }\n"
         "table.data td:first-child { text-align: left; }\n"
         "table.comparison td:nth-child(2), table.comparison td:nth-child(3), table.comparison td:nth-child(4) "
         "{ font-variant-numeric: tabular-nums; }\n"
         "figure { display: inline-block; margin: 0.5em 1em 0.5em 0; max-width: 48%; vertical-align: top; }\n"
         "figure img { max-width: 100%; border: 1px solid #ccc; }\n"
         "figcaption { font-size: 0.9em; color: #555; }\n"
         ".missing { color: #a33; font-style: italic; }\n"
         ".note { font-size: 0.9em; color: #555; }\n"
         "code { background: #f3f3f3; padding: 0 0.2em; }\n"
         "</style>\n</head>\n<body>\n" +
         body + "</body>\n</html>\n";
}

}  // namespace clustertwin::report

namespace clustertwin::report {

std::string provenance_html(const Section& section) {
  auto list = [](const char* kind, const std::vector<std::string>& entries) {
    std::string out = "<p><strong>" + std::string(kind) + "</strong>";
    if (entries.empty()) return out + ": none.</p>\n";
    out += ":</p>\n<ul>\n";
    for (const std::string& e : entries)
      out += "<li>" + escape(e) + "</li>\n";
    return out + "</ul>\n";
  };
  return "<h3>What these figures rest on</h3>\n" + list("Fitted to a paper's figure", section.fitted) +
         list("Measured", section.measured) + list("Assumed", section.assumed);
}

}  // namespace clustertwin::report
