"""checkpoint.type full / sharded / local on torch_fsdp1 through FSDP1's own API, as its users
(accelerate, older torchtune recipes) call it: FSDP.state_dict_type(model, FULL_STATE_DICT |
SHARDED_STATE_DICT | LOCAL_STATE_DICT) around model.state_dict() / load_state_dict(), with
FSDP.optim_state_dict / FSDP.optim_state_dict_to_load for the optimizer.

  full     every rank gathers the full state (on a GPU offloaded to the CPU and rank 0's only, as
           users save it; on a CPU run offload is left off: FSDP1's full state dict with offload on
           CPU parameters segfaulted in torch 2.11, _state_dict_utils.py param_hook); rank 0 writes
           shardbench's FULL layout (full_layout.py); every rank reads it back and loads it
  sharded  ShardedTensors (each rank's chunks of the original parameters) saved and loaded with
           torch.distributed.checkpoint (dcp.save / dcp.load, the optimizer state through
           load_sharded_optimizer_state_dict), one `__<rank>_0.distcp` per rank + `.metadata`
  local    each rank's flat shards as they are, torch.save'd to local_rank<N>.pt; loaded back
           under the same state dict type (same world size and wrapping only)
"""
import os

import torch
import torch.distributed as dist

from . import full_layout

# The kinds this API takes, and how each is taken and written (for the checks' words).
LAYOUTS = {"sharded": "FSDP.state_dict_type(SHARDED_STATE_DICT), torch.distributed.checkpoint",
           "full": "FSDP.state_dict_type(FULL_STATE_DICT), shardbench's FULL layout",
           "local": "FSDP.state_dict_type(LOCAL_STATE_DICT), torch.save per rank"}


def _fsdp():
    from torch.distributed.fsdp import FullyShardedDataParallel
    return FullyShardedDataParallel


def _types(kind, on_gpu):
    """(StateDictType, state dict config, optimizer state dict config) of `kind`."""
    from torch.distributed.fsdp import (FullOptimStateDictConfig, FullStateDictConfig, LocalOptimStateDictConfig,
                                        LocalStateDictConfig, ShardedOptimStateDictConfig, ShardedStateDictConfig,
                                        StateDictType)
    if kind == "full":
        return (StateDictType.FULL_STATE_DICT, FullStateDictConfig(offload_to_cpu=on_gpu, rank0_only=on_gpu),
                FullOptimStateDictConfig(offload_to_cpu=on_gpu, rank0_only=on_gpu))
    if kind == "sharded":
        return StateDictType.SHARDED_STATE_DICT, ShardedStateDictConfig(), ShardedOptimStateDictConfig()
    return StateDictType.LOCAL_STATE_DICT, LocalStateDictConfig(), LocalOptimStateDictConfig()


def state_dicts(kind, model, optimizer):
    """This rank's model and optimizer state dicts under `kind`'s state dict type."""
    on_gpu = next(model.parameters()).is_cuda
    with _fsdp().state_dict_type(model, *_types(kind, on_gpu)):
        return model.state_dict(), _fsdp().optim_state_dict(model, optimizer)


def save(kind, model, optimizer, directory, model_dir):
    """Collective. Returns the paths this rank wrote."""
    rank = dist.get_rank()
    msd, osd = state_dicts(kind, model, optimizer)
    if kind == "sharded":
        import torch.distributed.checkpoint as dcp
        dcp.save({"model": msd, "optim": osd}, checkpoint_id=directory)
        mine = [os.path.join(directory, f) for f in os.listdir(directory) if f.startswith(f"__{rank}_")]
        return mine + ([os.path.join(directory, ".metadata")] if rank == 0 else [])
    if kind == "full":
        mine = full_layout.write(directory, model_dir, msd, osd) if rank == 0 else []
        dist.barrier()
        return mine
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, f"local_rank{rank}.pt")
    torch.save({"model": msd, "optim": osd}, path)  # rank-local, as users save LOCAL_STATE_DICT
    dist.barrier()
    return [path]


def load(kind, model, optimizer, directory):
    """Collective: the checkpoint into `model` and `optimizer`."""
    on_gpu = next(model.parameters()).is_cuda
    keys = full_layout.state_dict_keys(model) if kind == "full" else None  # named outside the context
    with _fsdp().state_dict_type(model, *_types(kind, on_gpu)):
        if kind == "sharded":
            import torch.distributed.checkpoint as dcp
            from torch.distributed.checkpoint.optimizer import load_sharded_optimizer_state_dict
            state = {"model": model.state_dict()}
            dcp.load(state, checkpoint_id=directory)
            model.load_state_dict(state["model"])
            osd = load_sharded_optimizer_state_dict(model_state_dict=state["model"], optimizer_key="optim",
                                                    storage_reader=dcp.FileSystemReader(directory))["optim"]
        elif kind == "full":
            msd, osd = full_layout.read(directory, keys)
            model.load_state_dict(msd)
        else:
            saved = torch.load(os.path.join(directory, f"local_rank{dist.get_rank()}.pt"), weights_only=False)
            model.load_state_dict(saved["model"])
            osd = saved["optim"]
        optimizer.load_state_dict(_fsdp().optim_state_dict_to_load(model, optimizer, osd))

