// Results as `compare` and `history` read them: one result file, a suite's index.json (every
// instance, including those that could not run, with their expected colour), Google Benchmark
// JSON (reporters/gbench_import.h), or a directory holding result files or an index. History is
// a directory of such runs, oldest first.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "reporters/results_reader.h"

namespace shardbench {

// green: every check passed; red: a check failed; error: it could not run (bad input such as
// a combination the engine refuses, or infrastructure).
std::string Colour(const std::string& status);

struct InstanceResult {
  std::string name;
  nlohmann::json result;    // the results JSON as written (checked on loading); null when the instance could not run
  std::string status;       // ok | failed | error
  std::string message;
  std::string expect;       // from a suite index: green | red | error ("" if none)
  bool as_expected = false; // from a suite index
  std::string file;         // where it was read from
  std::string why;          // from a suite index: what the case demonstrates
  // The suite's verdict when an index gave one, else whether it passed.
  bool ended_as_expected() const { return expect.empty() ? status == "ok" : as_expected; }
};

struct ResultSet {
  std::string source;
  std::string started_at;  // the earliest instance's
  std::vector<InstanceResult> instances;
  const InstanceResult* find(const std::string& name) const;
};

// An instance's result, typed (reports read it through this, never the JSON by name); its file
// names it in errors. Not for an instance that could not run (result null).
StoredResult ReadInstance(const InstanceResult& instance);

// InputError naming the path for anything that is not results (or is of another schema version).
ResultSet LoadResultSet(const std::string& path);
// Every run directory (or result file) directly under `dir`, ordered by start time.
std::vector<ResultSet> LoadHistory(const std::string& dir);

}  // namespace shardbench
