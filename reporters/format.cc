#include "reporters/format.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace shardbench {
namespace {

std::string Grouped(double v) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.0f", std::abs(v));
  std::string digits = buf, out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return (v < 0 ? "-" : "") + out;
}

std::string Printf(const char* fmt, double v) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), fmt, v);
  return buf;
}

}  // namespace

std::string ExactNumber(double value) {
  if (!std::isfinite(value)) return "n/a";
  if (value == std::floor(value) && std::abs(value) < 1e15) return Printf("%.0f", value);
  char text[32];
  for (int digits = 1; digits <= 17; ++digits) {
    std::snprintf(text, sizeof(text), "%.*g", digits, value);
    if (std::strtod(text, nullptr) == value) break;
  }
  return text;
}

std::string FormatValue(double value, const std::string& unit) {
  if (!std::isfinite(value)) return "n/a";
  if (unit == "bytes") {
    const double a = std::abs(value);
    if (a < 10 * 1024.0) return Grouped(value) + " B";
    if (a < 10 * 1024.0 * 1024) return Printf("%.2f KiB", value / 1024);
    if (a < 10 * 1024.0 * 1024 * 1024) return Printf("%.2f MiB", value / (1024.0 * 1024));
    return Printf("%.2f GiB", value / (1024.0 * 1024 * 1024));
  }
  if (unit == "FLOPs" || unit == "FLOP/s") {  // SI prefixes: 26.04 GFLOP/s
    const char* prefixes[] = {"", "K", "M", "G", "T", "P", "E"};
    int i = 0;
    double v = value;
    while (std::abs(v) >= 1000 && i < 6) {
      v /= 1000;
      ++i;
    }
    return Printf("%.2f ", v) + prefixes[i] + unit;
  }
  if (unit == "s") return std::abs(value) < 1 ? Printf("%.2f ms", value * 1e3) : Printf("%.3f s", value);
  if (unit == "count") return Grouped(value);
  if (unit == "ratio") return Printf("%.4f", value);
  const std::string number = std::abs(value) >= 1000 ? Grouped(value) : Printf("%.2f", value);
  return unit.empty() ? number : number + " " + unit;
}

std::string Fixed(double value, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.*f", digits, value);
  return buf;
}

std::string FormatDelta(double ratio) {
  if (!std::isfinite(ratio)) return "new";
  const double pct = (ratio - 1) * 100;
  if (pct == 0) return "0%";
  return Printf(std::abs(pct) < 0.1 ? "%+.3f%%" : "%+.1f%%", pct);
}

std::string Joined(const std::vector<std::string>& items, const std::string& separator) {
  std::string out;
  for (const auto& item : items) out += (out.empty() ? "" : separator) + item;
  return out;
}

std::string EscapeMarkdown(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '|') {
      out += "\\|";
    } else if (c == '\n' || c == '\r') {
      out += ' ';
    } else if (c == '`' || c == '*' || c == '_' || c == '<' || c == '>' || c == '[' || c == ']') {
      out += '\\';
      out += c;
    } else {
      out += c;
    }
  }
  return out;
}

std::string EscapeXml(const std::string& text) {
  std::string out;
  for (unsigned char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      default:
        // XML 1.0 forbids most control characters even escaped.
        if (c < 0x20 && c != '\t' && c != '\n' && c != '\r') {
          out += ' ';
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  return out;
}

}  // namespace shardbench
