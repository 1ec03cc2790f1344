"""Speed and memory benchmark (not CI): rllint against flake8 (and ruff, when installed) on the released RL
corpus, single files, generated files and trees of growing size; prints the table of issue 12's goals.

    python bench/speed.py                              # downloads the corpus as realworld.sh does
    python bench/speed.py --corpus /work/primer-root/pypi+trl --corpus /work/primer-root/pypi+verl ...
    python bench/speed.py --repeat 5 --only corpus,small,medium

Every measurement is a whole process (`python -m rllint --no-cache`, `python -m flake8`), cold, and the
median of `--repeat` runs in which the tools alternate, so that a loaded machine slows them alike: the
ratios are the result, the seconds are only context. The memory is the peak resident size of the
largest process of a run (`os.wait4`). Goals (issue 12): corpus with two processes at most 0.8x flake8
-j2, with one at most 1.0x flake8 -j1; one small file at most 1.5x; one 2,500-line file at most 1.2x;
at most 200 MiB per process on any file up to 4 MB; lines per second on a 150k-line tree within 15%
of a 10k-line tree; an unchanged warm re-run of the corpus at most 1.0 s; `rllint --version` and
`rllint rules` import no libcst.

The `floor` rows time what libcst alone costs on the same work (its import, and its parse of the files the
prefilter lets through) against flake8's whole run: a goal below that ratio cannot be met while libcst
parses every analysed file.
"""
from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

# The released corpus of ../shared/bench/realworld.sh (pinned versions, sources only).
PACKAGES = ("trl==1.16.0", "verl==0.9.1", "openrlhf==0.11.2", "tinker-cookbook==0.6.1")

SMALL = '''\
import torch
def grpo_loss(logp, old_logp, adv, eps=0.2):
    ratio = torch.exp(logp - old_logp)
    clipped = torch.clamp(ratio, 1 - eps, 1 + eps)
    return -torch.min(ratio * adv, clipped * adv).mean()
'''

# One unit of generated code: RL-flavoured functions (the rules' trigger words occur, so every file is
# parsed and analysed), numbered so that no two units are the same text.
UNIT = '''\
def policy_loss_{n}(logits, labels, mask, old_logp, advantages, ref_logp, beta={n}e-3, clip=0.2):
    logp = torch.log_softmax(logits.float(), dim=-1).gather(-1, labels.unsqueeze(-1)).squeeze(-1)
    ratio = torch.exp(logp - old_logp)
    clipped = torch.clamp(ratio, 1 - clip, 1 + clip)
    kl = torch.exp(ref_logp - logp) - (ref_logp - logp) - 1
    loss = -torch.min(ratio * advantages, clipped * advantages) + beta * kl
    return (loss * mask).sum() / mask.sum().clamp(min=1)


class Rollout{n}:
    def __init__(self, tokenizer, temperature=1.0, group_size={g}):
        self.tokenizer = tokenizer
        self.temperature = temperature
        self.group_size = group_size

    def rewards(self, completions, answers):
        scores = [float(c.strip() == a) for c, a in zip(completions, answers)]
        grouped = torch.tensor(scores).view(-1, self.group_size)
        return (grouped - grouped.mean(dim=1, keepdim=True)).flatten()


'''
UNIT_LINES = UNIT.count("\n")


CPU: Dict[Tuple[str, ...], List[float]] = {}  # command -> CPU seconds (user + system) of each run, workers included


def run(argv: Sequence[str], cwd: Optional[Path] = None, env: Optional[Dict[str, str]] = None
        ) -> Tuple[float, float, int]:
    """(wall seconds, peak MiB of the largest process, exit status) of one process; its CPU time, with the
    workers it waited for, goes to `CPU` (on a loaded machine it varies less than the wall time)."""
    start = time.perf_counter()
    process = subprocess.Popen(list(argv), cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(process.pid, 0)
    seconds = time.perf_counter() - start
    process.stderr.close()
    CPU.setdefault(tuple(argv), []).append(usage.ru_utime + usage.ru_stime)
    return seconds, usage.ru_maxrss / 1024, os.waitstatus_to_exitcode(status)


def cpu(argv: Sequence[str]) -> float:
    """Median CPU seconds of the runs of `argv`."""
    return statistics.median(CPU[tuple(argv)])


def compile_rllint() -> None:
    """Compile rllint's modules to bytecode once: an environment with PYTHONDONTWRITEBYTECODE would
    otherwise compile them again in every process (0.3 s), while flake8, installed by pip, has its bytecode."""
    import compileall
    from importlib.util import find_spec

    for folder in find_spec("rllint").submodule_search_locations:
        compileall.compile_dir(folder, quiet=1)


def rllint(*args: str) -> List[str]:
    return [sys.executable, "-m", "rllint", "--no-cache", "--exit-zero", "-q", *args]


FLAKE8_PYTHON = sys.executable  # replaced in `main` by an environment without rllint's flake8 plugin


def flake8(*args: str) -> List[str]:
    # Its default checks (pycodestyle, pyflakes, mccabe), as a project runs it; exit status ignored.
    return [FLAKE8_PYTHON, "-m", "flake8", "--exit-zero", *args]


def plain_flake8(folder: Path) -> str:
    """A Python with flake8 and without rllint, made once in `folder`: flake8 run from rllint's own environment
    loads rllint as its `RL` plugin, and would be timed with rllint inside it."""
    from importlib.metadata import version

    python = folder / "flake8-venv" / "bin" / "python"
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", str(python.parent.parent)], check=True)
        subprocess.run([str(python), "-m", "pip", "install", "--quiet", f"flake8=={version('flake8')}"], check=True)
    return str(python)


def ruff(*args: str) -> Optional[List[str]]:
    found = shutil.which("ruff")
    return [found, "check", "--no-cache", "--exit-zero", "--quiet", *args] if found else None


def median_runs(commands: Dict[str, Optional[List[str]]], repeat: int, cwd: Optional[Path] = None
                ) -> Dict[str, Tuple[float, float]]:
    """Median wall seconds and largest peak MiB per command, the commands alternating (their CPU seconds in `CPU`)."""
    times: Dict[str, List[float]] = {name: [] for name, argv in commands.items() if argv}
    peaks: Dict[str, float] = {name: 0.0 for name in times}
    for _ in range(repeat):
        for name in times:
            seconds, peak, _ = run(commands[name], cwd)
            times[name].append(seconds)
            peaks[name] = max(peaks[name], peak)
    return {name: (statistics.median(values), peaks[name]) for name, values in times.items()}


def corpus_sources(folder: Path) -> Path:
    """The released corpus, downloaded (without dependencies, never imported) into `folder` once."""
    src = folder / "src"
    for spec in PACKAGES:
        name = spec.split("==")[0]
        if (src / name).is_dir():
            continue
        wheels = folder / "wheels"
        subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--only-binary=:all:",
                        "-d", str(wheels), spec], check=True)
        wheel = next(wheels.glob(f"{name.replace('-', '_')}-*.whl"))
        with zipfile.ZipFile(wheel) as archive:
            archive.extractall(src / name)
    return src


def python_files(roots: Sequence[Path]) -> List[Path]:
    return sorted(p for root in roots for p in root.rglob("*.py") if p.is_file())


def line_count(path: Path) -> int:
    return path.read_bytes().count(b"\n")


def copy_tree(files: Sequence[Path], lines: int, folder: Path) -> int:
    """Copy corpus files (in a fixed shuffled order) into `folder` until they hold `lines` lines."""
    folder.mkdir(parents=True)
    order = list(files)
    random.Random(12).shuffle(order)
    total = 0
    for index, path in enumerate(order):
        if total >= lines:
            break
        shutil.copyfile(path, folder / f"f{index:05d}_{path.name}")
        total += line_count(path)
    return total


def generated_tree(lines: int, folder: Path, file_lines: int = 1000) -> int:
    """Generated modules of about `file_lines` lines each, `lines` in all."""
    folder.mkdir(parents=True)
    units = max(1, file_lines // UNIT_LINES)
    n = total = 0
    while total < lines:
        text = "import torch\n\n\n" + "".join(UNIT.format(n=n + i, g=2 + (n + i) % 7) for i in range(units))
        (folder / f"gen_{n:06d}.py").write_text(text)
        total += text.count("\n")
        n += units
    return total


def generated_file(size: int, path: Path) -> int:
    """One generated module of about `size` bytes."""
    text = ["import torch\n\n\n"]
    n = length = 0
    while length < size:
        unit = UNIT.format(n=n, g=2 + n % 7)
        text.append(unit)
        length += len(unit)
        n += 1
    path.write_text("".join(text))
    return path.stat().st_size


def statements_file(count: int, path: Path) -> None:
    path.write_text("".join(f"value_{i} = {i} * 2\n" for i in range(count)))


def dense_file(size: int, path: Path) -> None:
    """One-line assignments (`a=1`, a syntax node per byte): the densest text below the byte bound."""
    path.write_text("a=1\n" * (size // 4))


PARSE_ONLY = """\
import sys, time
start = time.process_time()
import libcst
imported = time.process_time()
for path in sys.argv[1:]:
    try:
        libcst.parse_module(open(path, encoding="utf-8").read())
    except Exception:
        pass
print(start, imported - start, time.process_time() - imported)
"""


def libcst_floor(paths: Sequence[Path]) -> Tuple[float, float, float]:
    """CPU seconds of a process that only starts Python, imports libcst and parses `paths` with it, as (start,
    import, parse): what any run that analyses these files costs before its first rule, while the design card
    has libcst parse every analysed file."""
    done = subprocess.run([sys.executable, "-c", PARSE_ONLY, *map(str, paths)], capture_output=True, text=True,
                          check=True)
    started, imported, parsed = done.stdout.split()
    return float(started), float(imported), float(parsed)


def analysed(files: Sequence[Path]) -> List[Path]:
    """The files the prefilter lets through with the default rules: those libcst parses."""
    from rllint.runner import triggered
    from rllint.settings import Settings

    settings = Settings()
    rules = [rule for rule in settings.selected_for("x.py") if "python" in rule.file_kinds]
    return [p for p in files if triggered(rules, p.read_text(encoding="utf-8", errors="replace"), settings)]


def imports_libcst(argv: Sequence[str]) -> bool:
    probe = ("import runpy, sys; sys.argv = ['rllint', *sys.argv[1:]]\n"
             "try:\n    runpy.run_module('rllint', run_name='__main__')\n"
             "except SystemExit:\n    pass\n"
             "print('libcst' in sys.modules, file=sys.stderr)")
    done = subprocess.run([sys.executable, "-c", probe, *argv], capture_output=True, text=True)
    return done.stderr.strip().endswith("True")


class Table:
    def __init__(self) -> None:
        self.rows: List[Tuple[str, ...]] = []

    def add(self, *cells: object) -> None:
        self.rows.append(tuple(str(c) for c in cells))
        print(" | ".join(self.rows[-1]), file=sys.stderr, flush=True)

    def show(self) -> None:
        header = ("case", "rllint s", "other s", "ratio", "goal", "rllint MiB", "note")
        widths = [max(len(r[i]) for r in [header, *self.rows]) for i in range(len(header))]
        for row in [header, tuple("-" * w for w in widths), *self.rows]:
            print("| " + " | ".join(c.ljust(w) for c, w in zip(row, widths)) + " |")


def versus(table: Table, case: str, results: Dict[str, Tuple[float, float]], other: str, goal: str,
           commands: Dict[str, Optional[List[str]]]) -> None:
    mine, theirs = results["rllint"], results[other]
    extra = " ".join(f"{name} {seconds:.2f}s" for name, (seconds, _) in results.items() if name not in ("rllint", other))
    extra += f" CPU {cpu(commands['rllint']) / cpu(commands[other]):.2f}x"
    table.add(case, f"{mine[0]:.2f}", f"{theirs[0]:.2f} ({other})", f"{mine[0] / theirs[0]:.2f}x", goal,
              f"{mine[1]:.0f}", extra)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", action="append", type=Path,
                        help="a folder of the released corpus (repeatable; default: download it)")
    parser.add_argument("--download-to", type=Path, default=Path(tempfile.gettempdir()) / "rllint-realworld")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--only", default="imports,floor,corpus,small,medium,large,linear,warm",
                        help="comma-separated cases")
    args = parser.parse_args()
    cases = set(args.only.split(","))
    compile_rllint()
    global FLAKE8_PYTHON
    FLAKE8_PYTHON = plain_flake8(args.download_to)
    roots = args.corpus or [corpus_sources(args.download_to)]
    files = python_files(roots)
    corpus_lines = sum(line_count(p) for p in files)
    print(f"corpus: {len(files)} files, {corpus_lines:,} lines; load average {os.getloadavg()[0]:.1f} "
          f"on {os.cpu_count()} cores", flush=True)
    table = Table()
    with tempfile.TemporaryDirectory() as scratch_name:
        scratch = Path(scratch_name)
        corpus = scratch / "corpus"
        corpus.mkdir()
        for index, root in enumerate(roots):  # one folder, so that each tool is given one path
            shutil.copytree(root, corpus / f"{index}_{root.name}")
        if "imports" in cases:
            for argv in (["--version"], ["rules"]):
                seconds = median_runs({"rllint": [sys.executable, "-m", "rllint", *argv]}, args.repeat)["rllint"][0]
                table.add(f"rllint {' '.join(argv)}", f"{seconds:.2f}", "", "", "no libcst", "",
                          f"imports libcst: {imports_libcst(argv)}")
        if "corpus" in cases:
            for jobs in (2, 1):
                commands = {"rllint": rllint("-j", str(jobs), "."), "flake8": flake8("-j", str(jobs), "."),
                            "ruff": ruff(".")}
                results = median_runs(commands, args.repeat, corpus)
                versus(table, f"corpus -j{jobs} ({corpus_lines:,} lines)", results, "flake8",
                       "<= 0.8x" if jobs == 2 else "<= 1.0x", commands)
        if "small" in cases:
            small = scratch / "grpo_small.py"
            small.write_text(SMALL)
            commands = {"rllint": rllint(str(small)), "flake8": flake8(str(small)), "ruff": ruff(str(small))}
            results = median_runs(commands, args.repeat)
            versus(table, f"one small file ({SMALL.count(chr(10))} lines)", results, "flake8", "<= 1.5x", commands)
        if "medium" in cases:
            medium = min(files, key=lambda p: abs(line_count(p) - 2500))
            commands = {"rllint": rllint(str(medium)), "flake8": flake8(str(medium)), "ruff": ruff(str(medium))}
            results = median_runs(commands, args.repeat)
            versus(table, f"one {line_count(medium):,}-line file ({medium.name})", results, "flake8", "<= 1.2x",
                   commands)
        if "floor" in cases:
            small = scratch / "grpo_small.py"
            small.write_text(SMALL)
            medium = min(files, key=lambda p: abs(line_count(p) - 2500))
            parsed = analysed(files)
            for label, paths, tool, goal in (("small file", [small], flake8(str(small)), 1.5),
                                             (f"{line_count(medium):,}-line file", [medium], flake8(str(medium)), 1.2),
                                             (f"corpus ({len(parsed)} of {len(files)} files parsed)", parsed,
                                              flake8("-j", "1", "."), 1.0)):
                median_runs({"flake8": tool}, args.repeat, corpus)
                floors = [libcst_floor(paths) for _ in range(args.repeat)]
                started, imported, parse = (statistics.median(f[i] for f in floors) for i in range(3))
                floor = started + imported + parse
                table.add(f"floor: Python + libcst import + parse, {label}", f"{floor:.2f} CPU",
                          f"{cpu(tool):.2f} CPU (flake8)", f"{floor / cpu(tool):.2f}x", f"<= {goal}x", "",
                          f"start {started:.2f}s, import {imported:.2f}s, parse {parse:.2f}s, before any rule")
        if "large" in cases:
            for label, make in (("1.8 MB generated", lambda p: generated_file(1_800_000, p)),
                                ("3.4 MB generated", lambda p: generated_file(3_400_000, p)),
                                ("100,000 statements", lambda p: statements_file(100_000, p)),
                                ("1.0 MB generated", lambda p: generated_file(1_000_000, p)),
                                ("1.0 MB of `a=1` lines", lambda p: dense_file(1_000_000, p))):
                path = scratch / f"large_{len(table.rows)}.py"
                make(path)
                seconds, peak, status = run(rllint(str(path)))
                note = ("too large (reported)" if status == 2 else f"exit {status}") + f", {cpu(rllint(str(path))):.2f}s CPU"
                table.add(label, f"{seconds:.2f}", "", "", "<= 200 MiB", f"{peak:.0f}", note)
        if "linear" in cases:
            for source in ("corpus", "generated"):
                speeds = {}
                for lines in (10_000, 150_000):
                    folder = scratch / f"{source}_{lines}"
                    made = copy_tree(files, lines, folder) if source == "corpus" else generated_tree(lines, folder)
                    CPU.clear()
                    seconds, peak = median_runs({"rllint": rllint("-j", "1", ".")}, max(1, args.repeat // 2),
                                                folder)["rllint"]
                    speeds[lines] = (made / seconds, made / cpu(rllint("-j", "1", ".")))
                    table.add(f"{source} tree {made:,} lines -j1", f"{seconds:.2f}", "", "", "", f"{peak:.0f}",
                              f"{speeds[lines][0]:,.0f} lines/s, {speeds[lines][1]:,.0f} per CPU s")
                table.add(f"{source}: 150k vs 10k lines/s", "", "", f"{speeds[150_000][0] / speeds[10_000][0]:.2f}x",
                          ">= 0.85x", "", f"per CPU second {speeds[150_000][1] / speeds[10_000][1]:.2f}x")
        if "warm" in cases:
            cache = scratch / "cache"
            warm = [sys.executable, "-m", "rllint", "--exit-zero", "-q", "--cache-dir", str(cache), "."]
            run(warm, corpus)
            seconds, peak = median_runs({"rllint": warm}, args.repeat, corpus)["rllint"]
            table.add("corpus, warm cache, unchanged", f"{seconds:.2f}", "", "", "<= 1.0 s", f"{peak:.0f}", "")
    print(f"load average at the end {os.getloadavg()[0]:.1f}")
    table.show()
    return 0


if __name__ == "__main__":
    sys.exit(main())
