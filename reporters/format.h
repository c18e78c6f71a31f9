// Number and text formatting shared by the reporters.
#pragma once

#include <string>
#include <vector>

namespace shardbench {

// A value in its unit, for people: bytes as KiB/MiB/GiB (exact bytes below 10 KiB), seconds as
// ms below 1 s, rates and counts with thousands separators.
std::string FormatValue(double value, const std::string& unit);
// An exact figure as written, for the record: whole numbers as integers ("261632"), others in
// the fewest digits that read back as the same double ("-1.2363", "0.1").
std::string ExactNumber(double value);
// A value with `digits` digits after the point ("0.0312" for 4), for details in words.
std::string Fixed(double value, int digits);
// current / base as a signed percentage ("+4.3%", "-0.02%", "0%").
std::string FormatDelta(double ratio);
// "a; b; c": differences and reasons listed on one line.
std::string Joined(const std::vector<std::string>& items, const std::string& separator = "; ");
std::string EscapeMarkdown(const std::string& text);  // table cells: pipes, newlines, backticks
std::string EscapeXml(const std::string& text);       // element text and attribute values

}  // namespace shardbench
