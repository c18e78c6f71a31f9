"""What the peer's ranks measured, as typed records; rank 0 writes them all to OUT/records.json
(format shardbench-peer-records/1) and shardbench builds the result from them
(harness/peer_records.h, harness/run_assembly.h) with the same metric table, memory model and
checks as for its own engines. A figure the peer did not measure is left out of its record and
named in `not_measured` with why: the result lists it, never as a zero.

Names are shardbench's: per-step series by RankRecord's member names (harness/rank_record.h),
per-rank figures by the metric they feed (harness/metric_table.cc), memory by category name
(engine/memory/memory_record.h), collectives by engine/comm/communicator.h's names.
"""
import contextlib
import dataclasses
import json
import os
import platform
import sys
import warnings

FORMAT = "shardbench-peer-records/1"

# First lines of the warnings PyTorch raised (e.g. FSDP1's gradient-memory warning for units that
# mix frozen and trainable parameters): kept in the result as `peer_warnings`.
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


@dataclasses.dataclass
class RankRecord:
    """One rank's measurements. Series have one entry per step, warmup included."""
    step_seconds: list = dataclasses.field(default_factory=list)
    optimizer_seconds: list = dataclasses.field(default_factory=list)
    comm_wait_seconds: list = dataclasses.field(default_factory=list)
    loss: list = dataclasses.field(default_factory=list)        # the global loss (every rank's mean)
    local_loss: list = dataclasses.field(default_factory=list)  # this rank's own
    figures: dict = dataclasses.field(default_factory=dict)     # metric name -> this rank's value
    held: dict = dataclasses.field(default_factory=dict)        # category -> bytes, after the last step
    peak: dict = dataclasses.field(default_factory=dict)        # category -> its gauge's peak, measured steps
    param_bytes_by_dtype: dict = dataclasses.field(default_factory=dict)
    comm: dict = None                                           # collective -> {count, bytes, seconds}

    def to_json(self):
        series = {"step_seconds": self.step_seconds, "loss": self.loss, "local_loss": self.local_loss}
        if self.optimizer_seconds:
            series["optimizer_seconds"] = self.optimizer_seconds
        if self.comm_wait_seconds:
            series["comm_wait_seconds"] = self.comm_wait_seconds
        out = {"series": series, "figures": self.figures, "held": self.held, "peak": self.peak,
               "param_bytes_by_dtype": self.param_bytes_by_dtype}
        if self.comm is not None:
            out["comm"] = self.comm
        return out


@dataclasses.dataclass
class RunRecords:
    """What rank 0 writes: every rank's record and what the run knows besides them."""
    started_at: str
    versions: dict
    refusal: str = None
    params_total: int = 0
    params_trainable: int = 0
    trainable_bytes: int = 0
    checks: list = dataclasses.field(default_factory=list)
    not_measured: dict = dataclasses.field(default_factory=dict)
    sampled: dict = dataclasses.field(default_factory=dict)  # exact in the table, varying here -> why
    matmul_peak_flops_per_s: float = None
    gpu_name: str = None
    ranks: list = dataclasses.field(default_factory=list)
    units: list = None  # units.py: FSDP's units and their parameters (None: not exposed)

    def write(self, out_dir):
        doc = {"format": FORMAT, "started_at": self.started_at, "versions": self.versions, "refusal": self.refusal,
               "peer_warnings": WARNINGS, "params_total": self.params_total,
               "params_trainable": self.params_trainable, "trainable_bytes": self.trainable_bytes,
               "checks": self.checks, "not_measured": self.not_measured, "sampled": self.sampled,
               "matmul_peak_flops_per_s": self.matmul_peak_flops_per_s, "gpu_name": self.gpu_name,
               "units": self.units, "ranks": [r.to_json() for r in self.ranks]}
        write_atomically(os.path.join(out_dir, "records.json"), doc)


def _nvidia_driver():
    """The NVIDIA driver's version, as engine/profile/gpu_facts.h reads it (None when absent)."""
    import re
    try:
        with open("/proc/driver/nvidia/version") as f:
            m = re.search(r"Kernel Module(?: for [^ ]+)?\s+([0-9]+(?:\.[0-9]+)+)", f.read())
    except OSError:
        return None
    return m.group(1) if m else None


def versions(engine, backend):
    """The versions this process imported (the provenance of a peer result); accelerate is
    imported by peft, torchtune by engine torchtune, each recorded as imported (or null where this
    run did not import it)."""
    import peft
    import torch
    import transformers
    accelerate, torchtune = sys.modules.get("accelerate"), sys.modules.get("torchtune")
    on_gpu = backend == "nccl" and torch.cuda.is_available()
    return {"torch": torch.__version__, "cuda": torch.version.cuda or "",
            "nccl": ".".join(map(str, torch.cuda.nccl.version())) if backend == "nccl" else None,
            "gpu": torch.cuda.get_device_name() if on_gpu else None,
            "gpu_driver": _nvidia_driver() if on_gpu else None,
            "peer": {"engine": engine, "implementation": "peers/torch_fsdp", "python": sys.executable,
                     "python_version": platform.python_version(), "torch": torch.__version__,
                     "transformers": transformers.__version__, "peft": peft.__version__,
                     "accelerate": getattr(accelerate, "__version__", None),
                     "torchtune": getattr(torchtune, "__version__", None)}}


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
        json.dump(_finite(obj), f, indent=1, allow_nan=False)
        f.write("\n")
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
