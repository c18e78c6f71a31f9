#!/usr/bin/env python3
"""The PyTorch FSDP peer: one rank of a shardbench scenario run on PyTorch's own FSDP
(`engine: torch_fsdp2` -> fully_shard, `engine: torch_fsdp1` -> FullyShardedDataParallel) on
Hugging Face transformers' LlamaForCausalLM with peft's LoRA, starting from the weights
shardbench exported (INIT/model, INIT/adapter), on the same batches (data.py), with the same
optimizer, schedule and measurement window. Rank 0 writes OUT/result.json in shardbench's
results schema. Launched by `shardbench run` with torchrun's variables, one process per rank.

    peer.py SCENARIO_YAML --out OUT --init INIT --provenance PROVENANCE_JSON

Exit codes as shardbench's: 0 ok, 1 a check failed or PyTorch refused the combination (a
finding, written to the result with PyTorch's own message), 2 bad input, 3 infrastructure.
"""
import argparse
import datetime
import json
import os
import resource
import shutil
import sys
import time
import traceback

try:  # a broken environment is infrastructure (exit 3), not a failed check
    import yaml

    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import checkpoints  # noqa: E402
    import data  # noqa: E402
    import learning  # noqa: E402
    import meta_init  # noqa: E402
    import results  # noqa: E402
    import wrap  # noqa: E402
except ImportError as e:
    print(f"peer: the peer's Python lacks a package: {e}", file=sys.stderr)
    sys.exit(3)


def parse_args():
    p = argparse.ArgumentParser()
    p.add_argument("scenario")
    p.add_argument("--out", required=True)
    p.add_argument("--init", required=True)
    p.add_argument("--provenance", required=True)
    return p.parse_args()


def lr_factor(train, step):
    """engine/optim/lr_schedule.cc, step for step."""
    import math
    warmup, total = int(train["lr_warmup_steps"]), int(train["warmup_steps"]) + int(train["steps"])
    if warmup > 0 and step < warmup:
        return (step + 1) / warmup
    if train["lr_schedule"] != "cosine":
        return 1.0
    decay = max(1, total - warmup)
    progress = min(1.0, (step - warmup) / decay)
    return train["min_lr_ratio"] + (1 - train["min_lr_ratio"]) * 0.5 * (1 + math.cos(math.pi * progress))


def param_groups(model, train, flat_params):
    """engine/optim/param_groups.cc: norms (by name) without weight decay, unless FSDP1 flattened
    them away (use_orig_params=False exposes one flat parameter per unit)."""
    decay, no_decay = [], []
    for name, p in model.named_parameters():
        if not p.requires_grad:
            continue
        (no_decay if train["no_decay_on_norms"] and not flat_params and "norm" in name else decay).append(p)
    groups = [{"params": decay, "weight_decay": float(train["weight_decay"])}]
    if no_decay:
        groups.append({"params": no_decay, "weight_decay": 0.0})
    return groups


def main():
    args = parse_args()
    started_at = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    with open(args.scenario) as f:
        scenario = yaml.safe_load(f)
    # Libraries load before the clock starts, as shardbench's are loaded before its own init
    # timer: init_time covers connecting, building or loading the model and sharding it.
    import peft  # noqa: F401
    import torch
    import torch.distributed as dist
    import transformers  # noqa: F401
    t_start = time.perf_counter()

    rank, world = int(os.environ.get("RANK", 0)), int(os.environ.get("WORLD_SIZE", 1))
    local_rank = int(os.environ.get("LOCAL_RANK", 0))
    backend = scenario["backend"]
    timeout = datetime.timedelta(seconds=float(scenario["timeout_s"]))
    if backend == "nccl":
        torch.cuda.set_device(local_rank)
        device = torch.device("cuda", local_rank)
    else:
        device = torch.device("cpu")
    t_connect = time.perf_counter()
    dist.init_process_group(backend, timeout=timeout, device_id=device if backend == "nccl" else None)
    connect_s = time.perf_counter() - t_connect
    train = scenario["train"]
    torch.manual_seed(int(train["seed"]))

    # 1. The same initial weights (exported by shardbench; with init=meta from the scenario's own
    # Hugging Face directory where it names one), the same trainable set. init=meta builds on the
    # meta device here and loads the weights into the shards after wrapping (meta_init.py).
    on_meta = scenario["init"] == "meta"
    model_dir = scenario["model"] if on_meta and os.path.isdir(scenario["model"]) else os.path.join(args.init, "model")

    def build():
        """(model, params_total, params_trainable, checkpoint keys or None): eager, or on meta."""
        if on_meta:
            built = meta_init.build(scenario, args.init, model_dir)
            return (*built, meta_init.checkpoint_keys(built[0]))
        return (*wrap.load_model(scenario, args.init, device), None)

    def load_into_shards(wrapped, keys):
        if on_meta:
            meta_init.load(wrapped, keys, args.init, model_dir, scenario, device)

    def build_and_wrap():
        """The model as this run builds it, wrapped and loaded, with its optimizer."""
        built, _, _, keys = build()
        wrapped, optim = wrap.wrap_and_optimize(scenario, built, device, param_groups)
        load_into_shards(wrapped, keys)
        return wrapped, optim

    t_construct = time.perf_counter()
    model, params_total, params_trainable, checkpoint_keys = build()
    construct_s = time.perf_counter() - t_construct

    # 2. Wrap and build the optimizer; PyTorch refusing the combination is a finding.
    t_shard = time.perf_counter()
    refusal = None
    try:
        with results.keeping_warnings():  # PyTorch's own warnings are findings too
            model, optimizer = wrap.wrap_and_optimize(scenario, model, device, param_groups)
    except (torch.OutOfMemoryError, dist.DistBackendError):
        raise  # the machine or the network, not a refusal
    except (ValueError, RuntimeError, AssertionError, NotImplementedError) as e:
        refusal = f"{type(e).__name__}: {e}"
        print(f"peer: rank {rank}: PyTorch refused the scenario: {refusal}", file=sys.stderr)
    # Every rank learns whether any refused (validation happens before FSDP's first collective,
    # so a refusing rank is never left alone in one).
    refusals = [None] * world
    dist.all_gather_object(refusals, refusal)
    if any(refusals):
        r, message = next((r, m) for r, m in enumerate(refusals) if m)
        if rank == 0:
            results.write_refusal(args, scenario, started_at, f"rank {r}: {message}")
        dist.barrier()  # rank 0's result is on disk before anyone leaves
        return exit_now(1)
    shard_s = time.perf_counter() - t_shard
    load_s = 0.0
    if on_meta:
        t_load = time.perf_counter()
        load_into_shards(model, checkpoint_keys)
        load_s = time.perf_counter() - t_load
    init_s = time.perf_counter() - t_start
    init_rss_peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024

    # 3. Train: warmup steps, then measured ones, on the documented batches.
    try:
        source = data.scenario_data(scenario, wrap.vocab_size(args.init))
    except ValueError as e:  # a malformed token file: bad input, as shardbench's own engines say
        print(f"peer: bad input: {e}", file=sys.stderr)
        return exit_now(2)
    fingerprints_before = learning.fingerprints(model)
    b, accum = int(train["batch_size"]), int(train["grad_accumulation"])
    total = int(train["warmup_steps"]) + int(train["steps"])
    base_lrs = [g["lr"] for g in optimizer.param_groups]
    step_s, losses = [], []
    kind = scenario["checkpoint"]["type"]
    save_at = checkpoints.save_after(scenario) if kind != "none" else -1
    checkpoint_dir = os.path.join(args.out, "checkpoint")
    saved, at_save = None, None
    time_to_first_step = None
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)

    def train_step(m, opt, step):
        """One training step of `m` on the step's batches; returns the global loss."""
        opt.zero_grad(set_to_none=True)
        loss_sum = None
        for ids, labels in data.micro_batches(source, step, rank, b, accum):
            ids_t = torch.tensor(ids, dtype=torch.long, device=device)
            labels_t = torch.tensor(labels, dtype=torch.long, device=device)
            # Training keeps no KV cache (as HF's Trainer with gradient checkpointing): with one, a
            # checkpointed layer's recompute appends to it and sees other shapes than its forward.
            logits = m(input_ids=ids_t, use_cache=False).logits
            loss = torch.nn.functional.cross_entropy(logits.float().reshape(-1, logits.size(-1)), labels_t.reshape(-1))
            (loss / accum).backward()
            loss_sum = loss.detach() if loss_sum is None else loss_sum + loss.detach()
        global_loss = loss_sum / accum
        if world > 1:
            dist.all_reduce(global_loss)
            global_loss /= world
        if float(train["max_grad_norm"]) > 0:
            wrap.clip_grad_norm(scenario, m, float(train["max_grad_norm"]))
        factor = lr_factor(train, step)
        for g, lr in zip(opt.param_groups, base_lrs):
            g["lr"] = lr * factor
        opt.step()
        return global_loss.item()  # waits for the step's device work, as shardbench's trainer does

    for step in range(total):
        if step == int(train["warmup_steps"]) and device.type == "cuda":
            torch.cuda.synchronize(device)
            torch.cuda.reset_peak_memory_stats(device)
        t0 = time.perf_counter()
        loss_value = train_step(model, optimizer, step)
        step_s.append(time.perf_counter() - t0)
        losses.append(loss_value)
        if time_to_first_step is None:
            time_to_first_step = time.perf_counter() - t_start
        if step + 1 == save_at:  # between steps, outside their timers, as shardbench saves
            with results.keeping_warnings():
                if scenario["checks"]["state_dict_roundtrip"]:
                    at_save = checkpoints.local_state(model, optimizer)
                saved = checkpoints.save(kind, model, optimizer, checkpoint_dir, model_dir,
                                         os.path.join(args.init, "adapter"))

    # Training's memory figures, before the roundtrip check builds a second model.
    rss_peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    device_peaks = (torch.cuda.max_memory_allocated(device), torch.cuda.max_memory_reserved(device)) \
        if device.type == "cuda" else (None, None)

    # 3b. The checkpoint checks (checkpoints.py): a fresh model and optimizer load it, compared
    # with the state at the save (state_dict_roundtrip), then train the remaining steps, compared
    # with the uninterrupted run's losses and final state (resume).
    checkpoint_load_s, roundtrip, resumed = None, None, None
    at_end = checkpoints.local_state(model, optimizer) if scenario["checks"]["resume"] else None
    if at_save is not None or at_end is not None:
        with results.keeping_warnings():
            fresh, fresh_optimizer = build_and_wrap()
            if at_save is not None:
                checkpoint_load_s, roundtrip = checkpoints.roundtrip_check(kind, at_save, fresh, fresh_optimizer,
                                                                           checkpoint_dir, save_at, device)
            else:
                checkpoint_load_s = checkpoints.load(kind, fresh, fresh_optimizer, checkpoint_dir)
            if at_end is not None:
                after_load = [train_step(fresh, fresh_optimizer, step) for step in range(save_at, total)]
                resumed = checkpoints.resume_check(kind, save_at, after_load, losses[save_at:],
                                                   checkpoints.local_state(fresh, fresh_optimizer), at_end, device)
    if kind != "none" and not scenario["checkpoint"]["keep"]:
        dist.barrier()
        if rank == 0:
            shutil.rmtree(checkpoint_dir, ignore_errors=True)

    # 4. Every rank's record to rank 0, which writes the result.
    record = {
        "step_s": step_s, "init_s": init_s, "connect_s": connect_s, "construct_s": construct_s, "shard_s": shard_s,
        "load_s": load_s, "init_rss_peak": init_rss_peak,
        "checkpoint": None if saved is None else {"save_s": saved[0], "bytes": saved[1], "bytes_total": saved[2],
                                                  "load_s": checkpoint_load_s},
        "time_to_first_step": time_to_first_step,
        "rss_peak": rss_peak, "device_allocated_peak": device_peaks[0], "device_reserved_peak": device_peaks[1],
    }
    learned = learning.check(model, fingerprints_before, losses, world) if scenario["checks"]["learning"] else None
    records = [None] * world
    dist.all_gather_object(records, record)
    status = "ok"
    if rank == 0:
        status = results.write_result(args, scenario, started_at, records, losses, params_total, params_trainable,
                                      [c for c in (learned, roundtrip, resumed) if c])
    dist.barrier()
    return exit_now(0 if status == "ok" else 1)


def exit_now(code):
    """Leaves without tearing the process group down: everything is written (rank 0's result
    atomically, before the barrier), and Gloo's teardown at interpreter exit aborts now and then
    ("terminate called without an active exception", seen on torch 2.11), which would turn a
    finished run into a crashed rank."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


if __name__ == "__main__":
    try:
        exit_now(main())
    except (FileNotFoundError, KeyError, yaml.YAMLError) as e:
        print(f"peer: bad input: {type(e).__name__}: {e}", file=sys.stderr)
        exit_now(2)
    except Exception:  # a crash of the run itself (a collective, the machine): infrastructure
        traceback.print_exc()
        exit_now(3)
