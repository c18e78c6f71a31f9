"""Validates every results file of a `shardbench run` output directory against
reporters/results.schema.json (and the index's references). Exit 0 when all are valid."""
import json
import pathlib
import sys

import jsonschema


def main(schema_path: str, out_dir: str) -> int:
    schema = json.loads(pathlib.Path(schema_path).read_text())
    validator = jsonschema.Draft202012Validator(schema)
    index = json.loads((pathlib.Path(out_dir) / "index.json").read_text())
    files = [e["file"] for e in index["instances"] if e.get("file")]
    if not files:
        print("no results files in the index", file=sys.stderr)
        return 1
    bad = 0
    for name in files:
        result = json.loads((pathlib.Path(out_dir) / name).read_text())
        for error in validator.iter_errors(result):
            bad += 1
            path = "/".join(str(p) for p in error.absolute_path)
            print(f"{name}: {path}: {error.message}", file=sys.stderr)
    print(f"{len(files)} results files checked, {bad} schema violations")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
