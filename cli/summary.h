// What `shardbench run` prints: a live progress line per step (rewritten in place on a
// terminal, one line per step in CI logs), a summary per instance, and the index at the end.
#pragma once

#include <functional>
#include <string>

#include <nlohmann/json.hpp>

#include "harness/scenario_runner.h"

namespace shardbench::cli {

std::function<void(const StepProgress&)> ProgressPrinter(bool terminal);
void PrintSummary(const nlohmann::json& result, const std::string& path);
void PrintIndex(const nlohmann::json& index, const std::string& out_dir);
// --quiet: only the instances that did not end in the colour expected, each with its reason
// (the failed check, the error), so a failing run never ends silently.
void PrintUnexpected(const nlohmann::json& index, const std::string& out_dir);

}  // namespace shardbench::cli
