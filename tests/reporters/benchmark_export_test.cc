// `shardbench export` formats (reporters/benchmark_export.h) against golden files, and Google
// Benchmark JSON read back by compare and history (reporters/gbench_import.h).
#include <fstream>
#include <iterator>

#include <gtest/gtest.h>

#include "engine/common/error.h"
#include "reporters/benchmark_export.h"
#include "reporters/compare.h"
#include "reporters/gbench_import.h"
#include "tests/reporters/compare_fixtures.h"
#include "tests/support/multi_rank.h"

namespace shardbench {
namespace {

using namespace fixtures;  // NOLINT: the fixtures are this file's vocabulary

nlohmann::json StepTime(const std::vector<double>& samples) {
  nlohmann::json m = Sampled("step_time", "lower", samples);
  m["unit"] = "s";
  return m;
}

// Two instances that ran (one sampled rate, one time, one exact byte count), one that failed.
ResultSet FixedRun() {
  auto ok = Result("flat_lora", {Sampled("tokens_per_s", "higher", {1000, 1002, 998, 1001, 999}),
                                 StepTime({0.5, 0.25, 0.75}), Exact("grad_bytes", {259584, 261632})});
  ok["provenance"] = {{"shardbench", "0.2.0"}, {"git_sha", "abc1234"}, {"torch", "2.11.0"}, {"host", "ci-runner"},
                      {"cpu_count", 2}, {"build_type", "Release"}};
  auto failed = Result("per_param_lora", {Exact("grad_bytes", {10})}, {{{"name", "loss_parity"}, {"passed", false},
                                                                       {"detail", "step 3 off by 2%"}}});
  failed["status"] = "failed";
  failed["message"] = "loss_parity: step 3 off by 2%";
  ResultSet run = Set({ok, failed});
  run.instances[1].message = "loss_parity: step 3 off by 2%";
  run.started_at = "2026-12-01T00:00:00Z";
  run.source = "runs/nightly";
  return run;
}

TEST(BenchmarkExport, GoldenFiles) {
  const std::string dir = std::string(SHARDBENCH_SOURCE_DIR) + "/tests/reporters/golden/";
  for (const char* name : {"gbench", "bencher", "gab-smaller", "gab-bigger"}) {
    const std::string text = ExportResults(FixedRun(), *ParseExportFormat(name)).document.dump(2) + "\n";
    const std::string file = dir + "export." + name + ".json";
    if (std::getenv("SHARDBENCH_UPDATE_GOLDEN")) std::ofstream(file) << text;
    std::ifstream in(file);
    const std::string golden((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    EXPECT_EQ(text, golden) << file << " differs from the golden output (SHARDBENCH_UPDATE_GOLDEN=1 regenerates it)";
  }
}

TEST(BenchmarkExport, GoogleBenchmarkHasItsDocumentedFields) {
  const nlohmann::json doc = ExportResults(FixedRun(), ExportFormat::kGoogleBenchmark).document;
  for (const char* key : {"date", "host_name", "executable", "num_cpus", "mhz_per_cpu", "cpu_scaling_enabled", "caches"})
    EXPECT_TRUE(doc["context"].contains(key)) << key;
  size_t iterations = 0, errors = 0;
  std::vector<std::string> aggregates;
  for (const auto& b : doc["benchmarks"]) {
    for (const char* key : {"name", "run_name", "run_type", "repetitions", "threads", "iterations", "real_time",
                            "cpu_time", "time_unit"})
      EXPECT_TRUE(b.contains(key)) << b.dump() << " lacks " << key;
    EXPECT_EQ(b["time_unit"], "us");
    if (b.value("error_occurred", false)) {
      ++errors;
    } else if (b["run_type"] == "aggregate") {
      aggregates.push_back(b["name"]);
    } else {
      ++iterations;
    }
  }
  EXPECT_EQ(iterations, 5u + 3u + 1u);  // one per launch: the fixture's metrics ran 5, 3 and 1 launches
  EXPECT_EQ(aggregates, (std::vector<std::string>{"flat_lora/tokens_per_s_mean", "flat_lora/tokens_per_s_median",
                                                   "flat_lora/tokens_per_s_stddev", "flat_lora/tokens_per_s_cv",
                                                   "flat_lora/step_time_mean", "flat_lora/step_time_median",
                                                   "flat_lora/step_time_stddev", "flat_lora/step_time_cv"}));
  EXPECT_EQ(errors, 1u);  // the failed instance, named with why
  const auto& step = doc["benchmarks"][9];  // after tokens_per_s: 5 launches, 4 aggregates
  EXPECT_EQ(step["name"], "flat_lora/step_time");
  EXPECT_EQ(step["real_time"], 500000.0);  // 0.5 s in microseconds: compare.py prints no decimals
  EXPECT_EQ(step["repetitions"], 3);
  EXPECT_EQ(doc["benchmarks"][14]["name"], "flat_lora/step_time_stddev");
  EXPECT_DOUBLE_EQ(doc["benchmarks"][14]["real_time"].get<double>(), 250000.0);  // sample stddev of .5 .25 .75 s
}

// One launch of 20 steps is one row per metric, as a Google Benchmark program run once: the
// steps are not repetitions (compare.py showed 20 rows, and U-tested steps as if launches).
TEST(BenchmarkExport, GoogleBenchmarkWritesALaunchNotAStepPerRow) {
  std::vector<double> steps;
  for (int i = 0; i < 20; ++i) steps.push_back(0.01 + 0.0001 * i);
  nlohmann::json step_time = StepTime(steps);
  step_time.erase("repetition_medians");
  step_time["median"] = 0.01095;
  const nlohmann::json doc = ExportResults(Set({Result("one", {step_time})}), ExportFormat::kGoogleBenchmark).document;
  ASSERT_EQ(doc["benchmarks"].size(), 1u) << doc.dump(1);
  EXPECT_EQ(doc["benchmarks"][0]["run_type"], "iteration");
  EXPECT_DOUBLE_EQ(doc["benchmarks"][0]["real_time"].get<double>(), 10950.0);
  EXPECT_EQ(doc["benchmarks"][0]["shardbench"]["samples"].size(), 20u);  // read back by `compare`
}

TEST(BenchmarkExport, BencherAndGabLeaveOutWhatDidNotPass) {
  const Export bencher = ExportResults(FixedRun(), ExportFormat::kBencher);
  EXPECT_FALSE(bencher.document.contains("per_param_lora"));
  EXPECT_EQ(bencher.document["flat_lora"]["tokens_per_s"]["value"], 1000);
  EXPECT_EQ(bencher.document["flat_lora"]["tokens_per_s"]["lower_value"], 998);
  EXPECT_EQ(bencher.document["flat_lora"]["step_time"]["upper_value"], 0.75);
  ASSERT_EQ(bencher.left_out.size(), 1u);
  EXPECT_EQ(bencher.left_out[0], "per_param_lora: failed (loss_parity: step 3 off by 2%)");
  const nlohmann::json bigger = ExportResults(FixedRun(), ExportFormat::kGabBiggerIsBetter).document;
  ASSERT_EQ(bigger.size(), 1u);
  EXPECT_EQ(bigger[0]["name"], "flat_lora/tokens_per_s");
  EXPECT_EQ(ExportResults(FixedRun(), ExportFormat::kGabSmallerIsBetter).document.size(), 2u);
  EXPECT_FALSE(ParseExportFormat("gab").has_value());
}

TEST(GoogleBenchmarkImport, OurExportReadsBackAsItWas) {
  const ResultSet run = FixedRun();
  const nlohmann::json doc = ExportResults(run, ExportFormat::kGoogleBenchmark).document;
  ASSERT_TRUE(IsGoogleBenchmark(doc));
  const ResultSet back = ImportGoogleBenchmark(doc, "nightly.gbench.json");
  ASSERT_EQ(back.instances.size(), 2u);
  EXPECT_EQ(back.instances[1].name, "per_param_lora");
  EXPECT_EQ(back.instances[1].status, "error");
  const StoredResult was = ReadInstance(run.instances[0]), is = ReadInstance(back.instances[0]);
  ASSERT_EQ(is.metrics.size(), was.metrics.size());
  for (size_t i = 0; i < is.metrics.size(); ++i) {
    EXPECT_EQ(is.metrics[i].name, was.metrics[i].name);
    EXPECT_EQ(is.metrics[i].unit, was.metrics[i].unit);
    EXPECT_EQ(is.metrics[i].better, was.metrics[i].better);
    EXPECT_EQ(is.metrics[i].kind, was.metrics[i].kind);
    EXPECT_EQ(is.metrics[i].samples, was.metrics[i].samples);
    EXPECT_EQ(is.metrics[i].repetition_medians, was.metrics[i].repetition_medians);
  }
  EXPECT_EQ(is.provenance["git_sha"], "abc1234");
  EXPECT_EQ(back.started_at, "2026-12-01T00:00:00Z");
}

// As a Google Benchmark program writes it with --benchmark_repetitions=5 (times in ns, a rate
// counter, aggregates, one benchmark that skipped with an error).
nlohmann::json MicroBenchmarkRun(double scale) {
  nlohmann::json benchmarks = nlohmann::json::array();
  for (int k = 0; k < 5; ++k) {
    benchmarks.push_back({{"name", "BM_Gather/units:4"}, {"run_name", "BM_Gather/units:4"}, {"run_type", "iteration"},
                          {"repetitions", 5}, {"repetition_index", k}, {"threads", 1}, {"iterations", 1000},
                          {"real_time", scale * (1500 + k)}, {"cpu_time", scale * (1400 + k)}, {"time_unit", "ns"},
                          {"bytes_per_second", 1e9 / scale}, {"units", 4}});
  }
  benchmarks.push_back({{"name", "BM_Gather/units:4_mean"}, {"run_name", "BM_Gather/units:4"}, {"run_type", "aggregate"},
                        {"aggregate_name", "mean"}, {"real_time", 1}, {"cpu_time", 1}, {"time_unit", "ns"}});
  benchmarks.push_back({{"name", "BM_Broken"}, {"run_name", "BM_Broken"}, {"run_type", "iteration"},
                        {"error_occurred", true}, {"error_message", "no GPU"}, {"real_time", 0}, {"cpu_time", 0},
                        {"time_unit", "ns"}});
  return {{"context", {{"date", "2026-12-02T01:02:03+00:00"}, {"num_cpus", 2}}}, {"benchmarks", benchmarks}};
}

TEST(GoogleBenchmarkImport, AProgramsOutputIsGatedLikeOurResults) {
  const ResultSet base = ImportGoogleBenchmark(MicroBenchmarkRun(1), "base.json");
  ASSERT_EQ(base.instances.size(), 2u);
  const StoredResult gather = ReadInstance(base.instances[0]);
  ASSERT_EQ(gather.metrics.size(), 3u);  // real_time, cpu_time, bytes_per_second; "units" has no direction
  EXPECT_EQ(gather.metrics[0].name, "real_time");
  EXPECT_EQ(gather.metrics[0].samples, (std::vector<double>{1500 * 1e-9, 1501 * 1e-9, 1502 * 1e-9, 1503 * 1e-9, 1504 * 1e-9}));  // not the mean
  EXPECT_EQ(gather.metrics[2].better, "higher");
  EXPECT_EQ(base.instances[1].status, "error");
  EXPECT_EQ(base.instances[1].message, "no GPU");

  // Twice as slow, five repetitions a side: judged under the default policy.
  const Comparison c = Compare(base, ImportGoogleBenchmark(MicroBenchmarkRun(2), "current.json"), DefaultGatePolicy(),
                               "2026-12-02");
  bool real_time_judged = false;
  for (const auto& m : c.metrics) {
    if (m.instance == "BM_Gather/units:4" && m.metric == "real_time") {
      real_time_judged = true;
      EXPECT_EQ(m.verdict, Verdict::kRegression) << m.detail;
    }
  }
  EXPECT_TRUE(real_time_judged);
}

TEST(GoogleBenchmarkImport, MalformedEntriesNameTheField) {
  nlohmann::json doc = MicroBenchmarkRun(1);
  doc["benchmarks"][1]["time_unit"] = "fortnights";
  try {
    ImportGoogleBenchmark(doc, "micro.json");
    FAIL() << "accepted a time unit Google Benchmark never writes";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("micro.json"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("benchmarks[1].time_unit"), std::string::npos) << e.what();
  }
  EXPECT_THROW(ImportGoogleBenchmark({{"context", nlohmann::json::object()}, {"benchmarks", nlohmann::json::array()}}, "e.json"),
               InputError);
}

}  // namespace
}  // namespace shardbench
