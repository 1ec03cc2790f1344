#!/usr/bin/env python3
"""The primer: rllint over real RL repositories, every finding judged in a ledger.

    python bench/primer/primer.py fill ROOT            # bring the corpus of manifest.toml into ROOT
    python bench/primer/primer.py run ROOT             # lint every checkout, compare with verdicts.toml
    python bench/primer/primer.py run ROOT --add-unjudged   # also append stubs for new findings
    python bench/primer/primer.py run ROOT --prune          # also drop ledger entries no longer found

Each checkout is linted from its own folder, as its authors would run `rllint .`. A finding
is matched with the ledger by repository, path, code and the text of the reported line, so
line drift does not lose a verdict. Verdicts: `real` (a bug its author would fix), `false`
(the rule's claim about the code is wrong), `noise` (the pattern is there but harmless).
Findings in non-RL packages are false by construction and need no entry.
"""
from __future__ import annotations

import argparse
import collections
import json
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, Iterable, List, Optional, Tuple

from rllint.registry import load_rules

try:
    import tomllib
except ImportError:  # Python < 3.11
    import tomli as tomllib

HERE = Path(__file__).resolve().parent
MANIFEST = HERE / "manifest.toml"
LEDGER = HERE / "verdicts.toml"  # the default; `--ledger` names another (a family's part while it is judged)
MISSES = HERE / "misses.toml"  # real bugs of the corpus, read in its code: a run says which it reports
# A miss is reported by a finding of its rule in its file within this many lines (a finding may sit on the
# value's line while the miss names the statement that uses it).
MISS_LINES = 3
VERDICTS = ("real", "false", "noise")
UNJUDGED = "?"


@dataclass(frozen=True)
class Checkout:
    """One entry of the manifest and the folder it lives in under ROOT."""

    name: str  # owner/name of a repository, or the package name
    folder: str
    kind: str  # "rl" or "non-rl"
    commit: Optional[str] = None
    version: Optional[str] = None


def manifest() -> List[Checkout]:
    data = tomllib.loads(MANIFEST.read_text())
    entries = [Checkout(r["name"], r["name"].replace("/", "+"), r.get("kind", "rl"), commit=r["commit"])
               for r in data.get("repo", [])]
    entries += [Checkout(p["name"], f"pypi+{p['name']}", p.get("kind", "rl"), version=p["version"])
                for p in data.get("package", [])]
    return entries


# ---------------------------------------------------------------- fill

def fill(root: Path, mirrors: Path) -> None:
    root.mkdir(parents=True, exist_ok=True)
    for entry in manifest():
        target = root / entry.folder
        if target.exists():
            continue
        print(f"fill {entry.name}", file=sys.stderr)
        staging = Path(tempfile.mkdtemp(dir=root, prefix=".fill-"))
        try:
            if entry.commit:
                git_dir = mirrors / entry.folder / "repo"
                if not git_dir.is_dir():
                    git_dir = _clone(entry.name, staging / ".git-dir")
                _export(git_dir, entry.commit, staging / "tree")
            else:
                _unpack_wheel(f"{entry.name}=={entry.version}", staging / "tree")
            (staging / "tree").rename(target)
        finally:
            shutil.rmtree(staging, ignore_errors=True)


def _clone(name: str, git_dir: Path) -> Path:
    subprocess.run(["git", "clone", "--bare", "--quiet", f"https://github.com/{name}.git", str(git_dir)], check=True)
    return git_dir


def _export(git_dir: Path, commit: str, target: Path) -> None:
    """Write the files of `commit` into `target`; blobs the snapshot lacks (large data files) are skipped."""
    listing = subprocess.run(["git", f"--git-dir={git_dir}", "ls-tree", "-r", "-z", commit],
                             capture_output=True, check=True).stdout
    blobs = []
    for record in filter(None, listing.split(b"\0")):
        meta, path = record.split(b"\t", 1)
        mode, kind, sha = meta.split()
        if kind == b"blob" and mode != b"120000":  # symlinks are left out: they may point anywhere
            blobs.append((sha, os.fsdecode(path)))
    reader = subprocess.Popen(["git", f"--git-dir={git_dir}", "cat-file", "--batch"],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    for sha, path in blobs:
        reader.stdin.write(sha + b"\n")
        reader.stdin.flush()
        header = reader.stdout.readline().split()
        if header[-1] == b"missing":
            continue
        data = reader.stdout.read(int(header[2]))
        reader.stdout.read(1)
        destination = target / path
        destination.parent.mkdir(parents=True, exist_ok=True)
        destination.write_bytes(data)
    reader.stdin.close()
    reader.wait()


def _unpack_wheel(spec: str, target: Path) -> None:
    with tempfile.TemporaryDirectory() as download:
        subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--only-binary", ":all:",
                        "-d", download, spec], check=True)
        (wheel,) = Path(download).glob("*.whl")
        with zipfile.ZipFile(wheel) as archive:
            archive.extractall(target)


# ---------------------------------------------------------------- run

@dataclass(frozen=True)
class Found:
    checkout: str  # the manifest name
    kind: str
    path: str
    line: int
    code: str
    message: str
    text: str  # the reported line, whitespace collapsed: the fingerprint that survives line drift

    def key(self) -> Tuple[str, str, str, str]:
        return (self.checkout, self.path, self.code, self.text)


def lint(root: Path, rllint: List[str], only: Iterable[str], select: Optional[str] = None
         ) -> Tuple[List[Found], List[str], List[str]]:
    """Findings, errors (files that could not be linted) and notes (folders skipped) of every checkout."""
    found, errors, notes = [], [], []
    selection = ["--select", select] if select else []
    for entry in manifest():
        if only and entry.name not in only:
            continue
        folder = root / entry.folder
        if not folder.is_dir():
            errors.append(f"{entry.name}: not in {root} (run `fill` first)")
            continue
        run = subprocess.run(rllint + ["--format", "json", "--exit-zero", *selection, "."], cwd=folder,
                             capture_output=True, text=True)
        if run.returncode > 1 and not run.stdout.strip().startswith("["):
            errors.append(f"{entry.name}: rllint exited {run.returncode}: {run.stderr.strip()[:300]}")
            continue
        for line in filter(str.strip, run.stderr.splitlines()):
            (notes if not line.startswith("rllint: error:") else errors).append(f"{entry.name}: {line}")
        for item in json.loads(run.stdout or "[]"):
            if item["code"] is None:  # a file that could not be linted
                continue  # a file that could not be linted: stderr says so too
            # A notebook's line counts from the top of its cell: the cell and the message stand for the text.
            text = (f"cell {item['cell']}: {item['message']}" if item.get("cell") is not None
                    else _line_text(folder / item["path"], item["line"]))
            found.append(Found(entry.name, entry.kind, item["path"], item["line"], item["code"], item["message"], text))
    return found, errors, notes


def _line_text(path: Path, line: int) -> str:
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return ""
    return " ".join(lines[line - 1].split()) if 0 < line <= len(lines) else ""


# ---------------------------------------------------------------- ledger

def read_ledger(ledger: Path) -> List[dict]:
    if not ledger.exists():
        return []
    entries = tomllib.loads(ledger.read_text()).get("finding", [])
    for entry in entries:
        if entry.get("verdict") not in VERDICTS + (UNJUDGED,):
            raise SystemExit(f"{ledger}: bad verdict {entry.get('verdict')!r} in {entry}")
    return entries


def write_ledger(ledger: Path, entries: List[dict]) -> None:
    entries = sorted(entries, key=lambda e: (e["repo"], e["path"], e["code"], e["text"]))
    parts = ["# The primer's verdicts: one entry per finding (see primer.py). verdict: real | false | noise.\n"]
    for e in entries:
        parts.append("[[finding]]\n" + "".join(f"{key} = {json.dumps(e[key], ensure_ascii=False)}\n"
                                               for key in ("repo", "path", "code", "text", "verdict", "reason")))
    ledger.write_text("\n".join(parts))


def _entry_key(entry: dict) -> Tuple[str, str, str, str]:
    return (entry["repo"], entry["path"], entry["code"], entry["text"])


def report(found: List[Found], ledger: List[dict]) -> Tuple[Dict[str, collections.Counter], List[Found], List[dict]]:
    """Per rule: counts of each verdict; the findings nobody judged; ledger entries no longer found."""
    verdict_of = {_entry_key(e): e["verdict"] for e in ledger}
    per_rule: Dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    unjudged = []
    for f in found:
        verdict = "false" if f.kind == "non-rl" else verdict_of.get(f.key(), UNJUDGED)
        per_rule[f.code][verdict] += 1
        if verdict == UNJUDGED:
            unjudged.append(f)
    present = {f.key() for f in found}
    gone = [e for e in ledger if _entry_key(e) not in present]
    return per_rule, unjudged, gone


def reported_misses(found: List[Found], misses: List[dict]) -> List[Tuple[dict, Optional[Found]]]:
    """Each miss with the finding that reports it (None: still missed). The finding must be of the miss's
    rule; a miss of a class no rule had (`new: ...`) counts for any finding there. `also` lists the other
    places ("path:line") where a finding reports the same bug (the call that samples in train mode, not the
    `train()` call; the verl loss that adds a helper's k1, not the helper)."""
    by_file: Dict[Tuple[str, str], List[Found]] = collections.defaultdict(list)
    for f in found:
        by_file[(f.checkout, f.path)].append(f)
    result = []
    for miss in misses:
        rule = miss["rule"]
        places = [(miss["path"], miss["line"])] + [(at.rsplit(":", 1)[0], int(at.rsplit(":", 1)[1]))
                                                    for at in miss.get("also", ())]
        match = next((f for path, line in places for f in by_file[(miss["repo"], path)]
                      if abs(f.line - line) <= MISS_LINES and (rule.startswith("new:") or f.code == rule)), None)
        result.append((miss, match))
    return result


def print_table(per_rule: Dict[str, collections.Counter]) -> None:
    print(f"{'rule':6} {'found':>5} {'real':>5} {'false':>5} {'noise':>5} {'?':>4} {'precision':>9}")
    total: collections.Counter = collections.Counter()
    for code in sorted(per_rule):
        counts = per_rule[code]
        total.update(counts)
        print(_row(code, counts))
    print(_row("all", total))
    n = sum(total.values())
    if n:
        print(f"false findings: {total['false']} of {n} ({100 * total['false'] / n:.1f}%)")


def _row(code: str, counts: collections.Counter) -> str:
    judged = counts["real"] + counts["false"] + counts["noise"]
    precision = f"{counts['real'] / judged:.2f}" if judged else "-"
    return (f"{code:6} {sum(counts.values()):5} {counts['real']:5} {counts['false']:5} {counts['noise']:5} "
            f"{counts[UNJUDGED]:4} {precision:>9}")


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    fill_cmd = commands.add_parser("fill", help="bring the corpus into ROOT")
    fill_cmd.add_argument("root", type=Path)
    fill_cmd.add_argument("--mirrors", type=Path, default=Path("/work/.mirror"),
                          help="folder of git snapshots named OWNER+NAME/repo; others are cloned from GitHub")
    run_cmd = commands.add_parser("run", help="lint the corpus and compare with the ledger")
    run_cmd.add_argument("root", type=Path)
    run_cmd.add_argument("--rllint", default=f"{sys.executable} -m rllint", help="the command to run")
    run_cmd.add_argument("--only", action="append", default=[], help="a manifest name (repeatable)")
    run_cmd.add_argument("--select", help="lint with these rules only (rllint's --select); the ledger's other "
                         "entries are then not reported as gone")
    run_cmd.add_argument("--ledger", type=Path, default=LEDGER, help="the verdict ledger to compare with")
    run_cmd.add_argument("--add-unjudged", action="store_true", help="append a stub entry per unjudged finding")
    run_cmd.add_argument("--prune", action="store_true", help="drop ledger entries no longer found")
    run_cmd.add_argument("--findings", type=Path, help="also write every finding as JSON here")
    args = parser.parse_args(argv)

    if args.command == "fill":
        fill(args.root, args.mirrors)
        return 0

    found, errors, notes = lint(args.root, args.rllint.split(), args.only, args.select)
    ledger = read_ledger(args.ledger)
    per_rule, unjudged, gone = report(found, ledger)
    # Entries of rules that did not run (not selected, or off by default) are not "gone".
    ran = ({f.code for f in found} | set(args.select.split(",")) if args.select
           else {code for code, rule in load_rules().items() if rule.default_enabled})
    gone = [e for e in gone if any(e["code"].startswith(code) for code in ran)]
    if args.findings:
        args.findings.write_text(json.dumps([f.__dict__ for f in found], indent=1))
    for note in notes:
        print(f"note: {note}")
    for error in errors:
        print(f"error: {error}")
    print_table(per_rule)
    non_rl = [f for f in found if f.kind == "non-rl"]
    print(f"findings on non-RL packages: {len(non_rl)}")
    for f in non_rl:
        print(f"  {f.checkout}/{f.path}:{f.line}: {f.code} {f.message}")
    print(f"unjudged: {len(unjudged)}")
    for f in unjudged:
        print(f"  {f.checkout}/{f.path}:{f.line}: {f.code} {f.message}\n      | {f.text}")
    if MISSES.exists():
        misses = [m for m in tomllib.loads(MISSES.read_text()).get("miss", [])
                  if not args.only or m["repo"] in args.only]
        pairs = reported_misses(found, misses)
        print(f"misses reported: {sum(f is not None for _, f in pairs)} of {len(pairs)}")
        for miss, f in pairs:
            mark = f"{f.code} at {f.line}" if f else "missed"
            print(f"  [{mark}] {miss['repo']}/{miss['path']}:{miss['line']} ({miss['rule']})")
    if not args.only:  # a run over some checkouts says nothing about what is gone
        print(f"judged before, no longer found: {len(gone)}")
        for e in gone:
            print(f"  [{e['verdict']}] {e['repo']}/{e['path']}: {e['code']} | {e['text']}")
    if args.add_unjudged or args.prune:
        kept = [e for e in ledger if not (args.prune and not args.only and e in gone)]
        known = {_entry_key(e) for e in kept}
        for f in unjudged:
            if args.add_unjudged and f.key() not in known:
                known.add(f.key())
                kept.append({"repo": f.checkout, "path": f.path, "code": f.code, "text": f.text,
                             "verdict": UNJUDGED, "reason": f.message})
        write_ledger(args.ledger, kept)
    return 0


if __name__ == "__main__":
    sys.exit(main())
