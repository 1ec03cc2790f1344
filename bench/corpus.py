"""Corpus benchmark (not CI): lint every `.py` of CPython's standard library and of the transformers
wheel, and print per corpus the files, files not linted (with their reasons), findings, wall time and
the peak memory of the largest rllint process.

    python bench/corpus.py                    # the running Python's stdlib and transformers (pip download)
    python bench/corpus.py --transformers 4.46.3 --jobs 2
    python bench/corpus.py --only stdlib

The run must end with no crash and no internal error: the script exits 1 otherwise. The peak memory
is that of the largest process of the run (run one corpus per invocation to tell them apart).
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import sysconfig
import tempfile
import time
import zipfile
from collections import Counter
from pathlib import Path


# Installed packages live under the stdlib folder; nothing else is left out (not even `venv` or `build`).
_EXCLUDE = ("site-packages", "dist-packages", "__pycache__")


def transformers_tree(version: str, folder: Path) -> Path:
    """The transformers package from its wheel (downloaded with pip, without dependencies; never imported)."""
    spec = f"transformers=={version}" if version else "transformers"
    subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--only-binary=:all:",
                    "-d", str(folder), spec], check=True)
    wheel = next(folder.glob("transformers-*.whl"))
    with zipfile.ZipFile(wheel) as archive:
        archive.extractall(folder / "unpacked")
    print(f"wheel: {wheel.name}", file=sys.stderr)
    return folder / "unpacked" / "transformers"


def count_files(tree: Path) -> int:
    from rllint.config import load_settings
    from rllint.files import discover

    settings = load_settings(start=tree, overrides={"exclude": list(_EXCLUDE), "respect_gitignore": False})
    files, _ = discover([str(tree)], settings)
    return sum(1 for f in files if f.endswith(".py"))


def lint(tree: Path, jobs: int) -> dict:
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "rllint", "--no-cache", "--format", "json", "--exclude",
                           ",".join(_EXCLUDE), "--no-respect-gitignore", "-j", str(jobs), str(tree)],
                          capture_output=True, text=True, cwd=tree)
    seconds = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    findings = json.loads(done.stdout or "[]")
    errors = [line for line in done.stderr.splitlines() if line.startswith("rllint: error:")]
    return {
        "exit": done.returncode, "seconds": round(seconds, 1), "peak_rss_mb": round(max(peak, before) / 1024),
        "findings": len(findings), "by_code": dict(Counter(f["code"] for f in findings).most_common()),
        "errors": len(errors), "first_errors": errors[:20], "internal_errors": [e for e in errors if "internal error" in e],
        "crashed": done.returncode < 0 or "Traceback" in done.stderr,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--transformers", default="", help="version of the transformers wheel (default: newest)")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--only", choices=["stdlib", "transformers"])
    args = parser.parse_args()
    trees = {}
    with tempfile.TemporaryDirectory() as scratch:
        if args.only != "transformers":
            trees["stdlib"] = Path(sysconfig.get_paths()["stdlib"])
        if args.only != "stdlib":
            trees["transformers"] = transformers_tree(args.transformers, Path(scratch))
        failed = False
        for name, tree in trees.items():
            report = {"corpus": name, "files": count_files(tree), **lint(tree, args.jobs)}
            print(json.dumps(report, indent=2))
            failed |= report["crashed"] or bool(report["internal_errors"])
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
