"""Exit 1 unless two `shardbench run` directories have the same instances, colours, losses and
exact metrics (samples and per rank: bytes, counts, communication bytes).

    same_exact.py REFERENCE_DIR RUN_DIR
"""
import json
import os
import sys


def exact_view(run_dir):
    index = json.load(open(os.path.join(run_dir, "index.json")))
    view = {}
    for inst in index["instances"]:
        entry = {"colour": inst["colour"]}
        if inst["file"]:
            r = json.load(open(os.path.join(run_dir, inst["file"])))
            entry["loss"] = r["loss"]
            entry["exact"] = {m["name"]: (m["samples"], m["per_rank"]) for m in r["metrics"] if m["kind"] == "exact"}
        view[inst["name"]] = entry
    return view


if __name__ == "__main__":
    ref, run = exact_view(sys.argv[1]), exact_view(sys.argv[2])
    if ref == run:
        n = sum(len(e.get("exact", {})) for e in ref.values())
        print(f"{sys.argv[2]}: {len(ref)} instances, colours, losses and {n} exact metrics equal to {sys.argv[1]}")
        sys.exit(0)
    for name in sorted(set(ref) | set(run)):
        a, b = ref.get(name, {}), run.get(name, {})
        if a.get("colour") != b.get("colour"):
            print(f"{name}: colour {a.get('colour')} vs {b.get('colour')}")
        if a.get("loss") != b.get("loss"):
            print(f"{name}: losses {a.get('loss')} vs {b.get('loss')}")
        for m in sorted(set(a.get("exact", {})) | set(b.get("exact", {}))):
            if a.get("exact", {}).get(m) != b.get("exact", {}).get(m):
                print(f"{name}: {m} {a.get('exact', {}).get(m)} vs {b.get('exact', {}).get(m)}")
    sys.exit(1)
