#include "reporters/results_reader.h"

#include <algorithm>
#include <fstream>
#include <map>
#include <set>

#include "engine/common/error.h"
#include "reporters/json_field.h"

namespace shardbench {
namespace {

// A file must hold every field the schema requires; a result in memory (merged launches, a
// test's fixture) may leave out what no report needs, and those take their defaults. Either
// way, a field that is there is checked.
struct Reader {
  bool strict;
  std::optional<JsonField> Field(const JsonField& parent, const std::string& key) const {
    return strict ? std::optional<JsonField>(parent.Required(key)) : parent.Optional(key);
  }
};

std::optional<double> NumberOrNull(const std::optional<JsonField>& f) {
  if (!f || f->json().is_null()) return std::nullopt;
  return f->Number();
}

std::map<std::string, int64_t> Bytes(const JsonField& f) {
  std::map<std::string, int64_t> out;
  for (const auto& [key, value] : f.Members()) out[key] = value.NonNegativeInteger();
  return out;
}

// Units whose values are never negative (every unit we write but `ratio`, and Google Benchmark's
// times): a negative one was edited in or made by a broken exporter, and a gate would judge it.
bool NeverNegative(const std::string& unit) {
  static const std::set<std::string> units = {"bytes", "count", "s", "ms", "us", "ns", "tokens/s", "FLOP/s",
                                              "FLOPs", "instructions", "calibrations"};
  return units.count(unit) != 0;
}

void RefuseNegative(const JsonField& f, const std::string& key, const std::string& unit) {
  const auto field = f.Optional(key);
  if (!field || field->json().is_null()) return;
  std::vector<JsonField> values;
  if (field->json().is_array()) {
    values = field->Elements();
  } else {
    values.push_back(*field);
  }
  for (const auto& v : values) {
    if (v.json().is_number() && v.json().get<double>() < 0) {
      v.Fail("a value of unit '" + unit + "', never negative");
    }
  }
}

// A list whose entries are looked up by name (metrics, checks, instances): the first of two
// alike would be judged and the second ignored, so a merged or hand-edited file that repeats a
// name could turn a regression green. Refused, naming both entries.
void RefuseRepeated(const std::string& file, const std::string& list, const std::vector<std::pair<size_t, std::string>>& named) {
  std::map<std::string, size_t> first;
  for (const auto& [i, name] : named) {
    const auto [it, fresh] = first.emplace(name, i);
    if (!fresh) {
      throw InputError(file + ": field \"" + list + "[" + std::to_string(i) + "]\": '" + name + "' appears twice (also " +
                       list + "[" + std::to_string(it->second) + "]); each is named once");
    }
  }
}

template <typename Entry>
std::vector<std::pair<size_t, std::string>> Named(const std::vector<Entry>& entries) {
  std::vector<std::pair<size_t, std::string>> out;
  for (size_t i = 0; i < entries.size(); ++i) out.push_back({i, entries[i].name});
  return out;
}

StoredMetric ReadMetric(const JsonField& in, const Reader& r) {
  StoredMetric m;
  m.name = in.Required("name").String();
  // A name is looked up, printed and made into report rows: an empty one or one with control
  // characters (a NUL cuts it short in C strings) was never written by us.
  const bool control = std::any_of(m.name.begin(), m.name.end(), [](char c) { return static_cast<unsigned char>(c) < 0x20; });
  if (m.name.empty() || control) in.Required("name").Fail("a metric name (not empty, no control characters)");
  const JsonField f = in.At(in.path().substr(0, in.path().rfind('[')) + "." + m.name);  // "metrics.step_time"
  m.unit = f.Required("unit").String();
  m.better = f.Required("better").OneOf({"lower", "higher"});
  m.kind = f.Required("kind").OneOf({"exact", "sampled"});
  m.samples = f.Required("samples").NumbersOrNaN();
  m.per_rank = f.Required("per_rank").NumbersOrNaN();
  m.median = NumberOrNull(r.Field(f, "median"));
  m.p10 = NumberOrNull(r.Field(f, "p10"));
  m.p90 = NumberOrNull(r.Field(f, "p90"));
  m.min = NumberOrNull(r.Field(f, "min"));
  m.max = NumberOrNull(r.Field(f, "max"));
  if (auto reps = f.Optional("repetition_medians")) m.repetition_medians = reps->NumbersOrNaN();
  if (NeverNegative(m.unit)) {
    for (const char* key : {"samples", "per_rank", "median", "p10", "p90", "min", "max", "repetition_medians"}) {
      RefuseNegative(f, key, m.unit);
    }
  }
  return m;
}

RankMemory ReadMemory(const JsonField& f, const Reader& r) {
  RankMemory m;
  if (auto v = r.Field(f, "rank")) m.rank = static_cast<int>(v->NonNegativeInteger());
  if (auto v = r.Field(f, "categories")) m.categories = Bytes(*v);
  if (auto v = f.Optional("peak_by_category")) m.peak_by_category = Bytes(*v);
  if (auto v = f.Optional("held")) m.held = Bytes(*v);
  if (auto v = r.Field(f, "peak_allocated"); v && !v->json().is_null()) m.peak_allocated = v->NonNegativeInteger();
  if (auto v = r.Field(f, "peak_reserved"); v && !v->json().is_null()) m.peak_reserved = v->NonNegativeInteger();
  if (auto v = r.Field(f, "host_rss_peak"); v && !v->json().is_null()) m.host_rss_peak = v->NonNegativeInteger();
  return m;
}

RankSteps ReadRankSteps(const JsonField& f) {
  RankSteps s;
  const auto seconds = f.Required("step_seconds").Elements(), wait = f.Required("comm_wait_seconds").Elements();
  if (wait.size() != seconds.size()) f.Required("comm_wait_seconds").Fail(std::to_string(seconds.size()) + " ranks (as step_seconds)");
  for (size_t r = 0; r < seconds.size(); ++r) {
    s.step_seconds.push_back(seconds[r].NumbersOrNaN());
    s.comm_wait_seconds.push_back(wait[r].NumbersOrNaN());
    if (s.comm_wait_seconds[r].size() != s.step_seconds[r].size()) {
      wait[r].Fail(std::to_string(s.step_seconds[r].size()) + " steps (as step_seconds[" + std::to_string(r) + "])");
    }
  }
  return s;
}

ConfigFields ReadConfigFields(const JsonField& config) {
  ConfigFields c;
  if (auto v = config.Optional("engine")) c.engine = v->String();
  if (auto train = config.Optional("train")) {
    if (auto w = train->Optional("warmup_steps")) {
      if (w->json().is_string()) {
        w->OneOf({"auto"});  // found in the steps themselves: no number to read
      } else {
        c.warmup_steps = w->NonNegativeInteger();
      }
    }
  }
  if (auto checks = config.Optional("checks")) {
    if (auto v = checks->Optional("loss_rtol")) c.loss_rtol = v->Number();
    if (auto v = checks->Optional("loss_parity_steps")) c.loss_parity_steps = v->NonNegativeInteger();
  }
  return c;
}

StoredResult Read(const nlohmann::json& document, const std::string& file, const Reader& r) {
  const JsonField root(document, file);
  StoredResult out;
  out.source = file;
  if (auto v = r.Field(root, "schema_version")) out.schema_version = v->Integer();
  if (auto v = r.Field(root, "run_id")) out.run_id = v->String();
  if (auto v = r.Field(root, "started_at")) out.started_at = v->String();
  if (auto v = r.Field(root, "provenance")) {
    out.provenance = v->Object();
    if (auto torch = v->Optional("torch")) out.torch = torch->String();
    if (auto peer = v->Optional("peer")) out.peer = peer->Object();
  }
  if (auto v = r.Field(root, "scenario")) {
    out.scenario = v->Object();
    if (auto name = r.Field(*v, "name")) out.name = name->String();
    if (auto config = r.Field(*v, "config")) {
      out.config = config->Object();
      out.config_fields = ReadConfigFields(*config);
    }
  }
  if (auto v = r.Field(root, "status")) out.status = v->OneOf({"ok", "failed", "error"});
  if (auto v = r.Field(root, "message")) out.message = v->String();
  for (const auto& m : root.Required("metrics").Elements()) out.metrics.push_back(ReadMetric(m, r));
  if (auto v = r.Field(root, "memory")) {
    for (const auto& m : v->Elements()) out.memory.push_back(ReadMemory(m, r));
  }
  if (auto v = r.Field(root, "checks")) {
    for (const auto& c : v->Elements()) {
      out.checks.push_back({c.Required("name").String(), c.Required("passed").Bool(), c.Required("detail").String()});
    }
  }
  if (auto v = r.Field(root, "loss")) out.loss = v->NumbersOrNaN();
  if (auto v = root.Optional("memory_model"); v && !v->json().is_null()) out.memory_model = v->Object();
  if (auto v = root.Optional("per_rank_steps")) out.per_rank_steps = ReadRankSteps(*v);
  if (auto v = root.Optional("steady_state_step")) out.steady_state_step = v->NonNegativeInteger();
  if (auto v = root.Optional("measured_from_step")) out.measured_from_step = v->NonNegativeInteger();
  if (auto v = root.Optional("resumed_from_step")) out.resumed_from_step = v->NonNegativeInteger();
  if (auto v = root.Optional("repetitions")) out.repetitions = v->NonNegativeInteger();
  if (auto v = root.Optional("not_measured")) {
    for (const auto& n : v->Elements()) out.not_measured.push_back({n.Required("name").String(), n.Required("why").String()});
  }
  if (auto v = root.Optional("peer_warnings")) {
    for (const auto& w : v->Elements()) out.peer_warnings.push_back(w.String());
  }
  if (auto v = root.Optional("loss_by_repetition")) {
    out.loss_by_repetition.emplace();
    for (const auto& l : v->Elements()) out.loss_by_repetition->push_back(l.NumbersOrNaN());
  }
  if (auto v = root.Optional("per_rank_steps_by_repetition")) {
    out.per_rank_steps_by_repetition.emplace();
    for (const auto& s : v->Elements()) {
      out.per_rank_steps_by_repetition->push_back(s.json().is_null() ? std::nullopt : std::optional<RankSteps>(ReadRankSteps(s)));
    }
  }
  if (auto v = root.Optional("measured_from_step_by_repetition")) {
    out.measured_from_step_by_repetition.emplace();
    for (const auto& s : v->Elements()) out.measured_from_step_by_repetition->push_back(s.NonNegativeInteger());
  }
  RefuseRepeated(file, "metrics", Named(out.metrics));
  RefuseRepeated(file, "checks", Named(out.checks));
  RefuseRepeated(file, "not_measured", Named(out.not_measured));
  return out;
}

}  // namespace

const StoredMetric* StoredResult::metric(const std::string& wanted) const {
  for (const auto& m : metrics) {
    if (m.name == wanted) return &m;
  }
  return nullptr;
}

const NotMeasured* StoredResult::not_measured_metric(const std::string& wanted) const {
  for (const auto& n : not_measured) {
    if (n.name == wanted) return &n;
  }
  return nullptr;
}

StoredResult ReadResultFile(const nlohmann::json& document, const std::string& file) {
  if (!document.is_object()) JsonField(document, file).Fail("a results object");
  const auto version = document.find("schema_version");
  if (version == document.end() || *version != kResultsSchemaVersion) {
    throw InputError(file + ": results schema version " + (version == document.end() ? "missing" : version->dump()) +
                     ", this build reads " + std::to_string(kResultsSchemaVersion));
  }
  return Read(document, file, {true});
}

StoredResult ReadResult(const nlohmann::json& result, const std::string& source) { return Read(result, source, {false}); }

std::vector<IndexEntry> ReadIndex(const nlohmann::json& index, const std::string& file) {
  std::vector<IndexEntry> out;
  const JsonField root(index, file);
  // An index another build wrote is refused as its results are (an index without one is an
  // older build's or a hand-made one: read).
  if (const auto version = root.OptionalNonNull("schema_version"); version && version->Integer() != kResultsSchemaVersion) {
    throw InputError(file + ": index schema version " + version->json().dump() + ", this build reads " +
                     std::to_string(kResultsSchemaVersion));
  }
  for (const auto& e : root.Required("instances").Elements()) {
    IndexEntry entry;
    auto text = [&](const char* key) { return e.OptionalNonNull(key) ? std::optional<std::string>(e.Required(key).String()) : std::nullopt; };
    entry.name = text("name");
    entry.file = text("file");
    // An index names files beside it; a path that leaves its directory is not one of ours.
    if (entry.file && (entry.file->empty() || entry.file->find('/') != std::string::npos || *entry.file == "." ||
                       *entry.file == "..")) {
      throw InputError(file + ": instance " + (entry.name ? "'" + *entry.name + "'" : "entry") + ": field 'file' '" +
                       *entry.file + "' is not a file name beside the index");
    }
    entry.status = text("status");
    if (entry.status) e.Required("status").OneOf({"ok", "failed", "error", "running"});
    if (entry.status == "running" && entry.file) {
      throw InputError(file + ": instance " + (entry.name ? "'" + *entry.name + "'" : "entry") +
                       ": status 'running' with a result file: a running instance has none yet");
    }
    entry.message = text("message");
    entry.expect = text("expect");
    entry.why = text("why");
    entry.colour = text("colour");
    if (entry.colour) e.Required("colour").OneOf({"green", "red", "error"});
    if (auto v = e.Optional("as_expected")) entry.as_expected = v->Bool();
    if (auto v = e.OptionalNonNull("repetitions")) entry.repetitions = v->NonNegativeInteger();
    out.push_back(std::move(entry));
  }
  std::vector<std::pair<size_t, std::string>> names, files;  // entries without one are not compared
  for (size_t i = 0; i < out.size(); ++i) {
    if (out[i].name) names.push_back({i, *out[i].name});
    if (out[i].file) files.push_back({i, *out[i].file});
  }
  RefuseRepeated(file, "instances", names);
  RefuseRepeated(file, "instances", files);
  return out;
}

nlohmann::json ReadJsonFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw InputError(path + ": cannot be read");
  // JSON leaves a repeated key undefined and nlohmann keeps one of them silently: a hand-merged
  // result with two "median"s would be judged on whichever it kept. Refused while parsing.
  struct Container {
    std::string path;  // "metrics[].name" style: where it sits
    bool object;
    std::set<std::string> keys;
  };
  std::vector<Container> open;
  std::string key;
  bool after_key = false;
  auto callback = [&](int, nlohmann::json::parse_event_t event, nlohmann::json& value) {
    using E = nlohmann::json::parse_event_t;
    if (event == E::object_start || event == E::array_start) {
      const std::string parent = open.empty() ? "" : open.back().path;
      const std::string path = after_key ? (parent.empty() ? key : parent + "." + key) : parent + "[]";
      open.push_back({open.empty() ? "" : path, event == E::object_start, {}});
    } else if (event == E::object_end || event == E::array_end) {
      open.pop_back();
    } else if (event == E::key) {
      key = value.get<std::string>();
      if (!open.empty() && open.back().object && !open.back().keys.insert(key).second) {
        const std::string& where = open.back().path;
        throw InputError(path + ": key \"" + key + "\" appears twice in one object" +
                         (where.empty() ? "" : " (in \"" + where + "\")") + "; JSON keeps only one of them");
      }
    }
    after_key = event == E::key;
    return true;
  };
  try {
    return nlohmann::json::parse(in, callback);
  } catch (const nlohmann::json::exception& e) {
    throw InputError(path + ": not valid JSON: " + e.what());
  }
}

}  // namespace shardbench
