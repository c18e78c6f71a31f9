"""AdamW as shardbench's engines build and schedule it: the parameter groups
(engine/optim/param_groups.cc), the implementation asked (optimizer.impl) and the learning-rate
schedule (engine/optim/lr_schedule.cc), step for step."""
import math

import torch


def param_groups(model, train, flat_params):
    """Norms (by name) without weight decay, unless FSDP1 flattened them away (use_orig_params=false
    exposes one flat parameter per unit)."""
    decay, no_decay = [], []
    for name, p in model.named_parameters():
        if not p.requires_grad:
            continue
        (no_decay if train.no_decay_on_norms and not flat_params and "norm" in name else decay).append(p)
    groups = [{"params": decay, "weight_decay": train.weight_decay}]
    if no_decay:
        groups.append({"params": no_decay, "weight_decay": 0.0})
    return groups


def adamw(scenario, groups):
    """torch.optim.AdamW(foreach=False) / (foreach=True) / (fused=True), engine/optim/adamw.h's betas and eps."""
    kwargs = {"lr": scenario.train.lr, "betas": (0.9, 0.999), "eps": 1e-8}
    if scenario.optimizer.impl == "fused":
        kwargs["fused"] = True
    else:
        kwargs["foreach"] = scenario.optimizer.impl == "foreach"
    return torch.optim.AdamW(groups, **kwargs)


def lr_factor(train, step):
    """The schedule's factor on the base learning rate at `step` (warmup, then constant or cosine)."""
    warmup, total = train.lr_warmup_steps, train.total_steps
    if warmup > 0 and step < warmup:
        return (step + 1) / warmup
    if train.lr_schedule != "cosine":
        return 1.0
    decay = max(1, total - warmup)
    progress = min(1.0, (step - warmup) / decay)
    return train.min_lr_ratio + (1 - train.min_lr_ratio) * 0.5 * (1 + math.cos(math.pi * progress))
