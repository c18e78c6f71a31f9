"""checkpoint.type on the peer, with PyTorch's own APIs (torch.distributed.checkpoint):

  sharded  get_state_dict (each rank's DTensor / ShardedTensor shards) saved and loaded with DCP,
           dcp.save / dcp.load: one `__<rank>_0.distcp` file per rank and rank 0's `.metadata`
  full     get_model_state_dict / get_optimizer_state_dict with full_state_dict=True and
           cpu_offload=True gathered to rank 0, written there in shardbench's FULL layout: a
           Hugging Face directory (config.json + model.safetensors, the parameters by their
           transformers names, LoRA's as `<module>.lora_A.weight`) plus optimizer.safetensors
           (`state.<name>.exp_avg`, `.exp_avg_sq`, `.step`); loaded back with
           set_model_state_dict / set_optimizer_state_dict(broadcast_from_rank0=True)
  local    FSDP1 only: each rank's flat shards as FSDP.state_dict_type(LOCAL_STATE_DICT) gives them,
           with FSDP.optim_state_dict, torch.save'd to local_rank<N>.pt; loaded back under the same
           state dict type with optim_state_dict_to_load (same world size and wrapping only)
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
import json
import os
import shutil
import time

import torch
import torch.distributed as dist

import meta_init


LAYOUTS = {"sharded": "torch.distributed.checkpoint", "full": "gathered to rank 0, shardbench's FULL layout",
           "local": "FSDP1 LOCAL_STATE_DICT, torch.save per rank", "adapter": "PEFT layout"}


def save_after(scenario):
    steps = int(scenario["train"]["warmup_steps"]) + int(scenario["train"]["steps"])
    save_step = int(scenario["checkpoint"]["save_step"])
    return save_step if save_step > 0 else steps


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


def save(kind, model, optimizer, directory, model_dir, adapter_dir):
    """Collective. Returns (seconds, bytes this rank wrote, bytes of the whole checkpoint)."""
    rank = dist.get_rank()
    if rank == 0 and os.path.exists(directory):
        shutil.rmtree(directory)
    dist.barrier()
    t0 = time.perf_counter()
    if kind == "sharded":
        import torch.distributed.checkpoint as dcp
        from torch.distributed.checkpoint.state_dict import get_state_dict
        msd, osd = get_state_dict(model, optimizer)
        dcp.save({"model": msd, "optim": osd}, checkpoint_id=directory)
        mine = [os.path.join(directory, f) for f in os.listdir(directory) if f.startswith(f"__{rank}_")]
        if rank == 0:
            mine.append(os.path.join(directory, ".metadata"))
    elif kind == "local":  # FSDP1 only (FSDP2 has none: refused at scenario load)
        from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
        from torch.distributed.fsdp import StateDictType
        with FSDP.state_dict_type(model, StateDictType.LOCAL_STATE_DICT):
            msd = model.state_dict()
            osd = FSDP.optim_state_dict(model, optimizer)
        os.makedirs(directory, exist_ok=True)
        path = os.path.join(directory, f"local_rank{rank}.pt")
        torch.save({"model": msd, "optim": osd}, path)  # rank-local, as users save LOCAL_STATE_DICT
        mine = [path]
        dist.barrier()
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
        from safetensors.torch import save_file
        from torch.distributed.checkpoint.state_dict import (StateDictOptions, get_model_state_dict,
                                                             get_optimizer_state_dict)
        # cpu_offload moves the gathered tensors off the GPU; on a CPU run it is left off: FSDP1's
        # full state dict with offload on CPU parameters segfaulted in torch 2.11 (its clone of
        # a freed unsharded view, _state_dict_utils.py param_hook; seen on tiny with LoRA).
        full = StateDictOptions(full_state_dict=True, cpu_offload=next(model.parameters()).is_cuda)
        msd = get_model_state_dict(model, options=full)
        osd = get_optimizer_state_dict(model, optimizer, options=full)
        mine = []
        if rank == 0:
            os.makedirs(directory)
            shutil.copy(os.path.join(model_dir, "config.json"), os.path.join(directory, "config.json"))
            save_file({meta_init.file_name(k): v.contiguous() for k, v in msd.items()},
                      os.path.join(directory, "model.safetensors"), metadata={"format": "pt"})
            state = {}
            for name, s in osd["state"].items():
                for what, v in s.items():
                    t = v if torch.is_tensor(v) else torch.tensor(v)
                    state[f"state.{meta_init.file_name(name)}.{what}"] = (t.long() if what == "step" else t).contiguous()
            save_file(state, os.path.join(directory, "optimizer.safetensors"), metadata={"format": "pt"})
            with open(os.path.join(directory, "param_groups.json"), "w") as f:
                json.dump(osd["param_groups"], f)
            mine = [os.path.join(directory, f) for f in ("config.json", "model.safetensors", "optimizer.safetensors",
                                                         "param_groups.json")]
        dist.barrier()
    seconds = time.perf_counter() - t0
    dist.barrier()  # every file is on disk before its size is read
    total = _bytes_of(os.path.join(directory, f) for f in os.listdir(directory))
    return seconds, _bytes_of(mine), total


def load(kind, model, optimizer, directory):
    """Collective: the checkpoint into `model` and `optimizer`. Returns the seconds it took."""
    from torch.distributed.checkpoint.state_dict import (StateDictOptions, get_model_state_dict, get_state_dict,
                                                         set_model_state_dict, set_optimizer_state_dict)
    t0 = time.perf_counter()
    if kind == "sharded":
        import torch.distributed.checkpoint as dcp
        msd, osd = get_state_dict(model, optimizer)
        state = {"model": msd, "optim": osd}
        dcp.load(state, checkpoint_id=directory)
        set_model_state_dict(model, state["model"])
        set_optimizer_state_dict(model, optimizer, state["optim"])
    elif kind == "local":
        from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
        from torch.distributed.fsdp import StateDictType
        saved = torch.load(os.path.join(directory, f"local_rank{dist.get_rank()}.pt"), weights_only=False)
        with FSDP.state_dict_type(model, StateDictType.LOCAL_STATE_DICT):
            model.load_state_dict(saved["model"])
            optimizer.load_state_dict(FSDP.optim_state_dict_to_load(model, optimizer, saved["optim"]))
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
        from safetensors.torch import load_file
        names = {k: meta_init.file_name(k) for k in model_keys(model)}
        msd, osd = {}, {}
        if dist.get_rank() == 0:
            params = load_file(os.path.join(directory, "model.safetensors"))
            msd = {k: params[f] for k, f in names.items()}
            state = load_file(os.path.join(directory, "optimizer.safetensors"))
            with open(os.path.join(directory, "param_groups.json")) as f:
                groups = json.load(f)
            osd = {"state": {}, "param_groups": groups}
            for k, f in names.items():
                s = {what: state[f"state.{f}.{what}"] for what in ("step", "exp_avg", "exp_avg_sq")
                     if f"state.{f}.{what}" in state}
                if s:
                    s["step"] = s["step"].float()  # AdamW keeps step as a float tensor
                    osd["state"][k] = s
        opts = StateDictOptions(full_state_dict=True, broadcast_from_rank0=True)
        set_model_state_dict(model, msd, options=opts)
        set_optimizer_state_dict(model, optimizer, osd, options=opts)
    return time.perf_counter() - t0


def model_keys(model):
    from torch.distributed.checkpoint.state_dict import get_model_state_dict
    return list(get_model_state_dict(model).keys())


def roundtrip_check(kind, at_save, fresh, fresh_optimizer, directory, save_at, device):
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
    seconds = load(kind, fresh, fresh_optimizer, directory)
    now = local_state(fresh, fresh_optimizer)
    if adapter:  # no optimizer state in an adapter checkpoint
        at_save = {k: v for k, v in at_save.items() if k.startswith("model.")}
        now = {k: v for k, v in now.items() if k.startswith("model.")}
    differ, compared, first = _compare_over_ranks(at_save, now, device)
    return seconds, {"name": "state_dict_roundtrip", "passed": differ == 0,
                     "detail": f"{kind} checkpoint ({LAYOUTS[kind]}) saved "
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

