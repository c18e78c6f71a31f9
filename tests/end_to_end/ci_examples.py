"""The CI examples users copy (ci/github-nightly.yml, ci/gitlab-nightly.yml, ci/github-weekly-matrix.yml) against what they
call: each is valid YAML, every script it runs exists in the repository, every flag it passes to
ci/nightly.sh is one nightly.sh parses, and the JUnit file it publishes is the one nightly.sh
writes. They cannot run here (no GitHub or GitLab); this keeps them from rotting.

    ci_examples.py SOURCE_DIR
"""
import os
import re
import sys

import yaml

root = sys.argv[1]
nightly = open(os.path.join(root, "ci", "nightly.sh")).read()
nightly_flags = set(re.findall(r"^\s+(--[a-z-]+)\)", nightly, re.M))
assert {"--history", "--reports", "--suite"} <= nightly_flags, nightly_flags
assert '--junit "$reports/junit.xml"' in nightly, "nightly.sh no longer writes reports/junit.xml"


def commands(node):
    """Every shell line of a workflow or job, wherever it sits (run:, script:, before_script:...)."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key in ("run", "script", "before_script", "after_script"):
                yield from (value if isinstance(value, list) else [value])
            else:
                yield from commands(value)
    elif isinstance(node, list):
        for item in node:
            yield from commands(item)


def script_problems(example, text, script, flags):
    """The scripts `text` (an example's shell lines) runs exist, and each flag it passes to
    `script` is one the script parses."""
    out = []
    for called in set(re.findall(r"\b((?:ci|scripts)/[\w.-]+\.sh)\b", text)):
        if not os.path.isfile(os.path.join(root, called)):
            out.append(f"{example}: runs {called}, which does not exist")
    for call in re.findall(re.escape(script) + r"([^\n]*)", text):
        for flag in re.findall(r"(--[a-z-]+)", call):
            if flag not in flags:
                out.append(f"{example}: passes {flag} to {script}, which does not parse it")
    return out


def example_text(example):
    return "\n".join(str(c) for c in commands(yaml.safe_load(open(os.path.join(root, "ci", example)))))


problems = []
for example in ("github-nightly.yml", "gitlab-nightly.yml"):
    text = example_text(example)
    problems += script_problems(example, text, "ci/nightly.sh", nightly_flags)
    if "reports/junit.xml" not in open(os.path.join(root, "ci", example)).read():
        problems.append(f"{example}: does not publish reports/junit.xml")
    if "shardbench-history" not in text:
        problems.append(f"{example}: does not keep the history on the shardbench-history branch")
# The weekly release matrix: the scripts it runs exist, ci/matrix.sh parses what it passes, and
# every side of ci/release-matrix.txt is a side `shardbench matrix --env` takes.
matrix_flags = set(re.findall(r"^\s+(--[a-z-]+)\)", open(os.path.join(root, "ci", "matrix.sh")).read(), re.M))
problems += script_problems("github-weekly-matrix.yml", example_text("github-weekly-matrix.yml"), "ci/matrix.sh", matrix_flags)
for line in open(os.path.join(root, "ci", "release-matrix.txt")):
    line = line.split("#")[0].strip()
    for side in line.split():
        if side != "project" and not re.fullmatch(r"(torch|transformers|peft|accelerate)=[0-9][0-9A-Za-z.]*(,(torch|transformers|peft|accelerate)=[0-9][0-9A-Za-z.]*)*", side):
            problems.append(f"release-matrix.txt: side '{side}' is not PACKAGE=VERSION,... or project")
for p in problems:
    print("FAIL", p)
print(f"CI examples: {len(problems)} problems")
sys.exit(1 if problems else 0)
