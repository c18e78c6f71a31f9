"""init=meta on the peer, torchtune's and torchtitan's recipe: the model (and peft's adapters) built
on the meta device, wrapped by fully_shard / FullyShardedDataParallel while still on meta, each
rank's shard materialised empty (`to_empty`; FSDP1 through `param_init_fn`), the weights loaded
from the Hugging Face directory one safetensors file at a time with
`set_model_state_dict(full_state_dict=True, broadcast_from_rank0=True)` (rank 0 reads, every rank
keeps only its shard of each tensor), and the RoPE buffers, which no checkpoint holds, recomputed.

Timing as shardbench's meta init reports it: construct (the meta model), shard (wrapping and
materialising), load (reading and distributing the checkpoint).
"""
import json
import os

import torch
import torch.distributed as dist

from . import wrap


def build(scenario, init_dir, model_dir):
    """The scenario's model on the meta device, as wrap.load_model builds it eagerly: the stored
    dtype, peft's LoRA on the targets (trainable, the base frozen), fp32 masters for what trains.
    Returns (model, params_total, params_trainable)."""
    from transformers import LlamaConfig, LlamaForCausalLM
    config = LlamaConfig.from_pretrained(model_dir)
    with torch.device("meta"):
        model = LlamaForCausalLM._from_config(config, **{wrap.dtype_keyword(): wrap.stored_dtype(scenario, config)})
        if scenario.lora.enabled:
            from peft import LoraConfig, get_peft_model
            lora = LoraConfig.from_pretrained(os.path.join(init_dir, "adapter"))
            lora.inference_mode = False  # saved for inference; the peer trains it
            model = get_peft_model(model, lora)
        else:
            for p in model.parameters():
                p.requires_grad_(True)
    wrap.upcast(scenario, model)
    total = sum(p.numel() for p in model.parameters())
    trainable = sum(p.numel() for p in model.parameters() if p.requires_grad)
    return model, total, trainable


def file_name(key):
    """A model state-dict key as transformers names the weight (peft's `base_model.model.` and
    `.base_layer` removed; a LoRA adapter as `<module>.lora_A.weight`, without the adapter name):
    the names of shardbench's FULL layout."""
    return key.removeprefix("base_model.model.").replace(".base_layer.", ".").replace(".default.", ".")


def model_keys_of(keys):
    """file_name's inverse over a whole checkpoint: each of our keys -> the model's state-dict key,
    the PEFT model's when some key is a LoRA adapter (`base_model.model.` prefix; a module with
    adapters keeps its weight under `.base_layer` and its adapters under `.default`), else the
    plain transformers name."""
    adapted = {k.rsplit(".lora_A.", 1)[0] for k in keys if ".lora_A." in k}
    if not adapted:
        return {k: k for k in keys}
    out = {}
    for k in keys:
        module, leaf = k.rsplit(".", 1)
        if module.endswith((".lora_A", ".lora_B")):
            out[k] = f"base_model.model.{module}.default.{leaf}"
        elif module in adapted:
            out[k] = f"base_model.model.{module}.base_layer.{leaf}"
        else:
            out[k] = f"base_model.model.{k}"
        assert file_name(out[k]) == k, (k, out[k])
    return out


def is_adapter(key):
    return ".lora_A." in key or ".lora_B." in key


def adapter_file_name(key):
    """A LoRA weight's name in an adapter file: peft's saved name (get_peft_model_state_dict, the
    adapter name dropped), `base_model.model.` + the module path."""
    return "base_model.model." + file_name(key)


def checkpoint_keys(model):
    """Each of the model's state-dict keys (unwrapped, as set_model_state_dict names them) and the
    key it has in the files init=meta reads: the base model's transformers name, or the adapter
    file's."""
    return {key: adapter_file_name(key) if is_adapter(key) else file_name(key) for key in model.state_dict()}


def files(init_dir, model_dir, lora):
    """The safetensors files to read, in order: the model's shards, then the adapter's."""
    index = os.path.join(model_dir, "model.safetensors.index.json")
    if os.path.exists(index):
        with open(index) as f:
            files = [os.path.join(model_dir, name) for name in sorted(set(json.load(f)["weight_map"].values()))]
    else:
        files = [os.path.join(model_dir, "model.safetensors")]
        if not os.path.exists(files[0]):  # e.g. a SHARDED checkpoint: ours (per-rank files) or DCP's
            raise FileNotFoundError(f"{model_dir}: no model.safetensors(.index.json): not a Hugging Face directory; "
                                    "a sharded checkpoint (shardbench's or torch.distributed.checkpoint's) is not read "
                                    "as a model: save checkpoint.type=full to share weights between engines")
    if lora:
        files.append(os.path.join(init_dir, "adapter", "adapter_model.safetensors"))
    return files


def recompute_rope(model, device):
    """The rotary embedding's inv_freq is a non-persistent buffer: no checkpoint holds it, and
    `to_empty` left it uninitialised (the meta-init bug this repairs: it trains on garbage
    positions without an error)."""
    for m in model.modules():
        if hasattr(m, "rope_init_fn") and hasattr(m, "inv_freq"):
            inv_freq, m.attention_scaling = m.rope_init_fn(m.config, device)
            m.inv_freq = inv_freq
            m.original_inv_freq = inv_freq


def load(model, unwrapped_keys, init_dir, model_dir, scenario, device):
    """Every weight from the checkpoint files into the sharded model, rank 0 reading a file at a
    time and broadcasting tensor by tensor, and the RoPE buffers recomputed. A key the files lack
    is bad input (KeyError)."""
    recompute_rope(model, device)
    from safetensors.torch import load_file
    from torch.distributed.checkpoint.state_dict import StateDictOptions, set_model_state_dict
    rank = dist.get_rank()
    by_file_key = {v: k for k, v in unwrapped_keys.items()}
    paths = files(init_dir, model_dir, scenario.lora.enabled) if rank == 0 else None
    box = [paths]
    dist.broadcast_object_list(box, src=0)
    loaded = set()
    for path in box[0]:
        state = {}
        if rank == 0:
            for file_key, tensor in load_file(path).items():
                if file_key in by_file_key:
                    state[by_file_key[file_key]] = tensor
            loaded.update(state)
        set_model_state_dict(model, state, options=StateDictOptions(full_state_dict=True, broadcast_from_rank0=True,
                                                                    strict=False))
    missing = [k for k in unwrapped_keys if k not in loaded] if rank == 0 else []
    box = [missing]
    dist.broadcast_object_list(box, src=0)
    if box[0]:
        raise KeyError(f"{model_dir}: the checkpoint lacks {len(box[0])} weights, e.g. {unwrapped_keys[box[0][0]]}")
