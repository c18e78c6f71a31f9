"""Cases from W3 7/7's pass as a careless and a hostile user (docs/architecture.md "Exit codes"):
what the first corpus (cases.py) missed. Each was written here before it was fixed."""
import json
import os
import struct

from cases import BASE, TINY_CONFIG, safetensors


def tiny_weights(poison=None):
    """model.safetensors for TINY_CONFIG (zeros, F32), with `poison` = (tensor, flat index, value)."""
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
        blobs.append(struct.pack(f"<{count}f", *values))
        header[name] = {"dtype": "F32", "shape": shape, "data_offsets": [offset, offset + 4 * count]}
        offset += 4 * count
    return safetensors(header, b"".join(blobs))


def model_dir(case_dir, name, weights):
    d = os.path.join(case_dir, name)
    os.makedirs(d, exist_ok=True)
    open(os.path.join(d, "config.json"), "w").write(json.dumps(TINY_CONFIG))
    open(os.path.join(d, "model.safetensors"), "wb").write(weights)


def poisoned_models(case_dir):
    model_dir(case_dir, "nanmodel", tiny_weights(("model.layers.1.mlp.down_proj.weight", 3 * 128 + 5, float("nan"))))
    model_dir(case_dir, "infmodel", tiny_weights(("model.norm.weight", 7, float("-inf"))))


def checkpoints(ctx):
    """Item 1: a model directory whose weights are not finite is named at load (tensor, element)."""
    runs = [
        ("model-weights-nan", "nanmodel", ["{case}/nanmodel/model.safetensors", "model.layers.1.mlp.down_proj.weight",
                                           "holds nan at element [3, 5]"]),
        ("model-weights-inf", "infmodel", ["{case}/infmodel/model.safetensors", "model.norm.weight",
                                           "holds -inf at element [7]"]),
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


def cases(ctx):
    return checkpoints(ctx) + repeated_and_impossible(ctx)
