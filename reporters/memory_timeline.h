// Memory over one step for the dashboard: rank 0's host memory by category at every span
// boundary of the last measured step, read from an instance's trace.json (`run --trace`;
// engine/profile/trace_events.h). A blowup shows when in the step it happens, not just its peak.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace shardbench {

// {"step_ms": [...], "categories": {name: [bytes, ...]}, "step_s": total} or null when the file
// is missing, unreadable, or holds no step with memory samples (the page then shows none).
nlohmann::json MemoryTimelineJson(const std::string& trace_path);

}  // namespace shardbench
