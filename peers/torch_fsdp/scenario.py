"""The resolved scenario the peer runs, typed. shardbench writes it (rep_dir/scenario.yaml: every
field resolved, harness/scenario/scenario_fields.cc), so a field that is missing or of the wrong
type is our bug, raised as ScenarioBug and reported as an internal error, never as the user's
bad input. Sections and fields mirror harness/scenario/scenario.h; fields the peer does not read
(failpoints, model_shape) are left out, and extra keys are ignored.

    s = scenario.load(path)
    s.train.seed, s.sharding.use_orig_params, s.checks.learning
"""
import dataclasses
import typing

import yaml


class ScenarioBug(Exception):
    """The resolved scenario does not have the shape shardbench writes: a bug of ours."""


@dataclasses.dataclass(frozen=True)
class Lora:
    enabled: bool
    r: int
    alpha: float
    targets: list


@dataclasses.dataclass(frozen=True)
class Sharding:
    use_orig_params: bool
    wrap_policy: str  # transformer_block | lora_separate | peft | size | none
    min_params: int
    forward_prefetch: bool
    backward_prefetch: bool
    reshard_after_forward: bool


@dataclasses.dataclass(frozen=True)
class MixedPrecision:
    param_dtype: str  # fp32 | bf16 | fp16
    reduce_dtype: str
    allow_tf32: bool  # fp32 matmuls and convolutions on a GPU in TF32 (set in peer.py)

    @property
    def enabled(self):
        return self.param_dtype != "fp32" or self.reduce_dtype != "fp32"


@dataclasses.dataclass(frozen=True)
class Optimizer:
    impl: str   # for_loop | foreach | fused
    build: str  # after_wrap | before_wrap


@dataclasses.dataclass(frozen=True)
class Train:
    batch_size: int
    seq_len: int
    grad_accumulation: int
    steps: int
    warmup_steps: int
    lr: float
    weight_decay: float
    max_grad_norm: float
    lr_schedule: str  # constant | cosine
    lr_warmup_steps: int
    min_lr_ratio: float
    no_decay_on_norms: bool
    seed: int

    @property
    def total_steps(self):
        return self.warmup_steps + self.steps


@dataclasses.dataclass(frozen=True)
class Data:
    source: str  # synthetic | tokens
    path: str
    token_dtype: str  # uint16 | uint32


@dataclasses.dataclass(frozen=True)
class Checkpoint:
    type: str  # none | full | sharded | local | adapter
    save_step: int
    keep: bool
    load_from: str


@dataclasses.dataclass(frozen=True)
class Checks:
    loss_parity: bool
    learning: bool
    max_grad_blowup: float
    frozen_dtype: bool
    state_dict_roundtrip: bool
    resume: bool


@dataclasses.dataclass(frozen=True)
class Profile:
    kernel_trace: bool
    trace: bool


@dataclasses.dataclass(frozen=True)
class Timing:
    pin_cores: bool   # each rank on its share of the cores (peer.py pins before any thread starts)
    calibrate: bool   # ours alone: refused for a peer by shardbench


@dataclasses.dataclass(frozen=True)
class Accelerate:
    fsdp_version: int  # engine accelerate: the plugin's FSDP version, 1 | 2


@dataclasses.dataclass(frozen=True)
class Scenario:
    name: str
    model: str
    engine: str  # torch_fsdp1 | torch_fsdp2 | accelerate
    lora: Lora
    sharding: Sharding
    mixed_precision: MixedPrecision
    model_dtype: str  # auto | fp32 | bf16 | fp16
    upcast: str       # trainable | all | none
    init: str         # eager | meta
    activation_checkpointing: bool
    optimizer: Optimizer
    train: Train
    data: Data
    checkpoint: Checkpoint
    checks: Checks
    profile: Profile
    timing: Timing
    accelerate: Accelerate
    world_size: int
    backend: str  # gloo | nccl
    timeout_s: float


def _value(kind, raw, where):
    if dataclasses.is_dataclass(kind):
        return typed(kind, raw, where)
    if kind is float and isinstance(raw, (int, float)) and not isinstance(raw, bool):
        return float(raw)
    if kind is str and raw is None:  # an empty YAML scalar
        return ""
    if not isinstance(raw, kind) or (kind is int and isinstance(raw, bool)):
        raise ScenarioBug(f"{where}: expected {kind.__name__}, found {type(raw).__name__} {raw!r}")
    return raw


def typed(cls, raw, where):
    """`raw` (a mapping read from YAML) as `cls`, every field present and of its type."""
    if not isinstance(raw, dict):
        raise ScenarioBug(f"{where}: expected a mapping, found {type(raw).__name__}")
    hints = typing.get_type_hints(cls)
    values = {}
    for f in dataclasses.fields(cls):
        if f.name not in raw:
            raise ScenarioBug(f"{where}.{f.name}: missing")
        values[f.name] = _value(hints[f.name], raw[f.name], f"{where}.{f.name}")
    return cls(**values)


def load(path):
    """The scenario shardbench resolved into `path`."""
    with open(path) as f:
        return typed(Scenario, yaml.safe_load(f), path)
