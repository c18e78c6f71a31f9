"""The malformed-input corpus: each case is bad input with the exit code and the words its
message must hold (the file, the line where there is one, the field). run_corpus.py runs them.
Cases are generated per field and value class, then hand-written ones follow."""
import json
import os
import struct

BASE = """name: base
model: tiny
lora:
  enabled: true
  r: 16
  alpha: 32
  targets: [q_proj, v_proj]
engine: reference
train:
  batch_size: 2
  seq_len: 16
  steps: 2
  warmup_steps: 0
  lr: 0.01
  seed: 1234
world_size: 1
backend: gloo
timeout_s: 60
"""


def with_line(text, key, value):
    """BASE with the (indented) line of `key` replaced by `key: value`; returns text and 1-based line."""
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if line.strip().startswith(key + ":"):
            indent = line[: len(line) - len(line.lstrip())]
            lines[i] = f"{indent}{key}: {value}"
            return "\n".join(lines) + "\n", i + 1
    raise KeyError(key)


def scenario_case(name, text, says, argv=("show",), exit=2, extra=()):
    return {"name": name, "files": {"s.yaml": text}, "argv": [*argv, "{case}/s.yaml", *extra], "says": says, "exit": exit}


# Fields and the bad values every one of them must refuse, by kind.
INTS = ["train.batch_size", "train.seq_len", "train.steps", "train.seed", "lora.r", "world_size", "train.warmup_steps"]
POSITIVE = ["train.batch_size", "train.seq_len", "train.steps", "lora.r", "world_size"]
FLOATS = ["train.lr", "lora.alpha", "timeout_s"]
CHOICES = ["engine", "backend", "model"]
BOOLS = ["lora.enabled"]
WRONG_TYPE = {"list": "[1, 2]", "map": "{a: 1}", "word": "abc"}


def generated(ctx):
    out = []
    for field in INTS + FLOATS + BOOLS:
        key = field.split(".")[-1]
        for kind, value in WRONG_TYPE.items():
            if field in BOOLS and kind == "word":
                value = "maybe"
            text, line = with_line(BASE, key, value)
            out.append(scenario_case(f"{field}-{kind}", text, ["{case}/s.yaml:%d" % line, field]))
    for field in POSITIVE:
        key = field.split(".")[-1]
        for kind, value in {"zero": "0", "negative": "-3"}.items():
            text, line = with_line(BASE, key, value)
            out.append(scenario_case(f"{field}-{kind}", text, ["{case}/s.yaml:%d" % line, field]))
    for field in INTS:
        key = field.split(".")[-1]
        text, line = with_line(BASE, key, "99999999999999999999999")
        out.append(scenario_case(f"{field}-overflow", text, ["{case}/s.yaml:%d" % line, field]))
        text, line = with_line(BASE, key, "2.5")
        out.append(scenario_case(f"{field}-fraction", text, ["{case}/s.yaml:%d" % line, field]))
    for field in FLOATS:
        key = field.split(".")[-1]
        for kind, value in {"inf": ".inf", "nan": ".nan", "negative": "-1", "huge": "1e400"}.items():
            if field == "lora.alpha" and kind == "negative":
                continue
            text, line = with_line(BASE, key, value)
            out.append(scenario_case(f"{field}-{kind}", text, ["{case}/s.yaml:%d" % line, field]))
    for field in CHOICES:
        text, line = with_line(BASE, field, "no_such_choice")
        out.append(scenario_case(f"{field}-unknown", text, ["{case}/s.yaml:%d" % line, field]))
        text, line = with_line(BASE, field, "[a, b]")
        out.append(scenario_case(f"{field}-list", text, ["{case}/s.yaml:%d" % line, field]))
    # The same through command-line overrides.
    for field in INTS + FLOATS + CHOICES:
        for value in ["abc", "[1,2]", "{a: 1}", ""]:
            if field in CHOICES and value == "abc":
                value = "no_such_choice"
            out.append({"name": f"override-{field}={value}", "argv": ["show", ctx["smoke"], f"{field}={value}"],
                        "says": [field]})
    return out


def yaml_shapes():
    top = [
        ("empty-file", "", ["s.yaml"]),
        ("top-level-list", "- a\n- b\n", ["s.yaml", "mapping"]),
        ("top-level-scalar", "hello\n", ["s.yaml"]),
        ("unclosed-bracket", BASE + "lora2: [a, b\n", ["s.yaml:"]),
        ("tab-indent", BASE.replace("  r: 16", "\tr: 16"), ["s.yaml:"]),
        ("unknown-key", BASE + "trian:\n  steps: 3\n", ["s.yaml:19", "trian"]),
        ("unknown-nested-key", BASE.replace("  seed: 1234", "  sede: 1234"), ["s.yaml:15", "train.sede"]),
        ("section-not-map", BASE.replace("lora:\n  enabled: true\n  r: 16\n  alpha: 32\n  targets: [q_proj, v_proj]\n",
                                         "lora: 3\n"), ["s.yaml:3", "lora"]),
        ("duplicate-key", BASE + "engine: flat\n", ["s.yaml:19", "engine"]),
        ("duplicate-nested-key", BASE.replace("  seed: 1234", "  seed: 1234\n  seed: 99"), ["s.yaml:16", "seed", "line 15"]),
        ("complex-key", BASE + "? [a, b]\n: 3\n", ["s.yaml:19"]),
        ("null-key", BASE + "~: 3\n", ["s.yaml:19"]),
        ("alias-bomb", "a: &a [x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a]\n"
                       "c: &c [*b, *b, *b, *b, *b, *b, *b, *b]\nd: [*c, *c, *c, *c, *c, *c, *c, *c]\n", ["s.yaml:1"]),
        ("binary-garbage", bytes(range(256)) * 4, ["s.yaml"]),
        ("lora-targets-not-list", BASE.replace("targets: [q_proj, v_proj]", "targets: 3"), ["s.yaml:7", "lora.targets"]),
        ("lora-targets-unknown", BASE.replace("targets: [q_proj, v_proj]", "targets: [nope]"), ["lora.targets"]),
        ("name-list", BASE.replace("name: base", "name: [a, b]"), ["s.yaml:1", "name"]),
        ("name-dotdot", BASE.replace("name: base", "name: '..'"), ["s.yaml", ".."]),
        ("name-empty", BASE.replace("name: base", "name: ''"), ["s.yaml", "name"]),
        ("failpoints-unknown", BASE + "failpoints: [nope]\n", ["s.yaml:19", "failpoints"]),
        ("matrix-not-map", BASE + "matrix: 3\n", ["s.yaml:19", "matrix"]),
        ("matrix-unknown-axis", BASE + "matrix:\n  train.nope: [1, 2]\n", ["s.yaml:20", "train.nope"]),
        ("matrix-empty-axis", BASE + "matrix:\n  train.steps: []\n", ["s.yaml:20", "train.steps"]),
        ("matrix-bad-value", BASE + "matrix:\n  train.steps: [1, abc]\n", ["s.yaml:20", "train.steps"]),
        ("matrix-too-large", BASE + "matrix:\n" + "".join(
            f"  {k}: [{', '.join(str(v) for v in range(1, 11))}]\n"
            for k in ["train.steps", "train.seed", "train.batch_size", "train.seq_len", "lora.r", "train.warmup_steps"]),
         ["s.yaml", "matrix", "instances"]),
        # Found by scripts/fuzz.sh (tests/fuzz/regressions/scenario): a mapping as an axis or exclude key.
        ("matrix-axis-is-map", BASE + "matrix:\n  {a: 1}: [1]\n", ["s.yaml:20", "plain word"]),
        ("exclude-key-is-map", BASE + "matrix:\n  train.steps: [1, 2]\nexclude:\n  - {[a]: 1}\n", ["s.yaml:22", "plain word"]),
        # engine accelerate: its FSDP version, and what its plugin does not map.
        ("accelerate-fsdp-version-3", BASE.replace("engine: reference", "engine: accelerate") + "accelerate:\n  fsdp_version: 3\n",
         ["s.yaml:20", "accelerate.fsdp_version", "from 1 to 2"]),
        ("accelerate-lora-separate", BASE.replace("engine: reference", "engine: accelerate").replace("world_size: 1", "world_size: 2")
         + "sharding:\n  wrap_policy: lora_separate\n", ["s.yaml", "engine=accelerate", "sharding.wrap_policy=lora_separate"]),
        ("accelerate-fsdp2-optimizer-after-wrap", BASE.replace("engine: reference", "engine: accelerate")
         + "accelerate:\n  fsdp_version: 2\n", ["s.yaml", "optimizer.build=after_wrap", "before_wrap"]),
        # engine torchtune: what torchtune's recipes do not do.
        ("torchtune-sharded-checkpoint", BASE.replace("engine: reference", "engine: torchtune")
         + "checkpoint:\n  type: sharded\n", ["s.yaml", "engine=torchtune", "checkpoint.type", "gather_cpu_state_dict"]),
    ]
    return [scenario_case(n, t, s) for n, t, s in top]


def run_level(ctx):
    runs = [
        ("world-size-huge", BASE.replace("world_size: 1", "world_size: 100000"), ["world_size"]),
        ("seq-len-huge", BASE.replace("seq_len: 16", "seq_len: 1000000000"), ["s.yaml", "GiB per rank", "activations"]),
        ("batch-huge", BASE.replace("batch_size: 2", "batch_size: 1000000000"), ["s.yaml", "GiB per rank", "activations"]),
        ("vocab-huge", BASE + "model_shape:\n  vocab_size: 4000000000\n", ["s.yaml", "model_shape.vocab_size"]),
        ("layers-huge", BASE + "model_shape:\n  num_hidden_layers: 100000000\n", ["s.yaml", "GiB per rank", "weights"]),
        ("timeout-inf", BASE.replace("timeout_s: 60", "timeout_s: .inf"), ["s.yaml:18", "timeout_s"]),
        ("timeout-huge", BASE.replace("timeout_s: 60", "timeout_s: 1e300"), ["s.yaml:18", "timeout_s"]),
        ("tokens-without-path", BASE + "data:\n  source: tokens\n", ["s.yaml", "data.path"]),
        ("tokens-missing-file", BASE + "data:\n  source: tokens\n  path: /nonexistent/tokens.bin\n", ["data.path"]),
        ("tokens-directory", BASE + "data:\n  source: tokens\n  path: /tmp\n", ["data.path"]),
        ("tokens-fifo", BASE + "data:\n  source: tokens\n  path: {case}/fifo\n", ["data.path", "regular file"]),
        ("tokens-empty", BASE + "data:\n  source: tokens\n  path: {case}/empty.bin\n", ["{case}/empty.bin", "0 tokens"]),
        ("tokens-odd-bytes", BASE + "data:\n  source: tokens\n  path: {case}/odd.bin\n", ["{case}/odd.bin", "data.token_dtype"]),
        ("tokens-beyond-vocab", BASE + "data:\n  source: tokens\n  path: {case}/big.bin\n", ["{case}/big.bin", "vocab_size"]),
        ("model-dir-missing", BASE.replace("model: tiny", "model: {case}/nomodel/"), ["model"]),
        ("model-dir-empty", BASE.replace("model: tiny", "model: {case}/emptymodel"), ["config.json"]),
        ("model-config-garbage", BASE.replace("model: tiny", "model: {case}/garbagemodel"), ["config.json"]),
        ("model-config-negative", BASE.replace("model: tiny", "model: {case}/negmodel"), ["config.json", "hidden_size"]),
        ("safetensors-huge-header", BASE.replace("model: tiny", "model: {case}/hugeheader"), ["model.safetensors", "header"]),
        ("safetensors-bad-json", BASE.replace("model: tiny", "model: {case}/badjson"), ["model.safetensors"]),
        ("safetensors-offsets-beyond", BASE.replace("model: tiny", "model: {case}/beyond"), ["model.safetensors"]),
        ("safetensors-index-escapes", BASE.replace("model: tiny", "model: {case}/escapes"), ["model.safetensors.index.json"]),
        ("checkpoint-save-step-beyond", BASE + "checkpoint:\n  type: sharded\n  save_step: 50\n", ["checkpoint.save_step"]),
        ("resume-without-checkpoint", BASE + "checks:\n  resume: true\n", ["checks.resume"]),
        ("adapter-without-lora", BASE.replace("enabled: true", "enabled: false") + "checkpoint:\n  type: adapter\n",
         ["checkpoint.type"]),
        ("load-from-missing", BASE + "checkpoint:\n  load_from: {case}/nockpt\nchecks:\n  loss_parity: false\n",
         ["s.yaml:20", "checkpoint.load_from", "not a directory"]),
        ("load-from-dcp-on-ours", BASE + "checkpoint:\n  load_from: {case}/dcpckpt\nchecks:\n  loss_parity: false\n",
         ["checkpoint.load_from", "{case}/dcpckpt", "convert-checkpoint to-shardbench"]),
        ("load-from-with-loss-parity", BASE + "checkpoint:\n  load_from: {case}/badckpt\n",
         ["checkpoint.load_from", "checks.loss_parity"]),
        ("load-from-garbage-manifest", BASE + "checkpoint:\n  load_from: {case}/badckpt\nchecks:\n  loss_parity: false\n",
         ["{case}/badckpt/manifest.json"]),
    ]
    out = []
    for n, t, s in runs:
        # A fresh --out each: these fail inside the run, after the directory check.
        out.append({"name": f"run-{n}", "files": {"s.yaml": t}, "argv": ["run", "{case}/s.yaml", "--quiet", "--out", "{case}/out"],
                    "says": s, "setup": model_fixtures})
    return out


def model_fixtures(case_dir):
    """Files the run-level cases point at (made for each case; cheap)."""
    fifo = os.path.join(case_dir, "fifo")
    if not os.path.exists(fifo):
        os.mkfifo(fifo)
    open(os.path.join(case_dir, "empty.bin"), "wb").close()
    open(os.path.join(case_dir, "odd.bin"), "wb").write(b"\x01\x00\x02")
    open(os.path.join(case_dir, "big.bin"), "wb").write(struct.pack("<4H", 1, 2, 65000, 3) * 256)
    os.makedirs(os.path.join(case_dir, "emptymodel"), exist_ok=True)
    for d, config in {"garbagemodel": "{not json", "negmodel": json.dumps(TINY_CONFIG | {"hidden_size": -64})}.items():
        os.makedirs(os.path.join(case_dir, d), exist_ok=True)
        open(os.path.join(case_dir, d, "config.json"), "w").write(config)
    for d, blob in {"hugeheader": struct.pack("<Q", 1 << 60) + b"{}",
                    "badjson": struct.pack("<Q", 5) + b"{nope",
                    "beyond": safetensors({"model.embed_tokens.weight": {"dtype": "F32", "shape": [10, 10],
                                                                         "data_offsets": [0, 400]}}, b"\0" * 8)}.items():
        os.makedirs(os.path.join(case_dir, d), exist_ok=True)
        open(os.path.join(case_dir, d, "config.json"), "w").write(json.dumps(TINY_CONFIG))
        open(os.path.join(case_dir, d, "model.safetensors"), "wb").write(blob)
    for d, name, text in (("dcpckpt", ".metadata", ""), ("badckpt", "manifest.json", "{nope")):
        os.makedirs(os.path.join(case_dir, d), exist_ok=True)
        open(os.path.join(case_dir, d, name), "w").write(text)
    esc = os.path.join(case_dir, "escapes")
    os.makedirs(esc, exist_ok=True)
    open(os.path.join(esc, "config.json"), "w").write(json.dumps(TINY_CONFIG))
    open(os.path.join(esc, "model.safetensors.index.json"), "w").write(
        json.dumps({"weight_map": {"model.embed_tokens.weight": "../../../etc/passwd"}}))


def safetensors(header, data):
    h = json.dumps(header).encode()
    return struct.pack("<Q", len(h)) + h + data


TINY_CONFIG = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 64,
               "intermediate_size": 128, "num_attention_heads": 4, "num_key_value_heads": 4, "num_hidden_layers": 2,
               "vocab_size": 256, "max_position_embeddings": 128, "rms_norm_eps": 1e-6, "rope_theta": 10000.0,
               "tie_word_embeddings": False, "torch_dtype": "float32"}


SUITE_OK_RUN = "  - scenario: {smoke}\n"


def suites(ctx):
    smoke = ctx["smoke"]
    bad = [
        ("suite-not-map", "- a\n", ["suite.yaml"]),
        ("suite-runs-null", "name: x\nruns:\n", ["suite.yaml", "'runs' must be a non-empty list"]),
        ("suite-runs-empty", "name: x\nruns: []\n", ["suite.yaml:2", "runs"]),
        ("suite-runs-map", "name: x\nruns: {a: 1}\n", ["suite.yaml:2", "runs"]),
        ("suite-name-list", f"name: [a, b]\nruns:\n  - scenario: {smoke}\n", ["suite.yaml:1", "name"]),
        ("suite-unknown-key", f"name: x\nrunz: 3\nruns:\n  - scenario: {smoke}\n", ["suite.yaml:2", "runz"]),
        ("suite-run-not-map", "name: x\nruns:\n  - 3\n", ["suite.yaml:3", "scenario"]),
        ("suite-run-unknown-key", f"name: x\nruns:\n  - scenario: {smoke}\n    repetition: 2\n", ["suite.yaml:4", "repetition"]),
        ("suite-run-missing-scenario-file", "name: x\nruns:\n  - scenario: /nonexistent.yaml\n", ["suite.yaml:3", "nonexistent"]),
        ("suite-run-scenario-dir", "name: x\nruns:\n  - scenario: /tmp\n", ["suite.yaml:3", "scenario"]),
        ("suite-repetitions-zero", f"name: x\nruns:\n  - scenario: {smoke}\n    repetitions: 0\n", ["suite.yaml:4", "repetitions"]),
        ("suite-repetitions-word", f"name: x\nruns:\n  - scenario: {smoke}\n    repetitions: many\n", ["suite.yaml:4", "repetitions"]),
        ("suite-repetitions-huge", f"name: x\nruns:\n  - scenario: {smoke}\n    repetitions: 100000000\n",
         ["suite.yaml:4", "repetitions"]),
        ("suite-expect-bad", f"name: x\nruns:\n  - scenario: {smoke}\n    expect: blue\n", ["suite.yaml:4", "expect"]),
        ("suite-overrides-not-list", f"name: x\nruns:\n  - scenario: {smoke}\n    overrides: train.steps=3\n",
         ["suite.yaml:4", "overrides"]),
        ("suite-override-bad", f"name: x\nruns:\n  - scenario: {smoke}\n    overrides: [train.steps=abc]\n", ["train.steps"]),
        ("suite-name-collision", f"name: x\nruns:\n  - scenario: {smoke}\n    name: a/b\n  - scenario: {smoke}\n    name: a_b\n",
         ["suite.yaml:6", "a_b"]),
        ("suite-duplicate-names", f"name: x\nruns:\n  - scenario: {smoke}\n  - scenario: {smoke}\n", ["suite.yaml:4", "smoke"]),
        ("suite-name-index", f"name: x\nruns:\n  - scenario: {smoke}\n    name: index\n", ["suite.yaml:4", "index"]),
        ("suite-duplicate-key", f"name: x\nname: y\nruns:\n  - scenario: {smoke}\n", ["suite.yaml:2", "name"]),
        # Found by scripts/fuzz.sh: a path the filesystem cannot look at escaped as filesystem_error.
        ("suite-scenario-name-too-long", f"name: x\nruns:\n  - scenario: /tmp/{'a' * 300}.yaml\n",
         ["suite.yaml:3", "does not exist"]),
        ("suite-run-key-is-map", f"name: x\nruns:\n  - scenario: {smoke}\n    {{a: 1}}: 2\n", ["suite.yaml:4", "plain word"]),
    ]
    return [{"name": n, "files": {"suite.yaml": t}, "argv": ["run", "{case}/suite.yaml", "--quiet", "--out", ctx["previous"]],
             "says": s} for n, t, s in bad]


def results(ctx):
    """compare / dashboard / history / merge given damaged result files."""
    prev = ctx["previous"]
    good = json.load(open(os.path.join(prev, "smoke.json")))
    index = json.load(open(os.path.join(prev, "index.json")))

    def damaged(name, mutate, says=("smoke.json",), command=("compare",)):
        r = json.loads(json.dumps(good))
        mutate(r)
        files = {"cur/smoke.json": json.dumps(r), "cur/index.json": json.dumps(index)}
        return {"name": f"results-{name}", "files": files, "argv": [*command, prev, "{case}/cur", "--quiet"],
                "says": list(says)}

    def strip_values(r):
        for m in r["metrics"]:
            for k in ("samples", "median", "per_rank"):
                m.pop(k, None)

    def samples_as_strings(r):
        for m in r["metrics"]:
            m["samples"] = [str(x) for x in m.get("samples", [])]

    cases = [
        damaged("values-stripped", strip_values, ("smoke.json", "samples")),
        damaged("samples-strings", samples_as_strings, ("smoke.json", "samples")),
        damaged("metrics-null", lambda r: r.__setitem__("metrics", None), ("smoke.json", "metrics")),
        damaged("metrics-missing", lambda r: r.pop("metrics"), ("smoke.json", "metrics")),
        damaged("scenario-missing", lambda r: r.pop("scenario"), ("smoke.json", "scenario")),
        damaged("status-number", lambda r: r.__setitem__("status", 3), ("smoke.json", "status")),
        damaged("loss-strings", lambda r: r.__setitem__("loss", ["a"]), ("smoke.json", "loss")),
        damaged("checks-not-list", lambda r: r.__setitem__("checks", {}), ("smoke.json", "checks")),
        damaged("metric-name-missing", lambda r: r["metrics"][0].pop("name"), ("smoke.json", "name")),
        damaged("metric-kind-bad", lambda r: r["metrics"][0].__setitem__("kind", "weird"), ("smoke.json", "kind")),
        damaged("schema-version-future", lambda r: r.__setitem__("schema_version", 999), ("smoke.json", "schema version 999")),
        damaged("memory-not-list", lambda r: r.__setitem__("memory", 5), ("smoke.json", "memory")),
        damaged("gated-metric-missing", lambda r: r.__setitem__("metrics", [m for m in r["metrics"]
                                                                            if m["name"] != "tokens_per_s"]),
                ("run problem: gated metric tokens_per_s is missing",), ("compare",)),
    ]
    cases[-1]["exit"] = 1  # not green: a missing gated metric is never an improvement
    html = damaged("values-stripped-html", strip_values, ("smoke.json", "samples"))
    html["argv"] += ["--html", "{case}/report.html"]
    cases.append(html)
    history = damaged("values-stripped-history", strip_values, ("smoke.json",))
    history["argv"] = ["history", "{case}"]
    cases.append(history)
    cases += [
        {"name": "results-not-json", "files": {"cur/smoke.json": "{nope", "cur/index.json": json.dumps(index)},
         "argv": ["compare", prev, "{case}/cur", "--quiet"], "says": ["smoke.json"]},
        {"name": "results-index-not-json", "files": {"cur/index.json": "[1, 2"},
         "argv": ["compare", prev, "{case}/cur", "--quiet"], "says": ["index.json"]},
        {"name": "results-index-escapes", "files": {"cur/index.json": json.dumps(
            index | {"instances": [index["instances"][0] | {"file": "../../../../etc/passwd"}]})},
         "argv": ["compare", prev, "{case}/cur", "--quiet"], "says": ["index.json", "field 'file'"]},
        {"name": "results-missing-dir", "argv": ["compare", prev, "{case}/nothing", "--quiet"], "says": ["nothing"]},
        {"name": "results-gbench-time-unit", "files": {"g.json": json.dumps(
            {"context": {}, "benchmarks": [{"name": "BM_x", "real_time": 1, "cpu_time": 1, "time_unit": "fortnights"}]})},
         "argv": ["compare", "{case}/g.json", "{case}/g.json", "--quiet"], "says": ["g.json", "benchmarks[0].time_unit"]},
        {"name": "results-gbench-no-time", "files": {"g.json": json.dumps(
            {"context": {}, "benchmarks": [{"name": "BM_x", "time_unit": "ns"}]})},
         "argv": ["history", "{case}"], "says": ["g.json", "real_time"]},
        {"name": "export-unknown-format", "argv": ["export", prev, "--format", "csv"], "says": ["--format csv", "gbench"]},
        {"name": "export-out-exists", "argv": ["export", prev, "--format", "gbench", "--out", os.path.join(prev, "index.json")],
         "says": ["already exists"]},
        {"name": "policy-not-yaml", "files": {"p.yaml": "a: [b"}, "argv": ["compare", prev, prev, "--policy", "{case}/p.yaml"],
         "says": ["p.yaml"]},
        {"name": "policy-unknown-key", "files": {"p.yaml": "thresholdz: 3\n"},
         "argv": ["compare", prev, prev, "--policy", "{case}/p.yaml"], "says": ["p.yaml:1", "thresholdz"]},
        # Found by scripts/fuzz.sh (tests/fuzz/regressions/gate_policy): a mapping as a key was "internal error".
        {"name": "policy-key-is-map", "files": {"p.yaml": "metrics:\n  {a: 1}: {gate: false}\n"},
         "argv": ["compare", prev, prev, "--policy", "{case}/p.yaml"], "says": ["p.yaml:2", "plain word"]},
    ]
    return cases


def cli(ctx):
    smoke, prev = ctx["smoke"], ctx["previous"]
    c = [
        ("nproc-negative", ["run", smoke, "--nproc", "-1", "--out", prev], ["--nproc"]),
        ("nproc-huge", ["run", smoke, "--nproc", "100000", "--out", prev], ["world_size", "100000"]),
        ("nproc-word", ["run", smoke, "--nproc", "x", "--out", prev], ["--nproc"]),
        ("repetitions-word", ["run", smoke, "--repetitions", "x", "--out", prev], ["--repetitions"]),
        ("out-is-file", ["run", smoke, "--out", os.path.join(prev, "index.json")], ["--out"]),
        ("out-holds-a-run", ["run", smoke, "--out", prev], ["--out", "already holds a run"]),
        ("unknown-target", ["run", "no_such_thing", "--out", prev], ["no_such_thing"]),
        ("override-no-equals", ["run", smoke, "train.steps", "--out", prev], ["train.steps"]),
        ("override-unknown", ["run", smoke, "train.stpes=3", "--out", prev], ["train.stpes"]),
        ("nnodes-negative", ["run", smoke, "--nnodes", "-2", "--out", prev], ["--nnodes"]),
        ("node-rank-beyond", ["run", smoke, "--nnodes", "2", "--node-rank", "5", "--master-addr", "127.0.0.1",
                              "--out", prev], ["--node-rank"]),
        ("plan-nodes-negative", ["plan", smoke, "--nodes", "-1"], ["--nodes"]),
        ("unknown-subcommand", ["frobnicate"], ["frobnicate"]),
        ("show-missing", ["show", "/nonexistent.yaml"], ["nonexistent"]),
    ]
    return [{"name": f"cli-{n}", "argv": a, "says": s} for n, a, s in c]


def cases(ctx):
    import hostile_cases  # after this module's names exist: it builds on them
    return generated(ctx) + yaml_shapes() + run_level(ctx) + suites(ctx) + results(ctx) + cli(ctx) + hostile_cases.cases(ctx)
