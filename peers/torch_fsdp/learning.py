"""The `learning` check as shardbench's runner makes it (harness/scenario_runner.cc): the loss
dropped, every trainable parameter changed and no frozen one did. Each rank fingerprints the part
of every parameter it holds (a DTensor's local shard, an FSDP1 view or flat parameter); a
parameter changed when it changed on any rank that holds some of it."""
import torch
import torch.distributed as dist


def _local(p):
    return p.to_local() if hasattr(p, "to_local") else p.data


def fingerprints(model):
    out = []
    with torch.no_grad():
        for name, p in model.named_parameters():
            t = _local(p).detach().double()
            out.append((name, p.requires_grad, t.numel(), t.sum().item(), t.abs().sum().item()))
    return out


def check(model, before, losses, world):
    after = fingerprints(model)
    names = [b[0] for b in before]
    if [a[0] for a in after] != names:
        return {"name": "learning", "passed": False, "detail": "the model's parameters changed identity during training"}
    # Per parameter: held on this rank, changed on this rank; summed over ranks.
    counts = torch.tensor([[b[2] > 0, b[2] > 0 and (b[3], b[4]) != (a[3], a[4])] for b, a in zip(before, after)],
                          dtype=torch.float64)
    if world > 1:
        dist.all_reduce(counts)
    unchanged_trainable = [n for (n, trainable, *_), (held, changed) in zip(before, counts.tolist())
                           if trainable and held > 0 and changed == 0]
    changed_frozen = [n for (n, trainable, *_), (held, changed) in zip(before, counts.tolist()) if not trainable and changed > 0]
    dropped = losses[-1] < losses[0]
    example = (f" (e.g. trainable '{unchanged_trainable[0]}' did not change)" if unchanged_trainable else
               f" (e.g. frozen '{changed_frozen[0]}' changed)" if changed_frozen else "")
    detail = (f"loss {losses[0]:.6f} -> {losses[-1]:.6f} ({'dropped' if dropped else 'did not drop'}); trainable unchanged: "
              f"{len(unchanged_trainable)}, frozen changed: {len(changed_frozen)}{example}")
    return {"name": "learning", "passed": dropped and not unchanged_trainable and not changed_frozen, "detail": detail}
