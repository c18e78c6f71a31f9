#!/usr/bin/env python3
"""The requirement lines of a peer environment (harness/peer_env.h): the packages SPEC names at
its versions, requirements.txt's pins for the other packages the peer computes with, and
PyYAML (the peer reads its scenario with it). `--name` prints the environment's directory name
instead (.venv-peer-<name>, as harness/peer_env.cc's PeerEnvDir forms it).

    scripts/peer_env_requirements.py torch=2.10.0,peft=0.17.1 [--name]
"""
import os
import re
import sys

PACKAGES = ("torch", "transformers", "peft", "accelerate")  # harness/scenario/peer_env_spec.cc's order


def parse(spec):
    out = {}
    for part in filter(None, (p.strip() for p in spec.split(","))):
        m = re.fullmatch(r"([a-z]+)\s*=\s*([0-9][0-9A-Za-z.]*)", part)
        if not m or m.group(1) not in PACKAGES or m.group(1) in out:
            sys.exit(f"peer-env: '{part}' in '{spec}' is not PACKAGE=VERSION of {', '.join(PACKAGES)} (each once)")
        out[m.group(1)] = m.group(2)
    return out


def pins(root):
    out = {}
    with open(os.path.join(root, "requirements.txt")) as f:
        for line in f:
            line = line.split("#")[0].strip()
            if "==" in line:
                name, version = (x.strip() for x in line.split("=="))
                out[name] = version
    return out


def main():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    asked = parse(sys.argv[1])
    if "--name" in sys.argv[2:]:
        print("_".join(f"{p}-{asked[p]}" for p in PACKAGES if p in asked))
        return
    pinned = pins(root)
    for p in PACKAGES:
        print(f"{p}=={asked.get(p, pinned[p])}")
    print("pyyaml")


if __name__ == "__main__":
    main()
