// Checks for numeric and date options, in one line each. CLI11's PositiveNumber says "Value 0 not
// in range 0.000000 to 17976931348623157..." (its whole double range) and lets nan through.
#pragma once

#include <CLI/CLI.hpp>
#include <cmath>
#include <cstdlib>
#include <string>

#include "reporters/gate_policy.h"

namespace shardbench::cli {

// A finite number above `floor` (or at least it, when `floor_allowed`).
inline CLI::Validator NumberAbove(double floor, bool floor_allowed, const std::string& words) {
  return CLI::Validator(
      [=](std::string& text) -> std::string {
        char* end = nullptr;
        const double v = std::strtod(text.c_str(), &end);
        const bool number = !text.empty() && end && *end == '\0' && std::isfinite(v);
        if (number && (v > floor || (floor_allowed && v == floor))) return "";
        return "expected " + words + ", got '" + text + "'";
      },
      words);
}

inline CLI::Validator Positive() { return NumberAbove(0, false, "a positive number"); }
inline CLI::Validator NonNegative() { return NumberAbove(0, true, "a number >= 0"); }
inline CLI::Validator Finite() { return NumberAbove(-HUGE_VAL, false, "a finite number"); }

inline CLI::Validator CalendarDate() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        return IsCalendarDate(text) ? "" : "expected a date YYYY-MM-DD, got '" + text + "'";
      },
      "YYYY-MM-DD");
}

}  // namespace shardbench::cli
