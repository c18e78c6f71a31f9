"""engine: torchtune. torchtune 0.6.1's FSDP2 utilities (torchtune.training), called in the order
its distributed LoRA recipe calls them (recipes/lora_finetune_distributed.py, _setup_model and
save_checkpoint), on the scenario's model:

| step                        | torchtune's code that runs                                                   |
|-----------------------------|------------------------------------------------------------------------------|
| activation_checkpointing    | training.set_activation_checkpointing(model, auto_wrap_policy={LlamaDecoderLayer}) |
| sharding                    | training.shard_model(shard_conditions=[training.get_shard_conditions], reshard_after_forward): each `layers.<i>`, then the root |
| init=meta: weights          | training.load_from_full_model_state_dict (every rank reads the files, as its checkpointer does; rank 0's broadcast), after the RoPE buffers are recomputed, then training.validate_no_params_on_meta_device |
| optimizer                   | built after the model is sharded and loaded, as the recipe builds it          |
| checkpoint.type: full, save | training.gather_cpu_state_dict + training.get_full_optimizer_state_dict to rank 0 |
| checkpoint.type: full, load | training.load_from_full_model_state_dict + training.load_from_full_optimizer_state_dict |

What is not torchtune's: the model is transformers' LlamaForCausalLM with peft's LoRA (the same as
the other peers', so the same weights, batches and reference), not torchtune's TransformerDecoder;
the RoPE buffers are recomputed by meta_init.recompute_rope (torchtune's modules call their own
rope_init); the full checkpoint is written in shardbench's FULL layout (full_layout.py), not by
torchtune's checkpointer. Refused up front (harness/scenario/peer_scenario.cc): what its recipes
do not do.
"""
import torch.distributed as dist

from . import full_layout, meta_init


def _training():
    """torchtune.training, imported when a torchtune run needs it (the other engines' environments
    lack torchtune)."""
    from torchtune import training
    return training


class TorchtuneStateDicts:
    """checkpoint.type full through torchtune's gather and load utilities."""
    LAYOUTS = {"full": "torchtune gather_cpu_state_dict + get_full_optimizer_state_dict to rank 0, "
                       "shardbench's FULL layout"}

    def save(self, kind, model, optim, directory, model_dir):
        training = _training()
        rank0 = dist.get_rank() == 0
        device = next(model.parameters()).device
        msd = training.gather_cpu_state_dict(model, rank0, device=device)
        osd = training.get_full_optimizer_state_dict(model, optim, rank0, device=device)
        mine = full_layout.write(directory, model_dir, msd, osd) if rank0 else []
        dist.barrier()
        return mine

    def load(self, kind, model, optim, directory):
        """Every rank reads the whole checkpoint, as torchtune's checkpointer does on resume: 0.6.1
        distributes each full tensor itself (its _DISTRIBUTED_STATE_DICT_API_IS_AVAILABLE is
        False), so each rank needs all of it."""
        training = _training()
        msd, osd = full_layout.read(directory, full_layout.state_dict_keys(model))
        device = next(model.parameters()).device
        if optim.state:
            raise RuntimeError("torchtune loads a checkpoint into a model whose optimizer has not stepped")
        names = {id(p): n for n, p in model.named_parameters()}
        groups = [[names[id(p)] for p in g["params"]] for g in optim.param_groups]
        missing = training.load_from_full_model_state_dict(model, msd, device, strict=False).missing_keys
        if missing:
            raise RuntimeError(f"{directory}: the checkpoint lacks {len(missing)} of the model's weights, e.g. {missing[0]}")
        # load_from_full_model_state_dict assigns new parameters (load_state_dict(assign=True)):
        # the optimizer, which torchtune builds only now, over them, its groups kept by name.
        params = dict(model.named_parameters())
        for group, group_names in zip(optim.param_groups, groups):
            group["params"] = [params[n] for n in group_names]
        training.load_from_full_optimizer_state_dict(model, optim, osd, device)


def _full_state_dict(keys, init_dir, model_dir, lora):
    """The whole initial state dict by the model's keys, read from the Hugging Face files (and the
    adapter's), as torchtune's checkpointer hands every rank the whole state dict. A key the files
    lack is bad input (KeyError)."""
    from safetensors.torch import load_file
    by_file_key = {v: k for k, v in keys.items()}
    full = {}
    for path in meta_init.files(init_dir, model_dir, lora):
        for file_key, tensor in load_file(path).items():
            if file_key in by_file_key:
                full[by_file_key[file_key]] = tensor
    missing = [k for k in keys if k not in full]
    if missing:
        raise KeyError(f"{model_dir}: the checkpoint lacks {len(missing)} weights, e.g. {keys[missing[0]]}")
    return full


def load_meta(s, model, keys, init_dir, model_dir, device):
    """init=meta as the recipe loads: RoPE buffers, then the whole state dict through
    load_from_full_model_state_dict (which assigns new DTensor parameters into the meta model), then
    torchtune's own check that nothing stayed on meta."""
    training = _training()
    meta_init.recompute_rope(model, device)
    full = _full_state_dict(keys, init_dir, model_dir, s.lora.enabled)
    training.load_from_full_model_state_dict(model, full, device, strict=False)
    training.validate_no_params_on_meta_device(model)


def shard(s, model):
    """Activation checkpointing, then shard_model with torchtune's own shard conditions."""
    training = _training()
    if s.activation_checkpointing:
        from transformers.models.llama.modeling_llama import LlamaDecoderLayer
        training.set_activation_checkpointing(model, auto_wrap_policy={LlamaDecoderLayer})
    training.shard_model(model, [training.get_shard_conditions], cpu_offload=False,
                         reshard_after_forward=s.sharding.reshard_after_forward)
    return model
