#include "engine/profile/span_overlap.h"

#include <algorithm>

#include "engine/profile/interval_set.h"

namespace shardbench::profile {

SpanOverlap SummarizeSpans(const std::vector<Span>& spans, int64_t window_begin, int64_t window_end) {
  std::vector<Interval> busy, waits, communication;
  for (const Span& s : spans) {
    const Interval clipped{std::max(s.begin_ns, window_begin), std::min(s.end_ns, window_end)};
    if (s.track == SpanTrack::kCommunication) {
      communication.push_back(clipped);
    } else if (s.category == "wait") {
      waits.push_back(clipped);
    } else if (s.category != "step") {  // a step span covers its idle time too
      busy.push_back(clipped);
    }
  }
  // Waits nest inside the spans that wait (an unshard, a backward): the thread computes inside
  // those spans except while it waits.
  const auto c = Difference(Union(std::move(busy)), Union(std::move(waits)));
  const auto m = Union(std::move(communication));
  SpanOverlap o;
  o.window_ns = std::max<int64_t>(0, window_end - window_begin);
  o.compute_ns = Length(c);
  o.communication_ns = Length(m);
  o.exposed_ns = o.communication_ns - Intersection(m, c);
  o.idle_ns = o.window_ns - (o.compute_ns + o.communication_ns - Intersection(m, c));
  return o;
}

}  // namespace shardbench::profile
