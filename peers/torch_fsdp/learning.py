"""The `learning` check as shardbench's runner makes it (harness/run_checks.cc): the loss of step
0's batch dropped once trained (that batch again, forward only, as Trainer::evaluate), every
trainable parameter changed and no frozen one did. Each rank fingerprints the part
of every parameter it holds (a DTensor's local shard, an FSDP1 view or flat parameter); a
parameter changed when it changed on any rank that holds some of it."""
import math

import torch
import torch.distributed as dist

from .loss import micro_batch_loss


def _local(p):
    return p.to_local() if hasattr(p, "to_local") else p.data


def fingerprints(model):
    out = []
    with torch.no_grad():
        for name, p in model.named_parameters():
            t = _local(p).detach().double()
            out.append((name, p.requires_grad, t.numel(), t.sum().item(), t.abs().sum().item()))
    return out


def same_batch_loss(model, batches, device, world):
    """The global loss of `batches` (this rank's micro-batches of one step) with the weights as
    they are: forward only under no_grad, computed as the training step computes its loss."""
    with torch.no_grad():
        total = None
        for ids, labels in batches:
            loss = micro_batch_loss(model, ids, labels, device)
            total = loss if total is None else total + loss
        loss = total / len(batches)
        if world > 1:
            dist.all_reduce(loss)
            loss /= world
    # No backward comes: FSDP2 keeps the root (and groups without reshard_after_forward)
    # unsharded, its parameters then the full tensors; reshard as the next step's backward would.
    for m in model.modules():
        if any(c.__name__ == "FSDPModule" for c in type(m).__mro__):
            m.reshard()
    return loss.item()


def _same(fingerprint_before, fingerprint_after):
    """Equal, NaN equal to NaN: a frozen weight holding a NaN before and after did not change."""
    return all(x == y or (math.isnan(x) and math.isnan(y)) for x, y in zip(fingerprint_before, fingerprint_after))


def check(before, after, first_loss, first_batch_after, world):
    """Fingerprints `before` training and `after` it (taken before the same-batch loss);
    `first_loss`: step 0's; `first_batch_after`: step 0's batch once trained (NaN: stopped)."""
    names = [b[0] for b in before]
    if [a[0] for a in after] != names:
        return {"name": "learning", "passed": False, "detail": "the model's parameters changed identity during training"}
    # Per parameter: held on this rank, changed on this rank; summed over ranks.
    counts = torch.tensor([[b[2] > 0, b[2] > 0 and not _same(b[3:5], a[3:5])] for b, a in zip(before, after)],
                          dtype=torch.float64)
    if world > 1:
        dist.all_reduce(counts)
    unchanged_trainable = [n for (n, trainable, *_), (held, changed) in zip(before, counts.tolist())
                           if trainable and held > 0 and changed == 0]
    changed_frozen = [n for (n, trainable, *_), (held, changed) in zip(before, counts.tolist()) if not trainable and changed > 0]
    dropped = first_batch_after < first_loss  # False for NaN
    example = (f" (e.g. trainable '{unchanged_trainable[0]}' did not change)" if unchanged_trainable else
               f" (e.g. frozen '{changed_frozen[0]}' changed)" if changed_frozen else "")
    detail = (f"step 0's batch: loss {first_loss:.6f} -> {first_batch_after:.6f} trained "
              f"({'dropped' if dropped else 'did not drop'}); trainable unchanged: "
              f"{len(unchanged_trainable)}, frozen changed: {len(changed_frozen)}{example}")
    return {"name": "learning", "passed": dropped and not unchanged_trainable and not changed_frozen, "detail": detail}
