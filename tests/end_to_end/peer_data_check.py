#!/usr/bin/env python3
"""Token batches rebuilt independently (peers/torch_fsdp/data.py, from the documented order) equal
the ones shardbench trains on (`shardbench batches`): synthetic data and token files of both
widths, several ranks and accumulation steps. A changed order on either side fails here.

    tests/end_to_end/peer_data_check.py SHARDBENCH_BINARY SOURCE_DIR WORK_DIR
"""
import json
import os
import random
import subprocess
import sys

binary, source, work = sys.argv[1:4]
sys.path.insert(0, os.path.join(source, "peers"))  # the peer's package, torch_fsdp
from torch_fsdp import data, scenario  # noqa: E402

os.makedirs(work, exist_ok=True)
rng = random.Random(7)
files = {}
for dtype, width in (("uint16", 2), ("uint32", 4)):
    path = os.path.join(work, f"tokens_{dtype}.bin")
    with open(path, "wb") as f:  # ids up to the tiny model's vocab, little-endian
        f.write(b"".join(rng.randrange(256).to_bytes(width, "little") for _ in range(5000)))
    files[dtype] = path

cases = [["data.source=synthetic"]] + [
    ["data.source=tokens", f"data.path={p}", f"data.token_dtype={d}"] for d, p in files.items()]
smoke = os.path.join(source, "scenarios", "smoke.yaml")
checked = 0
for overrides in cases:
    common = ["world_size=3", "train.batch_size=2", "train.grad_accumulation=2", "train.seq_len=16", "train.seed=99"]
    out = subprocess.run([binary, "batches", smoke, "--steps", "3"] + common + overrides,
                         check=True, capture_output=True, text=True).stdout
    got = json.loads(out)
    section = scenario.Data(source="synthetic", path="", token_dtype="uint16")
    if overrides[0] == "data.source=tokens":
        section = scenario.Data(source="tokens", path=overrides[1].split("=", 1)[1], token_dtype=overrides[2].split("=", 1)[1])
    source_data = data.scenario_data(section, 99, 16, 256)
    for step in got["steps"]:
        for rank, micro in enumerate(step["ranks"]):
            expected = data.micro_batches(source_data, step["step"], rank, 2, 2)
            for m, (ids, labels) in enumerate(expected):
                if micro[m]["input_ids"] != ids or micro[m]["labels"] != labels:
                    sys.exit(f"{overrides}: step {step['step']} rank {rank} micro-batch {m} differs:\n"
                             f"  shardbench {micro[m]['input_ids'][0][:8]}...\n  rebuilt    {ids[0][:8]}...")
                checked += 1
# Every token of the token-file windows is where the documented offset says.
print(f"peer_data_check: {checked} micro-batches identical across {len(cases)} data sources")
