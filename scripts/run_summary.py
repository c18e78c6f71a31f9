#!/usr/bin/env python3
"""A short Markdown summary of one `shardbench run` directory: per instance its colour and the
headline figures (tokens/s, MFU, CUDA allocator peaks, kernel overlap, init time). Used by
scripts/gpu-check.sh; works on any run directory (absent metrics show as '-').

    scripts/run_summary.py RUN_DIR > summary.md
"""
import json
import os
import sys

COLUMNS = [  # (metric, header, format)
    ("tokens_per_s", "tokens/s", "{:,.0f}"),
    ("achieved_flops_per_s", "model TFLOP/s", "tflops"),
    ("step_time", "step s", "{:.4f}"),
    ("mfu", "MFU", "{:.1%}"),
    ("mfu_datasheet", "MFU (datasheet)", "{:.1%}"),
    ("device_allocated_peak", "allocated peak GiB", "gib"),
    ("device_reserved_peak", "reserved peak GiB", "gib"),
    ("device_alloc_retries", "retries", "{:.0f}"),
    ("kernel_overlap_ratio", "overlap", "{:.2f}"),
    ("kernel_exposed_comm_time", "exposed comm s", "{:.5f}"),
    ("init_time", "init s", "{:.2f}"),
]


def cell(metric, fmt):
    if metric is None or metric.get("median") is None:
        return "-"
    value = metric["median"]
    if fmt == "gib":
        return f"{value / 2**30:.2f}"
    return f"{value / 1e12:.1f}" if fmt == "tflops" else fmt.format(value)


def main(run_dir):
    index = json.load(open(os.path.join(run_dir, "index.json")))
    lines = [f"# {index['target']} ({index['started_at']})", ""]
    provenance = None
    lines.append("| instance | colour | " + " | ".join(h for _, h, _ in COLUMNS) + " |")
    lines.append("|---|---|" + "---|" * len(COLUMNS))
    failures = []
    for inst in index["instances"]:
        result = json.load(open(os.path.join(run_dir, inst["file"]))) if inst.get("file") else None
        metrics = {m["name"]: m for m in result["metrics"]} if result else {}
        provenance = provenance or (result or {}).get("provenance")
        name = inst["name"].replace("|", "\\|")
        lines.append(f"| {name} | {inst['colour']} | " + " | ".join(cell(metrics.get(m), f) for m, _, f in COLUMNS) + " |")
        if inst["colour"] != "green":
            failures.append(f"- {name}: {inst.get('message') or inst['colour']}")
    lines.append("")
    if failures:
        lines += ["## Not green", ""] + failures + [""]
    if provenance:
        keys = ("gpu", "gpu_memory_bytes", "gpu_driver", "cuda_runtime", "cuda_driver", "nccl", "torch", "cuda", "git_sha",
                "host")
        lines.append("Provenance: " + ", ".join(f"{k} {provenance.get(k)}" for k in keys))
    print("\n".join(lines))


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: run_summary.py RUN_DIR")
    main(sys.argv[1])
