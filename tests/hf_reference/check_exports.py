"""Our FULL and adapter checkpoints, read by the libraries users would read them with.

    python check_exports.py SHARDBENCH WORK_DIR

1. A full fine-tune of `tiny` on the flat engine at 2 ranks saves a FULL checkpoint; transformers'
   LlamaForCausalLM.from_pretrained loads it with no missing or unexpected keys, into exactly the
   saved tensors.
2. A LoRA run on that checkpoint as its base (flat engine, adapters in their own units, 2 ranks)
   exports its adapter; peft's PeftModel.from_pretrained loads it over the same base: every LoRA
   weight is the exported one, and the adapted model's logits differ from the base's (the
   adapter took effect).
Exits non-zero with a message on the first failure.
"""

import json
import os
import shutil
import subprocess
import sys

import torch
from peft import PeftModel
from safetensors.torch import load_file
from transformers import LlamaForCausalLM


def run(shardbench: str, out: str, *overrides: str) -> str:
    cmd = [shardbench, "run", "smoke", "--quiet", "--out", out, "engine=flat", "checkpoint.keep=true",
           "train.steps=3", "train.warmup_steps=1", *overrides]
    shutil.rmtree(out, ignore_errors=True)  # a run directory is never reused
    subprocess.run(cmd, check=True)
    checkpoint = os.path.join(out, "smoke", "rep0", "checkpoint")
    if not os.path.isfile(os.path.join(checkpoint, "manifest.json")):
        sys.exit(f"no checkpoint at {checkpoint}")
    return checkpoint


def main() -> None:
    shardbench, work = sys.argv[1], sys.argv[2]
    full = run(shardbench, os.path.join(work, "full"), "lora.enabled=false", "checkpoint.type=full")
    model, info = LlamaForCausalLM.from_pretrained(full, output_loading_info=True, dtype=torch.float32)
    for kind in ("missing_keys", "unexpected_keys", "mismatched_keys", "error_msgs"):
        if info[kind]:
            sys.exit(f"transformers loading {full}: {kind} {info[kind]}")
    saved = load_file(os.path.join(full, "model.safetensors"))
    state = model.state_dict()
    for name, tensor in saved.items():
        if not torch.equal(state[name], tensor):
            sys.exit(f"transformers loaded {name} differently from {full}/model.safetensors")
    print(f"transformers: {len(saved)} tensors of {full} loaded exactly")

    adapter = run(shardbench, os.path.join(work, "adapter"), f"model={full}", "sharding.wrap_policy=lora_separate",
                  "checkpoint.type=adapter")
    config = json.load(open(os.path.join(adapter, "adapter_config.json")))
    base = LlamaForCausalLM.from_pretrained(full, dtype=torch.float32)
    ids = torch.arange(24).reshape(2, 12) % base.config.vocab_size
    with torch.no_grad():
        base_logits = base(ids).logits
    peft_model = PeftModel.from_pretrained(base, adapter)
    exported = load_file(os.path.join(adapter, "adapter_model.safetensors"))
    lora_state = {k: v for k, v in peft_model.state_dict().items() if "lora_" in k}
    if len(lora_state) != len(exported):
        sys.exit(f"peft holds {len(lora_state)} LoRA tensors, the export has {len(exported)}")
    for name, tensor in exported.items():
        # peft's in-memory names carry the adapter name: ...lora_A.default.weight
        key = name.replace(".lora_A.weight", ".lora_A.default.weight").replace(".lora_B.weight", ".lora_B.default.weight")
        if key not in lora_state or not torch.equal(lora_state[key], tensor):
            sys.exit(f"peft did not load {name} from {adapter} exactly")
    with torch.no_grad():
        adapted = peft_model(ids).logits
    if torch.equal(adapted, base_logits):
        sys.exit("the adapter loaded by peft does not change the model's output")
    print(f"peft: r={config['r']} adapter with {len(exported)} tensors loaded exactly and in effect")


if __name__ == "__main__":
    main()
