// The mirror of results_reader.h: a typed result written back as the JSON a result file holds,
// so that what is read, merged (reporters/launch_merge.h) and written again stays typed in
// between: ReadResult(ToJson(r), f) == r for every field the reader knows.
#pragma once

#include <nlohmann/json.hpp>

#include "reporters/results_reader.h"

namespace shardbench {

// The metric's summary (median, p10, ...) is written as stored (null when absent), not recomputed.
nlohmann::json ToJson(const StoredMetric& m);
nlohmann::json ToJson(const StoredResult& r);

}  // namespace shardbench
