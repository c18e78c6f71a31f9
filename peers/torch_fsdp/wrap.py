"""The scenario's model and sharding options mapped onto transformers, peft and PyTorch FSDP.

| scenario                          | torch_fsdp2 (fully_shard)               | torch_fsdp1 (FullyShardedDataParallel)      |
|-----------------------------------|-----------------------------------------|---------------------------------------------|
| sharding.wrap_policy              | transformer_block: each LlamaDecoderLayer, then the root; lora_separate: each LoRA Linear too; peft: accelerate's FSDP2 grouping of a plugin holding PEFT's policy (at accelerate 1.16 the root only); none: the root | ModuleWrapPolicy / lambda policy (LoRA Linears and layers) / PEFT's fsdp_auto_wrap_policy itself / size_based_auto_wrap_policy(min_params) / none |
| sharding.use_orig_params          | (always per-parameter)                  | use_orig_params                             |
| sharding.reshard_after_forward    | reshard_after_forward (the root: None, fully_shard's own "False for the root") | FULL_SHARD / SHARD_GRAD_OP |
| sharding.forward/backward_prefetch| set_modules_to_forward/backward_prefetch (next/previous layer); backward_prefetch=false is not expressible: fully_shard always prefetches one unit in backward (its peak holds a layer more than per_param's) | forward_prefetch / BackwardPrefetch.BACKWARD_PRE (else None) |
| mixed_precision                   | MixedPrecisionPolicy(param_dtype, reduce_dtype) | MixedPrecision(param_dtype, reduce_dtype, buffer_dtype=param_dtype) |
| model_dtype                       | from_pretrained(torch_dtype); trainable parameters upcast to fp32 (upcast: trainable; all: every parameter) |
| optimizer.impl                    | torch.optim.AdamW(foreach=False) / (foreach=True) / (fused=True)                                        |
| optimizer.build                   | after_wrap: from the wrapped model; before_wrap: from the original parameters, then wrapped             |
| init: meta                        | meta_init.py: built on meta, fully_shard, to_empty; the weights loaded into the shards with set_model_state_dict(full_state_dict, broadcast_from_rank0), RoPE recomputed | the same, materialised by FullyShardedDataParallel's param_init_fn (to_empty per module) |
| checkpoint.type                   | checkpoints.py: sharded = get_state_dict + dcp.save / dcp.load; full = get_model/optimizer_state_dict(full_state_dict, cpu_offload) to rank 0, written as a Hugging Face directory + optimizer.safetensors (shardbench's FULL layout); local refused (none in FSDP2) | fsdp1_state_dicts.py: FSDP.state_dict_type(FULL / SHARDED / LOCAL_STATE_DICT) + FSDP.optim_state_dict / optim_state_dict_to_load; full in the same FULL layout, sharded with dcp, local torch.save per rank |
| activation_checkpointing          | checkpoint_wrapper (non-reentrant) on each LlamaDecoderLayer, before fully_shard, which shards the wrapper (torchtitan) | apply_activation_checkpointing, the same wrapper, after wrapping (PyTorch's FSDP tutorial, accelerate) |
"""
import functools
import json
import os

import torch

DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}


def vocab_size(init_dir):
    with open(os.path.join(init_dir, "model", "config.json")) as f:
        return int(json.load(f)["vocab_size"])


def dtype_keyword():
    """from_pretrained's and _from_config's dtype argument: `torch_dtype` was renamed in 4.56."""
    import transformers
    major, minor = (int(x) for x in transformers.__version__.split(".")[:2])
    return "dtype" if (major, minor) >= (4, 56) else "torch_dtype"


def stored_dtype(scenario, config=None):
    """The dtype the weights are stored in: the scenario's model_dtype; auto is the checkpoint's
    own (from_pretrained reads it; a meta build takes it from config.json)."""
    if scenario.model_dtype != "auto":
        return DTYPES[scenario.model_dtype]
    if config is None:
        return "auto"
    dtype = getattr(config, "dtype", None) or getattr(config, "torch_dtype", None) or torch.float32
    return getattr(torch, dtype) if isinstance(dtype, str) else dtype


def upcast(scenario, model):
    """fp32 masters for what trains (accelerate since #3848); upcast=all: every parameter."""
    upcast_all = scenario.upcast == "all"
    for p in model.parameters():
        if p.requires_grad or upcast_all:
            p.data = p.data.float()


def load_model(scenario, init_dir, device):
    """LlamaForCausalLM from INIT/model (+ PEFT adapters from INIT/adapter), stored dtypes as
    shardbench stores them, on `device`. Returns (model, params_total, params_trainable)."""
    from transformers import LlamaForCausalLM
    model = LlamaForCausalLM.from_pretrained(os.path.join(init_dir, "model"), **{dtype_keyword(): stored_dtype(scenario)})
    if scenario.lora.enabled:
        from peft import PeftModel
        model = PeftModel.from_pretrained(model, os.path.join(init_dir, "adapter"), is_trainable=True)
    else:
        for p in model.parameters():
            p.requires_grad_(True)
    upcast(scenario, model)
    model.to(device)
    total = sum(p.numel() for p in model.parameters())
    trainable = sum(p.numel() for p in model.parameters() if p.requires_grad)
    return model, total, trainable


def _decoder_layers(model):
    from transformers.models.llama.modeling_llama import LlamaDecoderLayer
    return [m for m in model.modules() if isinstance(m, LlamaDecoderLayer)]


def checkpoint_decoder_layers(model):
    """activation_checkpointing: each LlamaDecoderLayer's forward is recomputed in backward instead
    of keeping its activations (non-reentrant torch.utils.checkpoint, as torchtitan uses)."""
    from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import (
        CheckpointImpl, apply_activation_checkpointing, checkpoint_wrapper)
    from transformers.models.llama.modeling_llama import LlamaDecoderLayer
    apply_activation_checkpointing(
        model, checkpoint_wrapper_fn=functools.partial(checkpoint_wrapper, checkpoint_impl=CheckpointImpl.NO_REENTRANT),
        check_fn=lambda m: isinstance(m, LlamaDecoderLayer))


def _decoder_blocks(model):
    """Each decoder layer as fully_shard takes it: its checkpoint wrapper where there is one."""
    from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import CheckpointWrapper
    return [m for m in model.modules() if isinstance(m, CheckpointWrapper)] or _decoder_layers(model)


def _lora_linears(model):
    return [m for n, m in model.named_modules() if isinstance(m, torch.nn.Linear) and (".lora_A." in n + "." or ".lora_B." in n + ".")]


def peft_policy(model):
    """PEFT's own fsdp_auto_wrap_policy (peft/utils/other.py), as transformers' Trainer puts it on
    accelerate's FSDP plugin for a PEFT model: leaf modules whose weight trains, or the model's
    _no_split_modules (LlamaDecoderLayer)."""
    from peft.utils.other import fsdp_auto_wrap_policy
    return fsdp_auto_wrap_policy(model)


def _accelerate_fsdp2_groups(model, kwargs):
    """fully_shard over the modules accelerate's fsdp2_prepare_model groups for a plugin holding
    PEFT's policy: the plugin's set_auto_wrap_policy, then fsdp2_prepare_auto_wrap_policy turns
    the FSDP1 policy into a per-module predicate and shards the children bottom-up, as accelerate
    does. At accelerate 1.16 that translation knows only the transformer- and size-based
    policies: PEFT's (an _or_policy) comes back None and only the root is sharded, one group
    for the whole model. Returns the decoder layers that became groups (for prefetch)."""
    from accelerate import FullyShardedDataParallelPlugin
    from accelerate.utils.fsdp_utils import fsdp2_prepare_auto_wrap_policy
    from accelerate.utils.other import get_module_children_bottom_up
    from torch.distributed.fsdp import FSDPModule, fully_shard
    plugin = FullyShardedDataParallelPlugin(fsdp_version=2, auto_wrap_policy=peft_policy(model))
    plugin.set_auto_wrap_policy(model)
    predicate = fsdp2_prepare_auto_wrap_policy(plugin, model)
    if predicate is not None:
        for module in get_module_children_bottom_up(model)[:-1]:
            if not isinstance(module, FSDPModule) and predicate(module):
                fully_shard(module, **kwargs)
    return [m for m in _decoder_blocks(model) if isinstance(m, FSDPModule)]


def fsdp2(scenario, model):
    """fully_shard on the scenario's groups (wrap_policy), bottom-up, then the root; prefetch as asked."""
    from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard
    sharding, mp = scenario.sharding, scenario.mixed_precision
    kwargs = {"reshard_after_forward": sharding.reshard_after_forward}
    if mp.enabled:
        kwargs["mp_policy"] = MixedPrecisionPolicy(param_dtype=DTYPES[mp.param_dtype], reduce_dtype=DTYPES[mp.reduce_dtype])
    policy = sharding.wrap_policy
    layers = _decoder_blocks(model) if policy in ("transformer_block", "lora_separate") else []
    if policy == "lora_separate":
        for m in _lora_linears(model):
            fully_shard(m, **kwargs)
    for layer in layers:
        fully_shard(layer, **kwargs)
    if policy == "peft":
        layers = _accelerate_fsdp2_groups(model, kwargs)
    # The root keeps its parameters after forward (None: fully_shard's own heuristic for the root,
    # "required immediately when the backward pass begins"), as FSDP1 and our engines do: passing
    # True re-gathered the root in backward, one all-gather per step more than the others.
    fully_shard(model, **dict(kwargs, reshard_after_forward=None if kwargs["reshard_after_forward"] else False))
    if sharding.forward_prefetch:
        for a, b in zip(layers, layers[1:]):
            a.set_modules_to_forward_prefetch([b])
    if sharding.backward_prefetch:
        for a, b in zip(layers[1:], layers):
            a.set_modules_to_backward_prefetch([b])
    return model


def fsdp1(scenario, model, device):
    """FullyShardedDataParallel with the scenario's auto-wrap policy and options."""
    from torch.distributed.fsdp import BackwardPrefetch, FullyShardedDataParallel, MixedPrecision, ShardingStrategy
    from torch.distributed.fsdp.wrap import ModuleWrapPolicy, lambda_auto_wrap_policy, size_based_auto_wrap_policy
    from transformers.models.llama.modeling_llama import LlamaDecoderLayer
    sharding, mp = scenario.sharding, scenario.mixed_precision
    policy = sharding.wrap_policy
    if policy == "transformer_block":
        auto_wrap = ModuleWrapPolicy({LlamaDecoderLayer})
    elif policy == "lora_separate":  # peft's fsdp_auto_wrap_policy: adapters and layers, each its own unit
        lora = set(id(m) for m in _lora_linears(model))
        auto_wrap = functools.partial(lambda_auto_wrap_policy,
                                      lambda_fn=lambda m: id(m) in lora or isinstance(m, LlamaDecoderLayer))
    elif policy == "peft":
        auto_wrap = peft_policy(model)
    elif policy == "size":
        auto_wrap = functools.partial(size_based_auto_wrap_policy, min_num_params=sharding.min_params)
    else:
        auto_wrap = None
    mixed = None
    if mp.enabled:
        mixed = MixedPrecision(param_dtype=DTYPES[mp.param_dtype], reduce_dtype=DTYPES[mp.reduce_dtype],
                               buffer_dtype=DTYPES[mp.param_dtype])
    return FullyShardedDataParallel(
        model, auto_wrap_policy=auto_wrap, use_orig_params=sharding.use_orig_params,
        sharding_strategy=ShardingStrategy.FULL_SHARD if sharding.reshard_after_forward else ShardingStrategy.SHARD_GRAD_OP,
        mixed_precision=mixed, forward_prefetch=sharding.forward_prefetch,
        backward_prefetch=BackwardPrefetch.BACKWARD_PRE if sharding.backward_prefetch else None,
        device_id=device, param_init_fn=_materialize_empty(device) if on_meta(model) else None)


def on_meta(model):
    return any(p.is_meta for p in model.parameters())


def _materialize_empty(device):
    """FSDP1's param_init_fn for a meta model: each unit's own tensors allocated on `device`,
    uninitialised (the checkpoint fills them), as torchtune's FSDP1 recipes did."""
    return lambda module: module.to_empty(device=device, recurse=False)
