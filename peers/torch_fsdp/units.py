"""The units PyTorch's FSDP formed: each FullyShardedDataParallel instance (FSDP1) or fully_shard
module (FSDP2) with the parameters it holds, named as shardbench names them (transformers names,
LoRA's as `<module>.lora_A.weight`: meta_init.file_name), so that a test can set them beside the
units our engines plan (`shardbench plan --json`, "units"). Written to records.json as `units`.

FSDP1's come from each handle's flat parameter (`_fqns`, its original parameters' names relative
to the wrapped module), FSDP2's from each module's parameter group; both are private, and a torch
version without them records no units (None), never a wrong list."""
from . import meta_init


def _clean(name):
    """A name without FSDP's and activation checkpointing's wrapper prefixes."""
    from torch.distributed.fsdp._common_utils import clean_tensor_name
    return clean_tensor_name(name)


def _join(prefix, name):
    return f"{prefix}.{name}" if prefix else name


def units(model):
    """[{"unit": module path ("" the root), "params": [names]}], in module order; None when this
    torch version does not expose them."""
    from torch.distributed.fsdp import FSDPModule
    from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
    try:
        names_by_id = {id(p): n for n, p in model.named_parameters(remove_duplicate=False)}
        out = []
        for path, m in model.named_modules():
            if isinstance(m, FSDP):
                prefix = _clean(path)
                params = [_join(prefix, _clean(f)) for f in (m._handle.flat_param._fqns if m._handle else [])]
            elif isinstance(m, FSDPModule):
                group = m._get_fsdp_state()._fsdp_param_group
                params = [_clean(names_by_id[id(fp.sharded_param)]) for fp in (group.fsdp_params if group else [])]
            else:
                continue
            out.append({"unit": meta_init.file_name(_clean(path)).removesuffix(".default"),
                        "params": [meta_init.file_name(n) for n in params]})
        return out
    except (AttributeError, KeyError):  # FSDP's internals named otherwise in this torch version
        return None
