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


problems = []
for example in ("github-nightly.yml", "gitlab-nightly.yml"):
    doc = yaml.safe_load(open(os.path.join(root, "ci", example)))
    text = "\n".join(str(c) for c in commands(doc))
    for script in set(re.findall(r"\b((?:ci|scripts)/[\w.-]+\.sh)\b", text)):
        if not os.path.isfile(os.path.join(root, script)):
            problems.append(f"{example}: runs {script}, which does not exist")
    for call in re.findall(r"ci/nightly\.sh([^\n]*)", text):
        for flag in re.findall(r"(--[a-z-]+)", call):
            if flag not in nightly_flags:
                problems.append(f"{example}: passes {flag} to ci/nightly.sh, which does not parse it")
    if "reports/junit.xml" not in open(os.path.join(root, "ci", example)).read():
        problems.append(f"{example}: does not publish reports/junit.xml")
    if "shardbench-history" not in text:
        problems.append(f"{example}: does not keep the history on the shardbench-history branch")
# The weekly release matrix: the scripts it runs exist, ci/matrix.sh parses what it passes, and
# every side of ci/release-matrix.txt is a side `shardbench matrix --env` takes.
weekly = yaml.safe_load(open(os.path.join(root, "ci", "github-weekly-matrix.yml")))
weekly_text = "\n".join(str(c) for c in commands(weekly))
matrix_sh = open(os.path.join(root, "ci", "matrix.sh")).read()
matrix_flags = set(re.findall(r"^\s+(--[a-z-]+)\)", matrix_sh, re.M))
for script in set(re.findall(r"\b((?:ci|scripts)/[\w.-]+\.sh)\b", weekly_text)):
    if not os.path.isfile(os.path.join(root, script)):
        problems.append(f"github-weekly-matrix.yml: runs {script}, which does not exist")
for call in re.findall(r"ci/matrix\.sh([^\n]*)", weekly_text):
    for flag in re.findall(r"(--[a-z-]+)", call):
        if flag not in matrix_flags:
            problems.append(f"github-weekly-matrix.yml: passes {flag} to ci/matrix.sh, which does not parse it")
for line in open(os.path.join(root, "ci", "release-matrix.txt")):
    line = line.split("#")[0].strip()
    for side in line.split():
        if side != "project" and not re.fullmatch(r"(torch|transformers|peft|accelerate)=[0-9][0-9A-Za-z.]*(,(torch|transformers|peft|accelerate)=[0-9][0-9A-Za-z.]*)*", side):
            problems.append(f"release-matrix.txt: side '{side}' is not PACKAGE=VERSION,... or project")
for p in problems:
    print("FAIL", p)
print(f"CI examples: {len(problems)} problems")
sys.exit(1 if problems else 0)
