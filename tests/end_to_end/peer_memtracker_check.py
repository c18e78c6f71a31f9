#!/usr/bin/env python3
"""The peer's memory figures beside PyTorch's own tracker (W3 1/7): FSDPMemTracker
(torch.distributed._tools.fsdp2_mem_tracker, for fully_shard) runs over the same training steps
as the peer's accounting (peers/torch_fsdp/memory.py, unshard_gauge.py), 2 Gloo ranks, a small
Llama from transformers, every layer and the root fully_shard-ed, AdamW.

- Between steps, PyTorch's tracker and ours agree exactly: its Sharded Param, Sharded Grad and
  OptState are our params_sharded, grads and optim_state bytes (AdamW's step tensors included on
  both sides), its Unsharded Param our params_unsharded (0).
- Peaks differ by definition, and the check states by how much: the tracker's "peak" snapshot
  is one moment, the one where the total peaked (activations at their largest), broken down by
  category; our gauges keep each category's own peak. At the tracker's moment the root was
  gathered (Unsharded Param) and the next layer's all-gather was in flight (All Gather: the flat
  output FSDP2 copies out of later, which our gauge counts as that unit's gathered parameters).
  Our gathered-parameter peak is the root and two layers (in backward, fully_shard prefetches the
  next layer while one computes), at a moment the tracker's snapshot is not taken.

    tests/end_to_end/peer_memtracker_check.py SOURCE_DIR
"""
import os
import socket
import sys

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

source = sys.argv[1]
sys.path.insert(0, os.path.join(source, "peers"))  # the peer's package, torch_fsdp

from torch_fsdp import memory  # noqa: E402
from torch_fsdp import unshard_gauge  # noqa: E402

HIDDEN, INTERMEDIATE, VOCAB, LAYERS = 64, 128, 256, 2


def fail(msg):
    sys.exit(f"peer_memtracker_check: {msg}")


def rank_main(rank, port, out):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(rank), WORLD_SIZE="2")
    dist.init_process_group("gloo")
    from torch.distributed._tools.fsdp2_mem_tracker import FSDPMemTracker
    from torch.distributed.fsdp import fully_shard
    from transformers import LlamaConfig, LlamaForCausalLM

    gauge = unshard_gauge.UnshardGauge()
    why = gauge.install_fsdp2()
    torch.manual_seed(0)
    model = LlamaForCausalLM(LlamaConfig(vocab_size=VOCAB, hidden_size=HIDDEN, intermediate_size=INTERMEDIATE,
                                         num_hidden_layers=LAYERS, num_attention_heads=4, num_key_value_heads=2))
    for layer in model.model.layers:
        fully_shard(layer)
    fully_shard(model)  # the root keeps its parameters after forward (fully_shard's default), as the peer
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    ids = torch.randint(0, VOCAB, (4, 64))
    tracker = FSDPMemTracker(model, optimizer)
    tracker.track_inputs((ids,))
    with tracker:
        for step in range(3):
            if step >= 1:
                tracker.reset_mod_stats()  # the tracker follows one iteration at a time
            if step == 1:
                gauge.start()
            optimizer.zero_grad(set_to_none=True)
            model(input_ids=ids, labels=ids, use_cache=False).loss.backward()
            optimizer.step()
    gauge.stop()
    held, _ = memory.held(memory.fsdp2_storages, model, optimizer)
    current = {str(k.value if hasattr(k, "value") else k): v for k, v in tracker.get_tracker_snapshot("current")[torch.device("cpu")].items()}
    peak = {str(k.value if hasattr(k, "value") else k): v for k, v in tracker.get_tracker_snapshot("peak")[torch.device("cpu")].items()}
    out[rank] = {"why": why, "held": held, "current": current, "peak": peak,
                 "gauge": {"params": gauge.params_peak, "grads": gauge.grads_peak}}
    dist.destroy_process_group()


def main():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    out = mp.Manager().dict()
    mp.spawn(rank_main, args=(port, out), nprocs=2)
    # fp32 bytes gathered per unit (every dim 0 even: no padding at 2 ranks); k and v are half width (2 of 4 heads).
    layer = 4 * (2 * HIDDEN * HIDDEN + 2 * HIDDEN * (HIDDEN // 2) + 3 * HIDDEN * INTERMEDIATE + 2 * HIDDEN)
    root = 4 * (2 * VOCAB * HIDDEN + HIDDEN)
    for rank in (0, 1):
        r = out[rank]
        if r["why"]:
            fail(f"rank {rank}: the gauge could not install: {r['why']}")
        held, current, peak = r["held"], r["current"], r["peak"]
        pairs = (("Sharded Param", "params_sharded"), ("Sharded Grad", "grads"), ("OptState", "optim_state"),
                 ("Unsharded Param", "params_unsharded"))
        for theirs, ours in pairs:
            if current[theirs] != held[ours]:
                fail(f"rank {rank}: between steps FSDPMemTracker's {theirs} {current[theirs]} != our {ours} {held[ours]}")
        print(f"rank {rank}: between steps equal: " + ", ".join(f"{t} = {o} = {held[o]}" for t, o in pairs))
        at_peak = peak["Unsharded Param"] + peak["All Gather"]
        if r["gauge"]["params"] != root + 2 * layer or not 0 < at_peak <= r["gauge"]["params"]:
            fail(f"rank {rank}: gathered parameters: our own peak {r['gauge']['params']} (expected root {root} + 2 layers "
                 f"{layer}), FSDPMemTracker's at its total's peak {peak['Unsharded Param']} + all-gather {peak['All Gather']}")
        print(f"rank {rank}: gathered parameters: our own peak {r['gauge']['params']} (root + two layers); "
              f"FSDPMemTracker at its total's peak ({peak['Total']} bytes): Unsharded Param {peak['Unsharded Param']} + "
              f"All Gather {peak['All Gather']}")
    print("peer_memtracker_check: ok")


if __name__ == "__main__":
    main()
