"""`shardbench convert-checkpoint` given damaged or hostile checkpoints (W3 7/7's hostile pass):
every one is exit 2 naming what is wrong, never a Python traceback, and a .metadata pickle that
would run code is refused unread (before: it ran).

    convert_refusals.py SHARDBENCH SOURCE_DIR OUT_DIR
"""
import contextlib
import glob
import io
import json
import os
import pickle
import shutil
import subprocess
import sys
import traceback
import zlib

binary, source, work = sys.argv[1:4]
sys.path.insert(0, os.path.join(source, "peers"))
from torch_fsdp import dcp_convert  # noqa: E402
shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)
planted = os.path.join(work, "pwned")


def fail(msg):
    sys.exit(f"convert_refusals: {msg}")


def convert(direction, src, name):
    out = os.path.join(work, "out", name)
    p = subprocess.run([binary, "convert-checkpoint", direction, src, out], capture_output=True, text=True)
    return p.returncode, p.stdout + p.stderr


def convert_here(direction, src, name):
    """The converter's main() in this process (what `convert-checkpoint` runs, less a Python start
    and torch import a case): its exit code and what it printed; an escaping exception is a traceback."""
    out, text = os.path.join(work, "out", name), io.StringIO()
    with contextlib.redirect_stdout(text), contextlib.redirect_stderr(text):
        try:
            code = dcp_convert.main([direction, src, out])
        except BaseException:  # noqa: B036 - what the CLI would have shown
            code, _ = 3, text.write(traceback.format_exc())
    return code, text.getvalue()


def refused(direction, src, name, says, through_cli=False):
    code, text = (convert if through_cli else convert_here)(direction, src, name)
    if code != 2 or "Traceback" in text or says not in text:
        fail(f"{name}: exit {code}, expected 2 saying {says!r} without a traceback:\n{text[-2000:]}")
    print(f"{name}: refused ({text.strip().splitlines()[-1][:110]})")


# A SHARDED checkpoint of ours (2 ranks), and it as DCP.
run = os.path.join(work, "run")
subprocess.run([binary, "run", os.path.join(source, "scenarios", "smoke.yaml"), "--quiet", "--out", run,
                "train.steps=2", "train.warmup_steps=0", "checkpoint.type=sharded", "checkpoint.keep=true"], check=True)
ours = glob.glob(os.path.join(run, "*", "rep0", "checkpoint"))[0]
dcp = os.path.join(work, "out", "dcp")
code, text = convert("to-dcp", ours, "dcp")
if code != 0:
    fail(f"to-dcp of a good checkpoint: exit {code}\n{text[-2000:]}")
code, text = convert("to-shardbench", dcp, "back")  # the restricted unpickler reads what DCP writes
if code != 0:
    fail(f"to-shardbench of a good DCP checkpoint: exit {code}\n{text[-2000:]}")


def damaged_dcp(name, damage):
    d = os.path.join(work, name)
    shutil.copytree(dcp, d)
    damage(d)
    return d


class Planted:
    def __reduce__(self):
        return (os.system, (f"touch {planted}",))


def write(path, data):
    with open(path, "wb") as f:
        f.write(data)


distcp = lambda d: sorted(glob.glob(os.path.join(d, "*.distcp")))[0]  # noqa: E731
refused("to-shardbench", damaged_dcp("evil", lambda d: write(os.path.join(d, ".metadata"), pickle.dumps(Planted()))),
        "dcp-evil-pickle", "posix.system' in .metadata is not checkpoint metadata", through_cli=True)
if os.path.exists(planted):
    fail("the planted .metadata ran its code")
refused("to-shardbench", damaged_dcp("garbage", lambda d: write(os.path.join(d, ".metadata"), b"garbage")),
        "dcp-metadata-garbage", "not a readable torch.distributed.checkpoint")
refused("to-shardbench", damaged_dcp("empty", lambda d: write(os.path.join(d, ".metadata"), b"")),
        "dcp-metadata-empty", "not a readable torch.distributed.checkpoint")
refused("to-shardbench", damaged_dcp("truncated", lambda d: os.truncate(distcp(d), 1000)),
        "dcp-distcp-truncated", "not a readable torch.distributed.checkpoint")
refused("to-shardbench", damaged_dcp("missing", lambda d: os.remove(distcp(d))),
        "dcp-distcp-missing", "not a readable torch.distributed.checkpoint")


def edited(name, edit, recrc=None):
    """A copy of ours with its manifest edited (and a shard rewritten, its CRC-32 recomputed)."""
    d = os.path.join(work, name)
    shutil.copytree(ours, d)
    path = os.path.join(d, "manifest.json")
    m = json.load(open(path))
    edit(m, d)
    for file in m["files"]:
        if os.path.basename(file) == file and os.path.exists(os.path.join(d, file)):
            data = open(os.path.join(d, file), "rb").read()
            m["files"][file].update(bytes=len(data), crc32=zlib.crc32(data))
    text = json.dumps(m)
    open(path, "w").write(recrc(text) if recrc else text)
    return d


def tensor(m, key="lm_head.weight"):
    return m["content"]["tensors"][key]


refused("to-dcp", edited("extra", lambda m, d: m["content"]["tensors"].update(
    {"model.layers.9.foo.weight": dict(tensor(m))})), "ours-extra-tensor", "'model.layers.9.foo.weight'", through_cli=True)
refused("to-dcp", edited("escape", lambda m, d: tensor(m)["pieces"][0].update(file="../../../smoke.json")),
        "ours-piece-escapes", "not a listed file holding it")
refused("to-dcp", edited("negative", lambda m, d: tensor(m).update(shape=[-256, -64])), "ours-negative-shape",
        "is not a list of sizes >= 0")
refused("to-dcp", edited("dtype", lambda m, d: tensor(m).update(dtype="F99")), "ours-dtype-unknown", "dtype 'F99'")
refused("to-dcp", edited("huge", lambda m, d: tensor(m)["pieces"][0].update(numel=2 ** 62)), "ours-piece-huge",
        "does not continue")
refused("to-dcp", edited("nan", lambda m, d: None, recrc=lambda t: t.replace('"world_size": 2', '"world_size": NaN')),
        "ours-manifest-nan", "NaN is not JSON")


def swap_piece_file(m, d):
    """lm_head's second piece read from the first rank's file, which holds a piece of the same size."""
    pieces = tensor(m)["pieces"]
    pieces[1]["file"] = pieces[0]["file"]


refused("to-dcp", edited("swapped", swap_piece_file), "ours-piece-from-another-rank", "the index reads it from")


def truncate_shard(m, d):
    os.truncate(os.path.join(d, sorted(m["files"])[0]), 40)


refused("to-dcp", edited("shard-header", truncate_shard), "ours-shard-damaged", "not a safetensors file")
print("convert-checkpoint: every damaged or hostile input refused with exit 2, no traceback, nothing unpickled")
