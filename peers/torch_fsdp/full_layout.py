"""shardbench's FULL checkpoint layout, written and read from full state dicts by name: a Hugging
Face directory (config.json + model.safetensors, the parameters by their transformers names,
LoRA's as `<module>.lora_A.weight`) plus optimizer.safetensors (`state.<name>.exp_avg`,
`.exp_avg_sq`, `.step`) and param_groups.json (the optimizer's groups as PyTorch gives them).
Both peers' FULL checkpoints go through here, whichever PyTorch API gathered the state."""
import json
import os
import shutil

import torch

from . import meta_init

FILES = ("config.json", "model.safetensors", "optimizer.safetensors", "param_groups.json")


def write(directory, model_dir, msd, osd):
    """Rank 0: `msd` (full model state dict) and `osd` (full optimizer state dict, keyed by the
    same names) into `directory`. Returns the paths written."""
    from safetensors.torch import save_file
    os.makedirs(directory)
    shutil.copy(os.path.join(model_dir, "config.json"), os.path.join(directory, "config.json"))
    save_file({meta_init.file_name(k): v.detach().cpu().contiguous() for k, v in msd.items()},
              os.path.join(directory, "model.safetensors"), metadata={"format": "pt"})
    state = {}
    for name, s in osd["state"].items():
        for what, v in s.items():
            t = v if torch.is_tensor(v) else torch.tensor(v)
            state[f"state.{meta_init.file_name(name)}.{what}"] = (t.long() if what == "step" else t).cpu().contiguous()
    save_file(state, os.path.join(directory, "optimizer.safetensors"), metadata={"format": "pt"})
    with open(os.path.join(directory, "param_groups.json"), "w") as f:
        json.dump(osd["param_groups"], f)
    return [os.path.join(directory, f) for f in FILES]


def state_dict_keys(model):
    """The wrapped model's state-dict keys without FSDP's prefixes, the names `read` is asked
    for (a sharded state dict underneath: nothing is gathered for the names)."""
    from torch.distributed.checkpoint.state_dict import get_model_state_dict
    return list(get_model_state_dict(model).keys())


def read(directory, keys):
    """The full model and optimizer state dicts for the model state-dict `keys`, from `directory`."""
    from safetensors.torch import load_file
    names = {k: meta_init.file_name(k) for k in keys}
    params = load_file(os.path.join(directory, "model.safetensors"))
    msd = {k: params[f] for k, f in names.items()}
    state = load_file(os.path.join(directory, "optimizer.safetensors"))
    with open(os.path.join(directory, "param_groups.json")) as f:
        groups = json.load(f)
    osd = {"state": {}, "param_groups": groups}
    for k, f in names.items():
        s = {what: state[f"state.{f}.{what}"] for what in ("step", "exp_avg", "exp_avg_sq") if f"state.{f}.{what}" in state}
        if s:
            s["step"] = s["step"].float()  # AdamW keeps step as a float tensor
            osd["state"][k] = s
    return msd, osd
