"""SHARDED checkpoints across the boundary between PyTorch's FSDP and shardbench's engines, at
conversion time only (no Python runs in our engines' training):

  shardbench convert-checkpoint to-shardbench DCP_DIR OUT_DIR   torch.distributed.checkpoint -> ours
  shardbench convert-checkpoint to-dcp SHARDBENCH_DIR OUT_DIR   ours -> torch.distributed.checkpoint

(which runs `python -m torch_fsdp.dcp_convert ...` with peers/ on PYTHONPATH in the peer's Python.)

to-shardbench keeps the saver's sharding: each DCP chunk (a dim-0 block of a tensor, as FSDP1's
ShardedTensors and FSDP2's DTensors are) becomes a piece of our index (docs/architecture.md,
engine/checkpoint/piece_index.h) in the file of the rank that wrote it, so the result loads into
any of our engines at any world size like a checkpoint they saved. Names become ours (PEFT's
`base_model.model.`, `.base_layer`, `.default` dropped: meta_init.file_name), the optimizer state
`state.<name>.exp_avg / exp_avg_sq / step`, and the manifest's optimizer record is taken from
DCP's param_groups (group 0 `decay`, group 1 `no_decay`, as both sides build them; the
implementation from their foreach / fused flags).

to-dcp writes one whole tensor per key with dcp.save (DCP reshards on load, so the peers load it at
any world size), named as the peer's model names them: a checkpoint holding LoRA adapters is a
PEFT model's (`base_model.model.` prefix; a module with adapters keeps its weight under
`.base_layer` and its adapters under `.default`), with AdamW's param_groups (the saved lr and
weight decay, betas (0.9, 0.999), eps 1e-8 as engine/optim/adamw.h, our `no_decay` group = the
norms). Both directions verify what they read (our manifest's sizes and CRC-32s; DCP's metadata)
and write into OUT_DIR.converting, renamed to OUT_DIR when complete; OUT_DIR must not exist.

Exit codes as shardbench's: 0 done, 2 bad input (naming the directory, file or key).

DCP's .metadata is a pickle, which torch reads with pickle.load: a planted one runs code. Ours is
read by an unpickler that builds only checkpoint metadata (the classes a DCP save writes) and
refuses anything else as bad input.
"""
import json
import os
import pickle
import shutil
import sys
import warnings
import zlib

import torch

from . import meta_init

SAFETENSORS_DTYPES = {torch.float32: "F32", torch.bfloat16: "BF16", torch.float16: "F16", torch.float64: "F64",
                      torch.int64: "I64"}
IMPLS = ("for_loop", "foreach", "fused")
BETAS, EPS = (0.9, 0.999), 1e-8  # engine/optim/adamw.h's defaults, which the scenarios use


class BadInput(Exception):
    """Exit 2: the input is not what the command needs, named."""


def _rank_file(rank, world):
    return f"shard-{rank:05d}-of-{world:05d}.safetensors"  # engine/checkpoint/checkpoint_dir.cc


# ---- DCP -> shardbench ----

# What a DCP save pickles into .metadata (torch 2.4-2.11): its metadata classes, storage info,
# paths, sizes, dtypes and the layout helper.
_METADATA_GLOBALS = {("torch.distributed.checkpoint.filesystem", "_StorageInfo"), ("pathlib", "PosixPath"),
                     ("pathlib", "PurePosixPath"), ("torch", "Size"), ("torch.serialization", "_get_layout"),
                     ("collections", "OrderedDict"), ("builtins", "slice")}


class _MetadataUnpickler(pickle.Unpickler):
    def find_class(self, module, name):
        if module == "torch.distributed.checkpoint.metadata" or (module, name) in _METADATA_GLOBALS:
            return super().find_class(module, name)
        if module == "torch" and isinstance(getattr(torch, name, None), torch.dtype):
            return getattr(torch, name)
        raise BadInput(f"'{module}.{name}' in .metadata is not checkpoint metadata; not unpickled "
                       "(a .metadata that names it may run code)")


def _safe_reader(src):
    """A FileSystemReader whose read_metadata unpickles through _MetadataUnpickler."""
    import torch.distributed.checkpoint as dcp
    from torch.distributed.checkpoint.metadata import StorageMeta

    class SafeReader(dcp.FileSystemReader):
        def read_metadata(self, *args, **kwargs):
            with open(os.path.join(src, ".metadata"), "rb") as f:
                metadata = _MetadataUnpickler(f).load()
            if getattr(metadata, "storage_meta", None) is None:
                metadata.storage_meta = StorageMeta()
            metadata.storage_meta.load_id = self.load_id
            return metadata

    return SafeReader(src)


def _read_dcp(src):
    """(metadata, every key loaded whole) of a DCP directory, in this process alone."""
    import torch.distributed.checkpoint as dcp
    from torch.distributed.checkpoint.api import CheckpointException
    from torch.distributed.checkpoint.metadata import Metadata, TensorStorageMetadata
    if not os.path.isfile(os.path.join(src, ".metadata")):
        raise BadInput(f"{src}: no .metadata - not a torch.distributed.checkpoint directory")
    reader = _safe_reader(src)
    try:
        md = reader.read_metadata()
        if not isinstance(md, Metadata):
            raise BadInput(f"{src}/.metadata: holds a {type(md).__name__}, not DCP's Metadata")
        flat = {k: torch.empty(v.size, dtype=v.properties.dtype) if isinstance(v, TensorStorageMetadata) else None
                for k, v in md.state_dict_metadata.items()}
        dcp.load(flat, storage_reader=reader, no_dist=True)
    except BadInput:
        raise
    except CheckpointException as e:  # a BaseException, holding each rank's (exception, traceback)
        failure = next(iter(e.failures.values()), (e, None))
        cause = failure[0] if isinstance(failure, tuple) else failure
        raise BadInput(f"{src}: not a readable torch.distributed.checkpoint ({type(cause).__name__}: {cause})") from None
    except Exception as e:  # damaged .metadata or .distcp files: torch's own exceptions, named
        raise BadInput(f"{src}: not a readable torch.distributed.checkpoint ({type(e).__name__}: {e})") from None
    return md, flat


def _stored_chunks(md):
    """{key: [(file, chunk offsets)]}: where each chunk of each tensor was written."""
    out = {}
    for index, info in md.storage_data.items():
        out.setdefault(index.fqn, []).append((info.relative_path, index.offset))
    return out


def _chunks_by_file(md, stored, key, shape):
    """[(file, begin element, numel)] of the key's chunks: dim-0 blocks only."""
    chunks = {tuple(c.offsets): c for c in md.state_dict_metadata[key].chunks}
    row = 1
    for d in shape[1:]:
        row *= d
    out = []
    for file, offset in stored.get(key, []):
        chunk = chunks[tuple(offset)]
        if list(chunk.offsets[1:]) != [0] * (len(shape) - 1) or list(chunk.sizes[1:]) != list(shape[1:]):
            raise BadInput(f"'{key}': a chunk at {list(chunk.offsets)} of size {list(chunk.sizes)} is not a dim-0 block "
                           "of the tensor; shardbench's index holds element ranges of the row-major flattening")
        rows = chunk.sizes[0] if shape else 1
        out.append((file, chunk.offsets[0] * row if shape else 0, rows * row))
    return out


def _our_key(dcp_key):
    """DCP's flattened key -> (our key, what): model.<fqn> and optim.state.<fqn>.<what>."""
    if dcp_key.startswith("model."):
        return meta_init.file_name(dcp_key[len("model."):]), None
    if dcp_key.startswith("optim.state."):
        fqn, what = dcp_key[len("optim.state."):].rsplit(".", 1)
        return f"state.{meta_init.file_name(fqn)}.{what}", what
    return None, None


def _optimizer_record(flat, steps):
    groups, i = [], 0
    while f"optim.param_groups.{i}.lr" in flat:
        groups.append({"name": "decay" if i == 0 else "no_decay", "lr": float(flat[f"optim.param_groups.{i}.lr"]),
                       "weight_decay": float(flat[f"optim.param_groups.{i}.weight_decay"])})
        i += 1
    if not groups:
        return None
    impl = "fused" if flat.get("optim.param_groups.0.fused") else "foreach" if flat.get("optim.param_groups.0.foreach") \
        else "for_loop"
    return {"impl": impl, "steps_taken": int(max(steps, default=0)), "groups": groups}


def to_shardbench(src, out):
    from safetensors.torch import save_file
    md, flat = _read_dcp(src)
    files = sorted({info.relative_path for info in md.storage_data.values()})
    world = len(files)
    per_file = {f: {} for f in files}
    begins = {f: {} for f in files}  # engine/checkpoint/piece_index.h kPieceBeginsMetadata
    stored = _stored_chunks(md)
    index, steps = {}, []
    for key, value in flat.items():
        ours, what = _our_key(key)
        if ours is None or not torch.is_tensor(value):
            continue
        if what == "step":
            steps.append(value.item())
            value = value.long()
        entry = index.setdefault(ours, {"shape": list(value.shape), "dtype": SAFETENSORS_DTYPES[value.dtype], "pieces": []})
        whole = value.reshape(-1)
        for file, begin, numel in _chunks_by_file(md, stored, key, list(value.shape)):
            if numel == 0:
                continue
            name = _rank_file(files.index(file), world)
            per_file[file][ours] = whole[begin:begin + numel].clone()
            begins[file][ours] = begin
            entry["pieces"].append({"file": name, "begin": begin, "numel": numel})
    staging = _staging(out)
    for file, tensors in per_file.items():
        save_file(tensors, os.path.join(staging, _rank_file(files.index(file), world)),
                  metadata={"format": "pt", "shardbench.piece_begins": json.dumps(begins[file])})
    content = {"engine": f"converted from torch.distributed.checkpoint ({os.path.abspath(src)})", "tensors": index,
               "optimizer": _optimizer_record(flat, steps)}
    _commit(staging, out, "sharded", world, content)
    return len(index), world


# ---- shardbench -> DCP ----

def _read_ours(src):
    """(manifest, {key: whole tensor}) of a shardbench SHARDED checkpoint, verified first."""
    from safetensors import safe_open
    from safetensors.torch import load_file
    path = os.path.join(src, "manifest.json")
    if not os.path.isfile(path):
        raise BadInput(f"{src}: no manifest.json - not a shardbench checkpoint (or an interrupted save)")
    def no_constant(name):
        raise BadInput(f"{path}: {name} is not JSON")
    try:
        with open(path) as f:
            m = json.load(f, parse_constant=no_constant)
        if m.get("format") != "shardbench-checkpoint" or m.get("kind") != "sharded":
            raise BadInput(f"{path}: kind '{m.get('kind')}' of format '{m.get('format')}', expected a shardbench sharded checkpoint")
        for name, digest in m["files"].items():
            if os.path.basename(name) != name:
                raise BadInput(f"{path}: file '{name}' is not a file name in the checkpoint directory")
            with open(os.path.join(src, name), "rb") as f:
                data = f.read()
            if len(data) != digest["bytes"] or zlib.crc32(data) != digest["crc32"]:
                raise BadInput(f"{src}/{name}: size or CRC-32 differs from the manifest's (truncated or corrupt)")
        loaded, begins = {}, {}
        for name in m["files"]:
            try:
                loaded[name] = load_file(os.path.join(src, name))
                with safe_open(os.path.join(src, name), "pt") as f:
                    begins[name] = json.loads((f.metadata() or {}).get("shardbench.piece_begins", "null"))
            except Exception as e:  # safetensors' own error for a damaged header
                raise BadInput(f"{src}/{name}: not a safetensors file ({e})") from None
        return m, {key: _assembled(path, key, e, loaded, begins) for key, e in m["content"]["tensors"].items()}
    except (KeyError, TypeError, ValueError, AttributeError) as e:
        raise BadInput(f"{path}: malformed ({type(e).__name__}: {e})") from None


def _assembled(path, key, e, loaded, begins):
    """Tensor `key` whole from its pieces, each checked against the index as the C++ reader does
    (engine/checkpoint/piece_index.cc): a known dtype, a shape of sizes >= 0, pieces in listed files
    that cover it without a gap."""
    where = f"{path}: tensor '{key}'"
    shape = e["shape"]
    if not isinstance(shape, list) or not all(isinstance(d, int) and d >= 0 for d in shape):
        raise BadInput(f"{where}: shape {shape} is not a list of sizes >= 0")
    if e["dtype"] not in SAFETENSORS_DTYPES.values():
        raise BadInput(f"{where}: dtype '{e['dtype']}' is not one of {sorted(SAFETENSORS_DTYPES.values())}")
    numel = 1
    for d in shape:
        numel *= d
    t, covered = None, 0
    for p in sorted(e["pieces"], key=lambda p: p["begin"]):
        begin, count = p["begin"], p["numel"]
        if p["file"] not in loaded or key not in loaded[p["file"]]:
            raise BadInput(f"{where}: piece in '{p['file']}', which is not a listed file holding it")
        # Pieces may overlap (each rank keeps a replicated scalar such as `step`), never leave a gap.
        if begin > covered or begin < 0 or count < 0 or begin + count > numel:
            raise BadInput(f"{where}: piece [{begin}, {begin + count}) does not continue [0, {covered}) within {numel}")
        recorded = (begins.get(p["file"]) or {}).get(key, begin)  # where the file says its piece begins
        if recorded != begin:
            raise BadInput(f"{where}: '{p['file']}' holds it from element {recorded}, the index reads it from {begin}")
        piece = loaded[p["file"]][key]
        if piece.numel() != count or SAFETENSORS_DTYPES.get(piece.dtype) != e["dtype"]:
            raise BadInput(f"{where}: '{p['file']}' holds {piece.numel()} {piece.dtype} elements, the index says {count} {e['dtype']}")
        t = torch.empty(numel, dtype=piece.dtype) if t is None else t
        t[begin:begin + count] = piece.reshape(-1)
        covered = max(covered, begin + count)
    if covered != numel:
        raise BadInput(f"{where}: pieces cover [0, {covered}) of {numel} elements")
    if t is None:  # no elements
        t = torch.empty(0, dtype={code: dtype for dtype, code in SAFETENSORS_DTYPES.items()}[e["dtype"]])
    return t.reshape(shape)


def _param_groups(record, trained):
    """AdamW's param_groups as torch.optim saves them, members by name (norms: no_decay)."""
    groups = record["groups"]
    members = [[n for n in trained if len(groups) < 2 or "norm" not in n], [n for n in trained if "norm" in n]]
    return [{"lr": g["lr"], "betas": BETAS, "eps": EPS, "weight_decay": g["weight_decay"], "amsgrad": False,
             "maximize": False, "foreach": record["impl"] == "foreach", "capturable": False, "differentiable": False,
             "fused": True if record["impl"] == "fused" else None, "decoupled_weight_decay": True,
             "params": members[i]} for i, g in enumerate(groups)]


def to_dcp(src, out):
    import torch.distributed.checkpoint as dcp
    m, whole = _read_ours(src)
    params = [k for k in whole if not k.startswith("state.")]
    names = meta_init.model_keys_of(params)
    state = {}
    for k in params:
        s = {what: whole[f"state.{k}.{what}"] for what in ("exp_avg", "exp_avg_sq", "step") if f"state.{k}.{what}" in whole}
        if s:
            s["step"] = s["step"].reshape(()).float()  # torch.optim.AdamW keeps step as a float tensor
            state[names[k]] = s
    optim = {"state": state, "param_groups": _param_groups(m["content"]["optimizer"], list(state))} \
        if m["content"].get("optimizer") else None
    sd = {"model": {names[k]: whole[k] for k in params}}
    if optim:
        sd["optim"] = optim
    staging = _staging(out)
    dcp.save(sd, checkpoint_id=staging, no_dist=True)
    os.rename(staging, out)
    return len(params), 1


# ---- output directory ----

def _staging(out):
    if os.path.exists(out):
        raise BadInput(f"{out}: exists; the converted checkpoint goes to a new directory (nothing is overwritten)")
    staging = out + ".converting"
    shutil.rmtree(staging, ignore_errors=True)  # a conversion that was killed
    os.makedirs(staging)
    return staging


def _commit(staging, out, kind, world, content):
    """Our manifest (every file's size and CRC-32, as engine/checkpoint/checkpoint_dir.cc writes
    it) last, then the directory into place."""
    files = {}
    for name in sorted(os.listdir(staging)):
        with open(os.path.join(staging, name), "rb") as f:
            data = f.read()
        files[name] = {"bytes": len(data), "crc32": zlib.crc32(data), "rank": int(name.split("-")[1])}
    manifest = {"format": "shardbench-checkpoint", "format_version": 1, "kind": kind, "world_size": world,
                "files": files, "content": content}
    with open(os.path.join(staging, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1)
    os.rename(staging, out)


def main(argv):
    usage = "usage: shardbench convert-checkpoint to-shardbench DCP_DIR OUT_DIR | to-dcp SHARDBENCH_DIR OUT_DIR"
    if len(argv) != 3 or argv[0] not in ("to-shardbench", "to-dcp"):
        print(usage, file=sys.stderr)
        return 2
    direction, src, out = argv
    # One process reads or writes the whole checkpoint, as intended: DCP's "assuming the intent is
    # to load in a single process" is no news here.
    warnings.filterwarnings("ignore", message="torch.distributed is disabled")
    try:
        keys, world = (to_shardbench if direction == "to-shardbench" else to_dcp)(src, out)
    except BadInput as e:
        print(f"dcp_convert: {e}", file=sys.stderr)
        return 2
    except FileNotFoundError as e:
        print(f"dcp_convert: {e.filename}: no such file or directory", file=sys.stderr)
        return 2
    print(f"dcp_convert: {src} -> {out}: {keys} tensors, {world} file(s) of shards")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
