"""The peer's result.json, in shardbench's results schema (reporters/results.schema.json), with
metrics measured as shardbench measures them: per measured step the slowest rank's step time
(ranks step in lockstep), tokens/s from it, percentiles interpolated the same way."""
import contextlib
import json
import os
import platform
import sys
import warnings

# First lines of the warnings PyTorch raised while wrapping (e.g. FSDP1's gradient-memory warning
# for units that mix frozen and trainable parameters): kept in the result as `peer_warnings`.
WARNINGS = []


@contextlib.contextmanager
def keeping_warnings():
    """PyTorch's warnings inside the block go to WARNINGS (first lines, each once), not stderr."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            yield
        finally:
            for line in sorted(set(str(w.message).split("\n")[0] for w in caught)):
                if line not in WARNINGS:
                    WARNINGS.append(line)


def percentile(samples, q):
    """reporters/statistics.cc Percentile: linear between the closest ranks."""
    s = sorted(samples)
    pos = q / 100 * (len(s) - 1)
    lo = int(pos)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (pos - lo)


def metric(name, unit, better, kind, samples, per_rank):
    m = {"name": name, "unit": unit, "better": better, "kind": kind, "samples": samples, "per_rank": per_rank}
    for key, q in (("median", 50), ("p10", 10), ("p90", 90)):
        m[key] = percentile(samples, q) if samples else None
    m["min"] = min(samples) if samples else None
    m["max"] = max(samples) if samples else None
    return m


def provenance(path, scenario):
    import peft
    import torch
    import transformers
    with open(path) as f:
        p = json.load(f)
    p["torch"] = torch.__version__
    p["cuda"] = torch.version.cuda or ""
    p["nccl"] = ".".join(map(str, torch.cuda.nccl.version())) if scenario["backend"] == "nccl" else None
    p["peer"] = {"engine": scenario["engine"], "implementation": "peers/torch_fsdp", "python": sys.executable,
                 "python_version": platform.python_version(), "torch": torch.__version__,
                 "transformers": transformers.__version__, "peft": peft.__version__}
    return p


def base_result(args, scenario, started_at):
    with open(os.path.join(args.out, "scenario_header.json")) as f:
        header = json.load(f)  # name, source, overrides, matrix as shardbench resolved them
    return {"schema_version": 1, "run_id": f"{scenario['name']}-{started_at}-{os.getpid()}", "started_at": started_at,
            "provenance": provenance(args.provenance, scenario), "scenario": dict(header, config=scenario),
            "status": "ok", "message": "", "metrics": [], "memory": [], "checks": [], "loss": [],
            "memory_model": None, "peer_warnings": WARNINGS}


def _finite(obj):
    """JSON has no NaN or infinity: such values are written as null (as shardbench's own
    results write them), never as bare NaN tokens that strict readers reject."""
    if isinstance(obj, float) and (obj != obj or obj in (float("inf"), float("-inf"))):
        return None
    if isinstance(obj, dict):
        return {k: _finite(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_finite(v) for v in obj]
    return obj


def write_atomically(path, obj):
    tmp = f"{path}.tmp.{os.getpid()}"
    with open(tmp, "w") as f:
        json.dump(_finite(obj), f, indent=2, allow_nan=False)
        f.write("\n")
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def write_refusal(args, scenario, started_at, message):
    r = base_result(args, scenario, started_at)
    r["status"] = "failed"
    r["message"] = f"check 'peer_accepts_scenario' failed: {message}"
    r["checks"] = [{"name": "peer_accepts_scenario", "passed": False, "detail": message}]
    r["loss"] = []  # no step ran
    write_atomically(os.path.join(args.out, "result.json"), r)


def write_result(args, scenario, started_at, records, losses, params_total, params_trainable, checks=()):
    """Writes OUT/result.json; returns its status (ok | failed)."""
    train = scenario["train"]
    warmup = int(train["warmup_steps"])
    world = len(records)
    global_tokens = int(train["batch_size"]) * int(train["grad_accumulation"]) * int(train["seq_len"]) * world
    steps = len(losses)
    step_time, tokens, tokens_rank = [], [], []
    for s in range(warmup, steps):
        slowest = max(r["step_s"][s] for r in records)
        step_time.append(slowest)
        tokens.append(global_tokens / slowest)
        tokens_rank.append(global_tokens / world / slowest)
    per_rank_median = [percentile(r["step_s"][warmup:], 50) for r in records]
    rank_tokens = [global_tokens / world / m for m in per_rank_median]
    r = base_result(args, scenario, started_at)
    r["loss"] = losses
    metrics = [metric("step_time", "s", "lower", "sampled", step_time, per_rank_median),
               metric("tokens_per_s", "tokens/s", "higher", "sampled", tokens, rank_tokens),
               metric("tokens_per_s_per_rank", "tokens/s", "higher", "sampled", tokens_rank, rank_tokens)]
    for name, key in (("init_time", "init_s"), ("init_time_connect", "connect_s"), ("init_time_construct", "construct_s"),
                      ("init_time_shard", "shard_s"), ("init_time_load", "load_s"),
                      ("time_to_first_step", "time_to_first_step")):
        v = [rec[key] for rec in records]
        metrics.append(metric(name, "s", "lower", "sampled", [max(v)], v))
    metrics.append(metric("params_total", "count", "lower", "exact", [params_total], []))
    metrics.append(metric("params_trainable", "count", "lower", "exact", [params_trainable], []))
    rss = [rec["rss_peak"] for rec in records]
    metrics.append(metric("host_rss_peak", "bytes", "lower", "sampled", [max(rss)], rss))
    init_rss = [rec["init_rss_peak"] for rec in records]
    metrics.append(metric("init_host_rss_peak", "bytes", "lower", "sampled", [max(init_rss)], init_rss))
    if records[0]["device_allocated_peak"] is not None:
        allocated = [rec["device_allocated_peak"] for rec in records]
        reserved = [rec["device_reserved_peak"] for rec in records]
        metrics.append(metric("device_allocated_peak", "bytes", "lower", "exact", [max(allocated)], allocated))
        metrics.append(metric("device_reserved_peak", "bytes", "lower", "sampled", [max(reserved)], reserved))
    if records[0]["checkpoint"]:  # as shardbench names them (harness/metric_table.cc)
        saved = [rec["checkpoint"] for rec in records]
        save_s = [c["save_s"] for c in saved]
        metrics.append(metric("checkpoint_save_time", "s", "lower", "sampled", [max(save_s)], save_s))
        metrics.append(metric("checkpoint_bytes", "bytes", "lower", "exact", [saved[0]["bytes_total"]],
                              [c["bytes"] for c in saved]))
        if saved[0]["load_s"] is not None:
            load_s = [c["load_s"] for c in saved]
            metrics.append(metric("checkpoint_load_time", "s", "lower", "sampled", [max(load_s)], load_s))
    r["metrics"] = metrics
    r["memory"] = [{"rank": i, "categories": {}, "peak_by_category": {}, "held": {},
                    "peak_allocated": rec["device_allocated_peak"], "peak_reserved": rec["device_reserved_peak"],
                    "host_rss_peak": int(rec["rss_peak"])} for i, rec in enumerate(records)]
    r["checks"].extend(checks)
    failed = [c for c in r["checks"] if not c["passed"]]
    if failed:
        r["status"] = "failed"
        r["message"] = "; ".join(f"check '{c['name']}' failed: {c['detail']}" for c in failed)
    write_atomically(os.path.join(args.out, "result.json"), r)
    return r["status"]
