// The Trace Event Format rules a viewer (Perfetto UI, chrome://tracing) relies on, as gtest
// expectations: every B has its E on its thread, properly nested; timestamps never go back on a
// thread; every pid and tid is named (metadata) before use; counters carry numbers only.
#pragma once

#include <cstddef>

#include <nlohmann/json.hpp>

namespace shardbench::testing {

// Returns the number of B/E pairs.
size_t CheckTraceValid(const nlohmann::json& trace);

}  // namespace shardbench::testing
