// A PyTorch peer's timeline read back as our spans: the trace torch.profiler exports per rank
// (export_chrome_trace) when a peer runs with profile.trace (peers/torch_fsdp/peer.py), turned
// into the two tracks engine/profile/span_overlap.h summarises, so that comm_exposed_time,
// comm_overlap_ratio, rank_idle_time and `shardbench trace summarize` mean on PyTorch's FSDP
// what they mean on our engines:
//
//   compute        the peer's own annotations on its training thread: "step", "forward",
//                  "backward", "optimizer", and "wait <collective>" (the thread blocked in a
//                  collective: a synchronous call, or an asynchronous one's wait())
//   communication  c10d's own records of a collective in flight on Gloo's threads
//                  ("gloo:all_gather", "gloo:all_reduce", ...), from its start to its end
//
// Everything else the profiler recorded (operators, FSDP's own annotations) is inside those
// spans and is left out. Bad input (not such a trace) is InputError naming `what` and the event.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "engine/profile/trace_events.h"

namespace shardbench::profile {

RankSpans ReadTorchProfilerTrace(const nlohmann::json& trace, int rank, const std::string& what);

}  // namespace shardbench::profile
