"""checkpoint.type on the peer, with the API each stack's users call: the stack's own where its
recipe has one (recipes.py `state_dicts`: torch_fsdp1's full, sharded and local through
FSDP.state_dict_type and FSDP.optim_state_dict, fsdp1_state_dicts.py), otherwise (torch_fsdp2)
through torch.distributed.checkpoint.state_dict:

  sharded  get_state_dict (each rank's DTensor shards) saved and loaded with DCP, dcp.save /
           dcp.load: one `__<rank>_0.distcp` file per rank and rank 0's `.metadata`
  full     get_model_state_dict / get_optimizer_state_dict with full_state_dict=True and
           cpu_offload=True (rank 0's alone, off the GPU), written there in shardbench's FULL
           layout (full_layout.py); loaded back with set_model_state_dict /
           set_optimizer_state_dict(broadcast_from_rank0=True)
  local    none: FSDP2 has no local state dict (refused at scenario load)

Both engines:
  adapter  the LoRA weights only (get_model_state_dict with full_state_dict=True and
           ignore_frozen_params=True: FSDP2 gathers only those, FSDP1 the whole model first),
           written by rank 0 in PEFT's layout as shardbench's adapter checkpoints are:
           adapter_model.safetensors (`base_model.model.<module>.lora_A.weight`) and the
           adapter_config.json the peer built its LoRA from; every rank reads the small file back
           into the model's full state dict and set_model_state_dict takes its part

Saved after checkpoint.save_step steps (0: after the last), timed, its bytes counted (what each
rank wrote, and the whole directory). checks.state_dict_roundtrip loads it into a freshly built
and wrapped model and optimizer and compares every rank's shards of every parameter and optimizer
state tensor bit for bit with those at the save, as shardbench's own check does.
The adapter check compares the parameters only (the frozen base is rebuilt as it was, and an
adapter checkpoint holds no optimizer state, as on shardbench's side). checks.resume trains that
fresh model from the save to the end: every loss and, at the end, every rank's shards of every
parameter and optimizer state tensor must equal the uninterrupted run's. Kind `local` on FSDP2 is
refused before launch (harness/scenario/peer_scenario.cc). Whatever PyTorch raises while saving or
loading is the check's red result in PyTorch's own words (peer.py), never a crash.
"""
import os
import shutil
import time

import torch
import torch.distributed as dist

from . import full_layout
from . import meta_init


LAYOUTS = {"sharded": "get_state_dict, torch.distributed.checkpoint", "full": "gathered to rank 0, shardbench's FULL layout",
           "adapter": "PEFT layout"}


def _owns(own, kind):
    """`own` (the recipe's state dict API, recipes.py: fsdp1_state_dicts or None) has `kind`."""
    return own is not None and kind in own.LAYOUTS


def layout(kind, own=None):
    """How a `kind` checkpoint is taken and written, for the checks' words."""
    return own.LAYOUTS[kind] if _owns(own, kind) else LAYOUTS[kind]


def save_after(scenario):
    save_step = scenario.checkpoint.save_step
    return save_step if save_step > 0 else scenario.train.total_steps


def _local(value):
    """This rank's part of a state-dict value: a DTensor's or ShardedTensor's local shard, a
    plain tensor as it is, anything else (param_groups' numbers) as is."""
    from torch.distributed.tensor import DTensor
    if isinstance(value, DTensor):
        return value.to_local().detach().cpu().clone()
    if hasattr(value, "local_shards"):
        shards = value.local_shards()
        return shards[0].tensor.detach().cpu().clone() if shards else torch.empty(0)
    if torch.is_tensor(value):
        return value.detach().cpu().clone()
    return value


def local_state(model, optimizer):
    """Every tensor this rank holds of the model and its optimizer state, by key."""
    from torch.distributed.checkpoint.state_dict import get_state_dict
    msd, osd = get_state_dict(model, optimizer)
    out = {f"model.{k}": _local(v) for k, v in msd.items()}
    for name, state in osd["state"].items():
        for what, v in state.items():
            out[f"state.{name}.{what}"] = _local(v)
    return out


def _bytes_of(paths):
    return sum(os.path.getsize(p) for p in paths if os.path.isfile(p))


def save(kind, model, optimizer, directory, model_dir, adapter_dir, own=None):
    """Collective. Returns (seconds, bytes this rank wrote, bytes of the whole checkpoint). `own`:
    the stack's own state dict API for the kinds it has (recipes.py)."""
    rank = dist.get_rank()
    if rank == 0 and os.path.exists(directory):
        shutil.rmtree(directory)
    dist.barrier()
    t0 = time.perf_counter()
    if _owns(own, kind):
        mine = own.save(kind, model, optimizer, directory, model_dir)
    elif kind == "sharded":
        import torch.distributed.checkpoint as dcp
        from torch.distributed.checkpoint.state_dict import get_state_dict
        msd, osd = get_state_dict(model, optimizer)
        dcp.save({"model": msd, "optim": osd}, checkpoint_id=directory)
        mine = [os.path.join(directory, f) for f in os.listdir(directory) if f.startswith(f"__{rank}_")]
        if rank == 0:
            mine.append(os.path.join(directory, ".metadata"))
    elif kind == "adapter":
        from safetensors.torch import save_file
        from torch.distributed.checkpoint.state_dict import StateDictOptions, get_model_state_dict
        # Without cpu_offload: with it FSDP1's full state dict is rank 0's alone, and dropping the
        # frozen keys on the other ranks raises (torch 2.11 state_dict.py pops keys they lack).
        # FSDP1 gathers the whole model before dropping them, FSDP2 only the trained weights.
        only_trained = StateDictOptions(full_state_dict=True, ignore_frozen_params=True)
        msd = get_model_state_dict(model, options=only_trained)
        mine = []
        if rank == 0:
            os.makedirs(directory)
            save_file({meta_init.adapter_file_name(k): v.detach().cpu().contiguous() for k, v in msd.items()
                       if meta_init.is_adapter(k)},
                      os.path.join(directory, "adapter_model.safetensors"), metadata={"format": "pt"})
            shutil.copy(os.path.join(adapter_dir, "adapter_config.json"), os.path.join(directory, "adapter_config.json"))
            mine = [os.path.join(directory, f) for f in ("adapter_model.safetensors", "adapter_config.json")]
        dist.barrier()
    else:
        from torch.distributed.checkpoint.state_dict import (StateDictOptions, get_model_state_dict,
                                                             get_optimizer_state_dict)
        # cpu_offload: rank 0 alone holds the gathered state, off the GPU (on a CPU run only the
        # rank-0-only part matters), as torchtitan and accelerate save FSDP2's full state.
        full = StateDictOptions(full_state_dict=True, cpu_offload=True)
        msd = get_model_state_dict(model, options=full)
        osd = get_optimizer_state_dict(model, optimizer, options=full)
        mine = full_layout.write(directory, model_dir, msd, osd) if rank == 0 else []
        dist.barrier()
    seconds = time.perf_counter() - t0
    dist.barrier()  # every file is on disk before its size is read
    total = _bytes_of(os.path.join(directory, f) for f in os.listdir(directory))
    return seconds, _bytes_of(mine), total


def load(kind, model, optimizer, directory, own=None):
    """Collective: the checkpoint into `model` and `optimizer`. Returns the seconds it took."""
    from torch.distributed.checkpoint.state_dict import (StateDictOptions, get_model_state_dict, get_state_dict,
                                                         set_model_state_dict, set_optimizer_state_dict)
    t0 = time.perf_counter()
    if _owns(own, kind):
        own.load(kind, model, optimizer, directory)
    elif kind == "sharded":
        import torch.distributed.checkpoint as dcp
        msd, osd = get_state_dict(model, optimizer)
        state = {"model": msd, "optim": osd}
        dcp.load(state, checkpoint_id=directory)
        set_model_state_dict(model, state["model"])
        set_optimizer_state_dict(model, optimizer, state["optim"])
    elif kind == "adapter":
        from safetensors.torch import load_file
        # A complete full state dict, the adapters replaced: given only the adapters,
        # set_model_state_dict fills the other keys with the model's own parameters, which on
        # FSDP1 without use_orig_params are flat and do not fit.
        full = StateDictOptions(full_state_dict=True)
        path = os.path.join(directory, "adapter_model.safetensors")
        adapters = load_file(path)
        msd = get_model_state_dict(model, options=full)
        for k in msd:
            if meta_init.is_adapter(k):
                if meta_init.adapter_file_name(k) not in adapters:  # this run wrote it: our bug, not input
                    raise RuntimeError(f"{path}: no tensor '{meta_init.adapter_file_name(k)}' for '{k}'")
                msd[k] = adapters[meta_init.adapter_file_name(k)]
        set_model_state_dict(model, msd, options=full)
    else:
        msd, osd = full_layout.read(directory, full_layout.state_dict_keys(model)) if dist.get_rank() == 0 else ({}, {})
        opts = StateDictOptions(full_state_dict=True, broadcast_from_rank0=True)
        set_model_state_dict(model, msd, options=opts)
        set_optimizer_state_dict(model, optimizer, osd, options=opts)
    return time.perf_counter() - t0


def roundtrip_check(kind, at_save, fresh, fresh_optimizer, directory, save_at, device, own=None):
    """Collective. The checkpoint loaded into a freshly built model and optimizer, its parameters
    (for an adapter checkpoint the adapters only) zeroed first so that nothing matches by
    accident; every rank's shards of every parameter and optimizer state tensor must equal
    `at_save` (local_state at the save) bit for bit.
    Returns (load seconds, the check)."""
    adapter = kind == "adapter"
    with torch.no_grad():
        for p in fresh.parameters():
            if not adapter or p.requires_grad:  # with LoRA only the adapters train (and FSDP1
                p.zero_()                       # without use_orig_params names them by unit)
    seconds = load(kind, fresh, fresh_optimizer, directory, own)
    now = local_state(fresh, fresh_optimizer)
    if adapter:  # no optimizer state in an adapter checkpoint
        at_save = {k: v for k, v in at_save.items() if k.startswith("model.")}
        now = {k: v for k, v in now.items() if k.startswith("model.")}
    differ, compared, first = _compare_over_ranks(at_save, now, device)
    return seconds, {"name": "state_dict_roundtrip", "passed": differ == 0,
                     "detail": f"{kind} checkpoint ({layout(kind, own)}) saved "
                               f"after step {save_at}: {compared:.0f} tensors compared bit for bit "
                               f"({'params' if adapter else 'params and optimizer state'}) over "
                               f"{dist.get_world_size()} ranks, {differ:.0f} differ{first}"}


def resume_check(kind, save_at, after_load, uninterrupted, now, at_end, device):
    """Collective. `after_load`: the losses of the model that loaded the checkpoint, trained from
    step save_at; `uninterrupted`: the run's own losses of those steps; `now` / `at_end`:
    local_state of each at the end."""
    unequal = sum(a != b for a, b in zip(after_load, uninterrupted))
    worst = max((abs(a - b) for a, b in zip(after_load, uninterrupted)), default=0.0)
    differ, _, first = _compare_over_ranks(at_end, now, device)
    return {"name": "resume", "passed": unequal == 0 and differ == 0,
            "detail": f"resumed after step {save_at} from the {kind} checkpoint and trained {len(after_load)} steps: "
                      f"{unequal} of {len(after_load)} losses differ from the uninterrupted run (largest difference "
                      f"{worst:.3g}); final state: {differ:.0f} tensors differ{first}"}


def _compare_over_ranks(want, got, device):
    """Collective. Two local_state dicts compared bit for bit on every rank: (tensors that differ
    or are missing on either side, tensors compared, over all ranks; the first on this rank)."""
    differ = [k for k in want if k not in got or not _equal(want[k], got[k])]
    differ += [k for k in got if k not in want]
    counts = torch.tensor([len(differ), len(want)], dtype=torch.float64, device=device)
    dist.all_reduce(counts)
    first = f" (first on rank {dist.get_rank()}: '{differ[0]}')" if differ else ""
    return counts[0].item(), counts[1].item(), first


def _equal(a, b):
    if torch.is_tensor(a) and torch.is_tensor(b):
        return a.dtype == b.dtype and a.shape == b.shape and torch.equal(a, b)
    return a == b

