"""engine: accelerate. Hugging Face accelerate's Accelerator with a FullyShardedDataParallelPlugin
built from the scenario, as a user's accelerate config would build it:

| scenario                       | FullyShardedDataParallelPlugin(fsdp_version=accelerate.fsdp_version, ...) |
|--------------------------------|---------------------------------------------------------------------------|
| sharding.wrap_policy           | transformer_block: auto_wrap_policy="transformer_based_wrap" (LlamaDecoderLayer); size: "size_based_wrap" (min_num_params); peft: PEFT's fsdp_auto_wrap_policy(model), as transformers' Trainer sets it; none: "no_wrap" |
| sharding.use_orig_params       | use_orig_params (version 1)                                               |
| sharding.reshard_after_forward | reshard_after_forward: version 1 FULL_SHARD / SHARD_GRAD_OP, version 2 true / false |
| sharding.*_prefetch            | version 1: backward_prefetch BACKWARD_PRE / NO_PREFETCH, forward_prefetch |
| mixed_precision                | mixed_precision_policy: MixedPrecision (1) / MixedPrecisionPolicy (2)     |
| checkpoint.type                | state_dict_type FULL / SHARDED / LOCAL_STATE_DICT; saved and loaded with save_state / load_state |
| activation_checkpointing       | activation_checkpointing                                                  |
| init: meta                     | cpu_ram_efficient_loading (version 2; FSDP1's needs sync_module_states, refused): with the environment `accelerate launch` sets for it, transformers' from_pretrained reads the weights on rank 0 only (the other ranks hold empty tensors), prepare moves the model to meta, shards it and broadcasts rank 0's weights |

On CPU accelerate never chooses FSDP: AcceleratorState picks it only for accelerator devices
(state.py, AcceleratorState.__init__), so on a CPU run the plugin would be dropped and the model
wrapped in DDP. `enable_fsdp_on_cpu` replays that one branch (the distributed type, the plugin,
its mixed precision) after the Accelerator is built, with ACCELERATE_TORCH_DEVICE=cpu (read by
accelerate itself: its device `cpu`, not `cpu:0`, which FSDP1's device_id check refuses).
Everything else that runs is accelerate's own code, unmodified: Accelerator.__init__, the
plugin's __post_init__ and set_auto_wrap_policy, prepare (FSDP1's prepare_model branch, FSDP2's
fsdp2_prepare_model), accelerator.backward, clip_grad_norm_, save_state / load_state with its
FSDP save and load helpers. On a GPU nothing is replayed.
"""
import os

from . import wrap


def use_cpu_device():
    """Before the first Accelerator of a CPU run: accelerate's device is `cpu` (state.py reads it)."""
    os.environ["ACCELERATE_TORCH_DEVICE"] = "cpu"


def use_cpu_ram_efficient_loading():
    """Before the model is built: what `accelerate launch` sets for fsdp_cpu_ram_efficient_loading
    (utils/launch.py), read by transformers' from_pretrained (is_fsdp_enabled: load on rank 0 only)."""
    os.environ["ACCELERATE_USE_FSDP"] = "true"
    os.environ["FSDP_CPU_RAM_EFFICIENT_LOADING"] = "true"


def _wrap_policy(s, model):
    policy = s.sharding.wrap_policy
    if policy == "transformer_block":
        return {"auto_wrap_policy": "transformer_based_wrap", "transformer_cls_names_to_wrap": ["LlamaDecoderLayer"]}
    if policy == "size":
        return {"auto_wrap_policy": "size_based_wrap", "min_num_params": s.sharding.min_params}
    if policy == "peft":
        return {"auto_wrap_policy": wrap.peft_policy(model)}
    return {"auto_wrap_policy": "no_wrap"}  # none (lora_separate is refused up front)


def _mixed_precision(s, version):
    mp = s.mixed_precision
    if not mp.enabled:
        return None
    param, reduce = wrap.DTYPES[mp.param_dtype], wrap.DTYPES[mp.reduce_dtype]
    if version == 1:
        from torch.distributed.fsdp import MixedPrecision
        return MixedPrecision(param_dtype=param, reduce_dtype=reduce, buffer_dtype=param)
    from torch.distributed.fsdp import MixedPrecisionPolicy
    return MixedPrecisionPolicy(param_dtype=param, reduce_dtype=reduce)


STATE_DICT_TYPES = {"full": "FULL_STATE_DICT", "sharded": "SHARDED_STATE_DICT", "local": "LOCAL_STATE_DICT"}


def plugin_options(s, model):
    """The plugin's keyword arguments for the scenario (the table above)."""
    version, sharding = s.accelerate.fsdp_version, s.sharding
    kwargs = dict(fsdp_version=version, activation_checkpointing=s.activation_checkpointing,
                  cpu_ram_efficient_loading=s.init == "meta", mixed_precision_policy=_mixed_precision(s, version),
                  **_wrap_policy(s, model))
    if s.checkpoint.type in STATE_DICT_TYPES:
        kwargs["state_dict_type"] = STATE_DICT_TYPES[s.checkpoint.type]
    if version == 1:
        # reshard_after_forward takes FSDP1's sharding strategy (sharding_strategy is deprecated)
        kwargs.update(use_orig_params=sharding.use_orig_params, forward_prefetch=sharding.forward_prefetch,
                      reshard_after_forward="FULL_SHARD" if sharding.reshard_after_forward else "SHARD_GRAD_OP",
                      backward_prefetch="BACKWARD_PRE" if sharding.backward_prefetch else "NO_PREFETCH")
    else:
        kwargs["reshard_after_forward"] = sharding.reshard_after_forward
    return kwargs


def enable_fsdp_on_cpu(accelerator, plugin):
    """What AcceleratorState.__init__ does for accelerator devices and never for CPU: the FSDP
    distributed type (shared by every state object) and the plugin. A later Accelerator of the
    same process (a fresh model for the checkpoint checks) finds the type already set."""
    import torch
    from accelerate.state import PartialState
    from accelerate.utils import DistributedType
    state = accelerator.state
    if state.distributed_type != DistributedType.FSDP:
        if state.distributed_type != DistributedType.MULTI_CPU or state.backend != "gloo":
            raise RuntimeError(f"accelerate chose {state.distributed_type} on {state.backend}, not MULTI_CPU on gloo")
        state.distributed_type = DistributedType.FSDP
        PartialState._shared_state["distributed_type"] = DistributedType.FSDP
    if accelerator.device != torch.device("cpu"):
        raise RuntimeError(f"accelerate's device is {accelerator.device}, not cpu (ACCELERATE_TORCH_DEVICE)")
    state.fsdp_plugin = plugin


def accelerator_for(s, model):
    """An Accelerator whose FSDP plugin the scenario configures (FSDP on CPU as on a GPU)."""
    from accelerate import Accelerator, FullyShardedDataParallelPlugin
    plugin = FullyShardedDataParallelPlugin(**plugin_options(s, model))
    on_cpu = s.backend == "gloo"
    accelerator = Accelerator(cpu=on_cpu, fsdp_plugin=plugin)
    if on_cpu:
        enable_fsdp_on_cpu(accelerator, plugin)
    return accelerator
