"""Cases from W3 7/7's pass as a careless and a hostile user (docs/architecture.md "Exit codes"):
what the first corpus (cases.py) missed. Each was written here before it was fixed."""
import json
import os
import struct

from cases import BASE, TINY_CONFIG, safetensors


def tiny_weights(poison=None, bf16=""):
    """model.safetensors for TINY_CONFIG (zeros), with `poison` = (tensor, flat index, value); tensors
    whose name holds `bf16` (when given) stored as BF16, the rest F32."""
    h, n = TINY_CONFIG["hidden_size"], TINY_CONFIG["intermediate_size"]
    shapes = {"model.embed_tokens.weight": [256, h], "model.norm.weight": [h], "lm_head.weight": [256, h]}
    for i in range(TINY_CONFIG["num_hidden_layers"]):
        p = f"model.layers.{i}."
        shapes |= {p + f"self_attn.{x}_proj.weight": [h, h] for x in "qkvo"}
        shapes |= {p + "mlp.gate_proj.weight": [n, h], p + "mlp.up_proj.weight": [n, h], p + "mlp.down_proj.weight": [h, n],
                   p + "input_layernorm.weight": [h], p + "post_attention_layernorm.weight": [h]}
    header, blobs, offset = {}, [], 0
    for name, shape in shapes.items():
        count = 1
        for d in shape:
            count *= d
        values = [0.0] * count
        if poison and poison[0] == name:
            values[poison[1]] = poison[2]
        half = bool(bf16) and bf16 in name
        size = (2 if half else 4) * count
        blobs.append(bytes(size) if half else struct.pack(f"<{count}f", *values))
        header[name] = {"dtype": "BF16" if half else "F32", "shape": shape, "data_offsets": [offset, offset + size]}
        offset += size
    return safetensors(header, b"".join(blobs))


def model_dir(case_dir, name, weights):
    d = os.path.join(case_dir, name)
    os.makedirs(d, exist_ok=True)
    open(os.path.join(d, "config.json"), "w").write(json.dumps(TINY_CONFIG))
    open(os.path.join(d, "model.safetensors"), "wb").write(weights)


def poisoned_models(case_dir):
    model_dir(case_dir, "nanmodel", tiny_weights(("model.layers.1.mlp.down_proj.weight", 3 * 128 + 5, float("nan"))))
    model_dir(case_dir, "infmodel", tiny_weights(("model.norm.weight", 7, float("-inf"))))
    model_dir(case_dir, "mixedmodel", tiny_weights(bf16="layers.0."))


def checkpoints(ctx):
    """Item 1: a model directory whose weights are not finite is named at load (tensor, element)."""
    runs = [
        ("model-weights-nan", "nanmodel", ["{case}/nanmodel/model.safetensors", "model.layers.1.mlp.down_proj.weight",
                                           "holds nan at element [3, 5]"]),
        ("model-weights-inf", "infmodel", ["{case}/infmodel/model.safetensors", "model.norm.weight",
                                           "holds -inf at element [7]"]),
        # Found by the hostile pass: layer 0 in bf16, the rest fp32 was "internal error" from SDPA.
        ("model-weights-mixed-dtypes", "mixedmodel", ["{case}/mixedmodel", "different dtypes", "BFloat16", "Float",
                                                      "model_dtype"]),
    ]
    return [{"name": f"run-{n}", "files": {"s.yaml": BASE.replace("model: tiny", "model: {case}/" + d)},
             "argv": ["run", "{case}/s.yaml", "--quiet", "--out", "{case}/out"], "says": s, "setup": poisoned_models}
            for n, d, s in runs]


def repeated_and_impossible(ctx):
    """Item 2: a results file or index that repeats an entry, or holds a value impossible for its
    unit, would let the gate judge the wrong one (a regression behind a duplicate was green)."""
    prev = ctx["previous"]
    good = json.load(open(os.path.join(prev, "smoke.json")))
    index = json.load(open(os.path.join(prev, "index.json")))

    def damaged(name, mutate, says, text=None):
        r = json.loads(json.dumps(good))
        mutate(r)
        files = {"cur/smoke.json": text(json.dumps(r)) if text else json.dumps(r), "cur/index.json": json.dumps(index)}
        return {"name": f"results-{name}", "files": files, "argv": ["compare", prev, "{case}/cur", "--quiet"],
                "says": ["{case}/cur/smoke.json", *says]}

    def metric(r, name):
        return next(m for m in r["metrics"] if m["name"] == name)

    def negate(name, key):
        def mutate(r):
            m = metric(r, name)
            m[key] = [-v for v in m[key]] if isinstance(m[key], list) else -m[key]
        return mutate

    def set_per_rank(r, value):
        metric(r, "peak_allocated")["per_rank"][0] = value

    cases = [
        damaged("metric-repeated", lambda r: r["metrics"].insert(0, dict(metric(r, "tokens_per_s"), median=1e12)),
                ["'tokens_per_s' appears twice"]),
        damaged("check-repeated", lambda r: r["checks"].append(dict(r["checks"][0], passed=True)), ["checks[", "appears twice"]),
        damaged("key-repeated", lambda r: None, ["key \"median\" appears twice", "metrics[]"],
                text=lambda t: t.replace('"median":', '"median": 1e12, "median":', 1)),
        damaged("status-key-repeated", lambda r: None, ["key \"status\" appears twice"],
                text=lambda t: t.replace('"status":', '"status": "ok", "status":', 1)),
        damaged("metric-name-empty", lambda r: r["metrics"][0].__setitem__("name", ""), ["field \"metrics", "a metric name"]),
        damaged("metric-name-control", lambda r: r["metrics"][0].__setitem__("name", "step\u0000time"), ["a metric name"]),
        damaged("negative-throughput", negate("tokens_per_s", "samples"), ["metrics.tokens_per_s.samples[0]", "never negative"]),
        damaged("negative-step-time", negate("step_time", "median"), ["metrics.step_time.median", "never negative"]),
        damaged("negative-bytes", lambda r: set_per_rank(r, -1), ["metrics.peak_allocated.per_rank[0]", "never negative"]),
        damaged("negative-count", negate("params_trainable", "samples"), ["metrics.params_trainable.samples[0]", "never negative"]),
    ]
    entry = index["instances"][0]
    cases += [
        {"name": "index-instance-repeated", "files": {"cur/index.json": json.dumps(index | {"instances": [entry, entry]}),
                                                      "cur/smoke.json": json.dumps(good)},
         "argv": ["compare", prev, "{case}/cur", "--quiet"], "says": ["{case}/cur/index.json", "instances[1]", "appears twice"]},
        {"name": "results-dir-instance-twice", "files": {"cur/a.json": json.dumps(good), "cur/b.json": json.dumps(good)},
         "argv": ["compare", prev, "{case}/cur", "--quiet"],
         "says": ["instance 'smoke' appears twice", "{case}/cur/a.json", "{case}/cur/b.json"]},
        {"name": "history-instance-twice", "files": {"runs/1/a.json": json.dumps(good), "runs/1/b.json": json.dumps(good)},
         "argv": ["history", "{case}/runs"], "says": ["instance 'smoke' appears twice"]},
    ]
    return cases


def silently_accepted(ctx):
    """Item 3 and the hostile pass's CLI findings: input that ran (or crawled) without a word."""
    smoke, prev = ctx["smoke"], ctx["previous"]
    run = ["run", "{case}/suite.yaml", "--quiet", "--out", prev]
    long_name = "a" * 300
    c = [
        {"name": "lora-r-beyond-layer", "files": {"s.yaml": BASE.replace("r: 16", "r: 100000")},
         "argv": ["show", "{case}/s.yaml"], "says": ["{case}/s.yaml", "lora.r 100000", "q_proj (64 -> 64)", "at most 64"]},
        {"name": "cli-nproc-zero", "argv": ["run", smoke, "--nproc", "0", "--out", prev], "says": ["--nproc", "positive"]},
        {"name": "override-repeated", "argv": ["show", smoke, "train.steps=3", "train.steps=5"],
         "says": ["'train.steps=3' and 'train.steps=5' both set train.steps"]},
        {"name": "suite-override-repeated", "files": {"suite.yaml": f"name: x\nruns:\n  - scenario: {smoke}\n"
                                                                    "    overrides: [train.steps=3, train.steps=4]\n"},
         "argv": run, "says": ["suite.yaml:4", "both set train.steps"]},
        {"name": "suite-names-a-suite", "files": {"suite.yaml": "name: x\nruns:\n  - scenario: inner.yaml\n",
                                                  "inner.yaml": f"name: inner\nruns:\n  - scenario: {smoke}\n"},
         "argv": run, "says": ["{case}/inner.yaml:2", "a suite ('runs'), not a scenario"]},
        {"name": "suite-names-itself", "files": {"suite.yaml": "name: x\nruns:\n  - scenario: suite.yaml\n"},
         "argv": run, "says": ["{case}/suite.yaml:2", "not a scenario"]},
        {"name": "instance-name-too-long", "files": {"suite.yaml": f"name: x\nruns:\n  - scenario: {smoke}\n    name: {long_name}\n"},
         "argv": run, "says": ["suite.yaml:4", "300 characters", "too long"]},
        {"name": "compare-today-not-a-day", "argv": ["compare", prev, prev, "--today", "2027-02-30"], "says": ["--today", "YYYY-MM-DD"]},
        {"name": "compare-today-word", "argv": ["compare", prev, prev, "--today", "tomorrow"], "says": ["--today", "YYYY-MM-DD"]},
        {"name": "policy-expires-not-a-day", "files": {"p.yaml": "suppressions:\n  - {metric: step_time, reason: r, expires: 2027-02-30}\n"},
         "argv": ["compare", prev, prev, "--policy", "{case}/p.yaml"], "says": ["p.yaml:2", "expires", "2027-02-30"]},
        {"name": "plan-nodes-zero", "argv": ["plan", smoke, "--nodes", "0"], "says": ["--nodes: expected a positive number, got '0'"]},
        {"name": "plan-gbps-nan", "argv": ["plan", smoke, "--nodes", "2", "--inter-node-gbps", "nan"],
         "says": ["--inter-node-gbps: expected a positive number, got 'nan'"]},
        {"name": "run-nnodes-zero", "argv": ["run", smoke, "--nnodes", "0", "--out", prev], "says": ["--nnodes: expected a positive"]},
        {"name": "shrink-at-least-nan", "argv": ["shrink", smoke, "--metric", "grad_blowup", "--at-least", "nan", "--out", "{case}/o"],
         "says": ["--at-least: expected a finite number, got 'nan'"]},
    ]
    return c


def hostile_pass(ctx):
    """What a pass as a hostile user found beyond the issue (crashes, overwrites, green on nothing)."""
    smoke, prev = ctx["smoke"], ctx["previous"]
    good = json.load(open(os.path.join(prev, "smoke.json")))
    index = json.load(open(os.path.join(prev, "index.json")))
    no_comm = dict(good, metrics=[m for m in good["metrics"] if not m["name"].startswith("comm_")])
    could_not_run = {"instances": [dict(index["instances"][0], file=None, status="error", message="interrupted")]}
    matrix = BASE + "matrix:\n  train.steps: [1, 2]\nexclude:\n"
    c = [
        # A sampled comm_* metric on one side only (a world size 1 run has no collectives): segfault.
        {"name": "compare-comm-metric-one-side", "files": {"cur/smoke.json": json.dumps(no_comm), "cur/index.json": json.dumps(index)},
         "argv": ["compare", prev, "{case}/cur", "--quiet"], "exit": 1, "says": ["comm_"]},
        {"name": "compare-metrics-empty", "files": {"cur/smoke.json": json.dumps(dict(good, metrics=[])),
                                                    "cur/index.json": json.dumps(index)},
         "argv": ["compare", prev, "{case}/cur", "--quiet"], "exit": 1, "says": []},
        # Nothing compared is never green.
        {"name": "compare-base-could-not-run", "files": {"base/index.json": json.dumps(could_not_run)},
         "argv": ["compare", "{case}/base", prev, "--quiet"], "exit": 1, "says": ["UNJUDGED", "0 metrics compared"]},
        {"name": "compare-empty-index", "files": {"base/index.json": json.dumps({"instances": []}),
                                                  "cur/index.json": json.dumps({"instances": []})},
         "argv": ["compare", "{case}/base", "{case}/cur", "--quiet"], "exit": 1, "says": ["UNJUDGED"]},
        # A matrix emptied by exclude crashed show and run; a value off the axis excluded nothing.
        {"name": "matrix-exclude-everything", "files": {"s.yaml": matrix + "  - {train.steps: 1}\n  - {train.steps: 2}\n"},
         "argv": ["show", "{case}/s.yaml"], "says": ["{case}/s.yaml:22", "removes every instance"]},
        {"name": "matrix-exclude-off-axis", "files": {"s.yaml": matrix + "  - {train.steps: 7}\n"},
         "argv": ["show", "{case}/s.yaml"], "says": ["{case}/s.yaml:22", "'7' is not one of the axis's values [1, 2]"]},
        {"name": "matrix-values-read-alike", "files": {"s.yaml": BASE + "matrix:\n  train.lr: [0.01, 1e-2]\n"},
         "argv": ["show", "{case}/s.yaml"], "says": ["{case}/s.yaml:20", "'1e-2' reads as '0.01' does"]},
        {"name": "matrix-exclude-list-value", "files": {"s.yaml": matrix + "  - {train.steps: [1, 2]}\n"},
         "argv": ["show", "{case}/s.yaml"], "says": ["{case}/s.yaml:22", "a list or mapping"]},
    ]
    # Report flags replaced any file: a run's results, its index, a user's file.
    for flag in ("--markdown", "--junit", "--html"):
        c.append({"name": f"compare{flag}-into-a-run", "argv": ["compare", prev, prev, flag, os.path.join(prev, "smoke.json")],
                  "says": [flag, "is a run directory"]})
        c.append({"name": f"compare{flag}-over-a-users-file", "files": {"notes.txt": "mine"},
                  "argv": ["compare", prev, prev, flag, "{case}/notes.txt"], "says": [flag, "{case}/notes.txt", "already exists"]})
    c.append({"name": "compare--markdown-a-directory", "files": {"d/x": ""}, "argv": ["compare", prev, prev, "--markdown", "{case}/d"],
              "says": ["--markdown", "is a directory"]})
    c.append({"name": "history--html-over-a-users-file", "files": {"notes.txt": "mine", "runs/1/smoke.json": json.dumps(good)},
              "argv": ["history", "{case}/runs", "--html", "{case}/notes.txt"], "says": ["--html", "already exists"]})
    return c


def more_hostile(ctx):
    smoke, prev = ctx["smoke"], ctx["previous"]
    good = json.load(open(os.path.join(prev, "smoke.json")))
    index = json.load(open(os.path.join(prev, "index.json")))
    entry = index["instances"][0]
    other = dict(good, run_id="another-launch", scenario=dict(good["scenario"], config=dict(good["scenario"]["config"],
                                                                                             world_size=1)))
    c = [
        {"name": "env-nnodes-wraps", "argv": ["run", smoke, "--out", "{case}/o"], "env": {"PET_NNODES": "4294967297"},
         "says": ["PET_NNODES=4294967297", "up to 2147483647"]},
        {"name": "env-slurm-localid-named", "argv": ["run", smoke, "--out", "{case}/o"],
         "env": {"SLURM_PROCID": "0", "SLURM_NTASKS": "1", "SLURM_LOCALID": "zz"}, "says": ["SLURM_LOCALID"]},
        {"name": "batches-steps-huge", "argv": ["batches", smoke, "--steps", "100000000"], "says": ["--steps", "1000000"]},
        {"name": "index-schema-future", "files": {"cur/index.json": json.dumps(dict(index, schema_version=999)),
                                                  "cur/smoke.json": json.dumps(good)},
         "argv": ["compare", prev, "{case}/cur", "--quiet"], "says": ["{case}/cur/index.json", "index schema version 999"]},
        {"name": "index-colour-unknown", "files": {"cur/index.json": json.dumps(dict(index, instances=[dict(entry, colour="purple")])),
                                                   "cur/smoke.json": json.dumps(good)},
         "argv": ["compare", prev, "{case}/cur", "--quiet"], "says": ["{case}/cur/index.json", "colour", "purple"]},
        {"name": "index-running-with-file", "files": {"cur/index.json": json.dumps(dict(index, instances=[dict(entry, status="running")])),
                                                      "cur/smoke.json": json.dumps(good)},
         "argv": ["compare", prev, "{case}/cur", "--quiet"], "says": ["{case}/cur/index.json", "'running' with a result file"]},
        # merge pooled anything: one launch five times, another scenario as a repetition.
        {"name": "merge-same-run-twice", "argv": ["merge", prev, prev, "--out", "{case}/m"],
         "says": ["hold the same launch of 'smoke'", "pooled twice"]},
        {"name": "merge-other-scenario", "files": {"other/smoke.json": json.dumps(other)},
         "argv": ["merge", prev, "{case}/other", "--out", "{case}/m"], "says": ["scenario.config.world_size differs"]},
    ]
    c += [
        {"name": "yaml-two-documents", "files": {"s.yaml": BASE + "---\nname: second\n"}, "argv": ["show", "{case}/s.yaml"],
         "says": ["{case}/s.yaml:20", "a second YAML document"]},
        {"name": "yaml-tag-str", "files": {"s.yaml": BASE.replace("steps: 2", "steps: !!str 2")},
         "argv": ["show", "{case}/s.yaml"], "says": ["{case}/s.yaml:12", "train.steps", "tagged"]},
        {"name": "yaml-tag-local", "files": {"s.yaml": BASE.replace("steps: 2", "steps: !foo 2")},
         "argv": ["show", "{case}/s.yaml"], "says": ["{case}/s.yaml:12", "train.steps", "'!foo'"]},
        {"name": "merge-out-empty", "argv": ["merge", prev, prev, "--out", ""], "says": ["merge --out", "empty"]},
    ]
    for key, value in {"hidden_act": "gelu", "attention_bias": True, "mlp_bias": True, "torch_dtype": "float7"}.items():
        config = json.dumps(dict(TINY_CONFIG, **{key: value}))
        c.append({"name": f"model-config-{key}", "files": {"s.yaml": BASE.replace("model: tiny", "model: {case}/m"),
                                                           "m/config.json": config},
                  "argv": ["run", "{case}/s.yaml", "--quiet", "--out", "{case}/out"],
                  "says": ["{case}/m/config.json", f"'{key}' {json.dumps(value)}"]})
    return c


def cases(ctx):
    return checkpoints(ctx) + repeated_and_impossible(ctx) + silently_accepted(ctx) + hostile_pass(ctx) + more_hostile(ctx)
