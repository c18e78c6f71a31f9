"""checks.frozen_dtype on the peer, as harness/frozen_dtype_check.cc judges our engines: every
frozen parameter is held in the dtype it was loaded in. A stack that upcasts the whole model for
mixed precision (accelerate's FSDP2 before #3848, accelerate#3844) doubles a bf16 base model's
frozen bytes without an error; here `upcast: all` reproduces it on PyTorch's FSDP.

Loaded in: the scenario's stored dtype (model_dtype, or the checkpoint's own for auto), which
both load paths give every weight before trainable ones are upcast (wrap.load_model,
meta_init.build). Held: what FSDP keeps between steps - FSDP1's flat parameters (one dtype per
unit; `_fqns`, `_numels`, and with use_orig_params `_params` for each original's requires_grad),
FSDP2's sharded DTensors. Bytes are whole-parameter bytes, the same figure on every rank."""

from . import meta_init
from . import wrap
from .memory import DTYPE_NAMES


def _held_frozen(model):
    """{name: (dtype held, numel)} of every frozen parameter as FSDP holds it now."""
    from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
    from torch.distributed.fsdp._common_utils import clean_tensor_name
    out = {}
    if isinstance(model, FSDP):
        for m in FSDP.fsdp_modules(model):
            flat = m._handle.flat_param if m._handle is not None else None
            if flat is None:
                continue
            originals = getattr(flat, "_params", None) or [None] * len(flat._fqns)
            for fqn, numel, p in zip(flat._fqns, flat._numels, originals):
                if not (p.requires_grad if p is not None else flat.requires_grad):
                    out[meta_init.file_name(clean_tensor_name(fqn))] = (flat.dtype, numel)
        return out
    for name, p in model.named_parameters():
        if not p.requires_grad:
            out[meta_init.file_name(clean_tensor_name(name))] = (p.dtype, p.numel())
    return out


def _name(dtype):
    return DTYPE_NAMES.get(dtype, str(dtype))


def check(scenario, model, model_dir):
    """The frozen_dtype check of the wrapped `model` after training; `model_dir` holds the
    config.json whose dtype model_dtype=auto loads."""
    config = None
    if scenario.model_dtype == "auto":
        from transformers import AutoConfig
        config = AutoConfig.from_pretrained(model_dir)
    loaded = wrap.stored_dtype(scenario, config)
    frozen = _held_frozen(model)
    wider = [(name, dtype) for name, (dtype, _) in frozen.items() if dtype != loaded]
    loaded_bytes = sum(n * loaded.itemsize for _, n in frozen.values())
    held_bytes = sum(n * dtype.itemsize for dtype, n in frozen.values())
    example = f" (e.g. '{wider[0][0]}' is {_name(wider[0][1])}, loaded as {_name(loaded)})" if wider else ""
    return {"name": "frozen_dtype", "passed": not wider,
            "detail": f"{len(frozen) - len(wider)} of {len(frozen)} frozen params held as loaded; frozen bytes "
                      f"{held_bytes} held vs {loaded_bytes} as loaded{example}"}
