#!/usr/bin/env python3
"""The FSDP plugin `engine: accelerate` resolves on CPU is the one accelerate resolves for a GPU
configuration (peers/torch_fsdp/accelerate_plugin.py). Per case, the scenario as `shardbench show
--all` resolves it; on 2 Gloo ranks (torchrun) a tiny Llama (+ LoRA) is given to:
  - a GPU configuration's plugin: FullyShardedDataParallelPlugin(**plugin_options) with the
    auto-wrap policy set as prepare sets it (no Accelerator: on a GPU AcceleratorState only stores
    it, and sets mixed precision, which these cases leave off);
  - the CPU path: accelerator_for (Accelerator(cpu=True) + the replayed FSDP branch), prepare.
The resolved fields (use_orig_params, sharding strategy, reshard_after_forward, state_dict_type,
prefetch, activation checkpointing, the auto-wrap policy) must be equal, equal to what the
scenario asks, and the prepared model FSDP's (FullyShardedDataParallel / fully_shard), never DDP.
Also: the peer's provenance records the pinned accelerate, torch, transformers and peft.

    tests/end_to_end/peer_accelerate_plugin_check.py SHARDBENCH_BINARY SOURCE_DIR WORK_DIR
"""
import json
import os
import shutil
import subprocess
import sys

CASES = {  # name: overrides (engine=accelerate, world_size=2)
    "v1_transformer_use_orig_params_sharded": ["accelerate.fsdp_version=1", "checkpoint.type=sharded"],
    "v1_peft_flat_params_local": ["accelerate.fsdp_version=1", "sharding.wrap_policy=peft", "sharding.use_orig_params=false",
                                  "checkpoint.type=local", "sharding.reshard_after_forward=false",
                                  "sharding.backward_prefetch=true"],
    "v1_size_checkpointed": ["accelerate.fsdp_version=1", "sharding.wrap_policy=size", "sharding.min_params=5000",
                             "activation_checkpointing=true"],
    "v2_transformer_full": ["accelerate.fsdp_version=2", "optimizer.build=before_wrap", "checkpoint.type=full"],
    "v2_peft_sharded": ["accelerate.fsdp_version=2", "optimizer.build=before_wrap", "sharding.wrap_policy=peft",
                        "checkpoint.type=sharded", "sharding.reshard_after_forward=false"],
    "v2_meta_cpu_ram_efficient_loading": ["accelerate.fsdp_version=2", "optimizer.build=before_wrap", "init=meta"],
}
FIELDS = ("use_orig_params", "sharding_strategy", "reshard_after_forward", "state_dict_type", "backward_prefetch",
          "forward_prefetch", "activation_checkpointing", "fsdp_version", "cpu_ram_efficient_loading")


def resolved(plugin):
    """The plugin's resolved fields, comparable as text; the wrap policy by function and arguments."""
    out = {f: str(getattr(plugin, f, None)) for f in FIELDS}
    policy = plugin.auto_wrap_policy
    func = getattr(policy, "func", policy)
    keywords = {k: sorted(c.__name__ for c in v) if isinstance(v, (set, frozenset)) else v
                for k, v in sorted(getattr(policy, "keywords", {}).items()) if k != "policies"}
    out["auto_wrap_policy"] = f"{getattr(func, '__name__', func)} {keywords}"
    return out


def tiny_model(s):
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM
    torch.manual_seed(0)
    model = LlamaForCausalLM(LlamaConfig(vocab_size=128, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                                         num_attention_heads=4, num_key_value_heads=2))
    if s.lora.enabled:
        from peft import LoraConfig, get_peft_model
        model = get_peft_model(model, LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj", "v_proj"]))
    return model


def worker(scenario_file, out_file):
    import torch
    import torch.distributed as dist
    from accelerate import FullyShardedDataParallelPlugin
    from accelerate.utils import DistributedType
    from torch.distributed.fsdp import FSDPModule, FullyShardedDataParallel
    from torch_fsdp import accelerate_plugin, records, recipes, scenario
    s = scenario.load(scenario_file)
    recipe = recipes.for_scenario(s)  # sets accelerate's CPU device, as the peer does
    dist.init_process_group("gloo")
    gpu = FullyShardedDataParallelPlugin(**accelerate_plugin.plugin_options(s, tiny_model(s)))
    gpu.set_auto_wrap_policy(tiny_model(s))
    model, _ = recipe.wrap_and_optimize(tiny_model(s), torch.device("cpu"), lambda m: None)
    accelerator = recipe.accelerator_of(model)
    wrapped = isinstance(model, FullyShardedDataParallel) if s.accelerate.fsdp_version == 1 else isinstance(model, FSDPModule)
    result = {"gpu": resolved(gpu), "cpu": resolved(accelerator.state.fsdp_plugin), "model": type(model).__name__,
              "fsdp": wrapped and accelerator.state.distributed_type == DistributedType.FSDP,
              "versions": records.versions("accelerate", "gloo")["peer"],
              # what transformers' from_pretrained reads to load on rank 0 only (is_fsdp_enabled)
              "rank0_loads": __import__("transformers").modeling_utils.is_fsdp_enabled()}
    if dist.get_rank() == 0:
        with open(out_file, "w") as f:
            json.dump(result, f, indent=1)
    dist.barrier()


def expected(s):
    """What the scenario asks of the plugin, in its resolved words."""
    v1 = s.accelerate.fsdp_version == 1
    want = {"activation_checkpointing": str(s.activation_checkpointing),
            "cpu_ram_efficient_loading": str(s.init == "meta")}
    if s.checkpoint.type != "none":  # else the plugin's default (FULL on version 1, SHARDED on 2)
        want["state_dict_type"] = f"StateDictType.{s.checkpoint.type.upper()}_STATE_DICT"
    if v1:
        want["use_orig_params"] = str(s.sharding.use_orig_params)
        want["reshard_after_forward"] = "ShardingStrategy." + ("FULL_SHARD" if s.sharding.reshard_after_forward else "SHARD_GRAD_OP")
        want["backward_prefetch"] = "BackwardPrefetch.BACKWARD_PRE" if s.sharding.backward_prefetch else "None"
    else:
        want["reshard_after_forward"] = str(s.sharding.reshard_after_forward)
    policy = {"transformer_block": "transformer_auto_wrap_policy", "size": "size_based_auto_wrap_policy",
              "peft": "_or_policy"}[s.sharding.wrap_policy]
    return want, policy


def free_port():
    """A port nobody listens on now (ctest runs other launches beside this one)."""
    import socket
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return str(sock.getsockname()[1])


def main(binary, source, work):
    sys.path.insert(0, os.path.join(source, "peers"))
    from torch_fsdp import scenario
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    env = dict(os.environ, PYTHONPATH=os.path.join(source, "peers"), OMP_NUM_THREADS="1")
    pins = dict(line.strip().split("==") for line in open(os.path.join(source, "requirements.txt"))
                if "==" in line and not line.startswith("#"))
    for name, overrides in CASES.items():
        yaml_file, out = os.path.join(work, f"{name}.yaml"), os.path.join(work, f"{name}.json")
        shown = subprocess.run([binary, "show", "--all", os.path.join(source, "scenarios", "peers_tiny.yaml"),
                                "engine=accelerate", "lora.enabled=true", *overrides],
                               check=True, capture_output=True, text=True).stdout
        with open(yaml_file, "w") as f:
            f.write(shown)
        subprocess.run([sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2", "--master_port", free_port(),
                        __file__, "--worker", yaml_file, out], check=True, env=env, capture_output=True, timeout=300)
        r, s = json.load(open(out)), scenario.load(yaml_file)
        if r["gpu"] != r["cpu"]:
            sys.exit(f"{name}: the plugin on CPU differs from a GPU configuration's:\n cpu {r['cpu']}\n gpu {r['gpu']}")
        if not r["fsdp"]:
            sys.exit(f"{name}: accelerate prepared a {r['model']}, not FSDP")
        want, policy = expected(s)
        for field, value in want.items():
            if r["cpu"][field] != value:
                sys.exit(f"{name}: plugin {field} is {r['cpu'][field]}, the scenario asks {value}")
        if r["rank0_loads"] != (s.init == "meta"):
            sys.exit(f"{name}: transformers' is_fsdp_enabled() is {r['rank0_loads']} with init={s.init}")
        if not r["cpu"]["auto_wrap_policy"].startswith(policy):
            sys.exit(f"{name}: auto_wrap_policy {r['cpu']['auto_wrap_policy']}, expected {policy}")
        for package in ("accelerate", "torch", "transformers", "peft"):
            if r["versions"][package].split("+")[0] != pins[package]:
                sys.exit(f"{name}: provenance says {package} {r['versions'][package]}, requirements.txt pins {pins[package]}")
        print(f"{name}: {r['model']}, {r['cpu']['auto_wrap_policy']}, equal to the GPU configuration's")
    print(f"peer_accelerate_plugin_check: {len(CASES)} plugins as on a GPU, provenance at the pins")


if __name__ == "__main__":
    if sys.argv[1] == "--worker":
        worker(*sys.argv[2:4])
    else:
        main(*sys.argv[1:4])
