"""Runs found under the paths given, and the readers that turn each format into records.

Formats: TRL's `trainer_state.json` (its `log_history`), JSON-lines and CSV exports (one row
per logging step: W&B `history`, verl's and OpenRLHF's trackers, a hand-written logger) and
TensorBoard event files (`rllint.logs.tensorboard`, an optional extra).

A folder is walked for all of them. HF trainers copy `trainer_state.json` into every
`checkpoint-N` folder, each holding the history up to N: only the run folder's own file is
read, else the last checkpoint's, so that one run is judged once. JSON-lines and CSV files met
in a walk that log no known metric (datasets, eval dumps) are skipped without a word; named
on the command line, they get a warning.

A file that cannot be read at all raises `LogReadError` (exit status 2); damage that leaves
the rest usable (a truncated last line, NaN values, steps that go back) becomes a warning.
"""
from __future__ import annotations

import csv
import io
import json
import math
import os
import re
import statistics
from dataclasses import dataclass, field
from typing import Any, Dict, Iterator, List, Optional, Sequence, Tuple

TRAINER_STATE = "trainer_state.json"
EVENTS_PREFIX = "events.out.tfevents."
_CHECKPOINT = re.compile(r"^checkpoint-(\d+)$")
_STEP_KEYS = ("step", "_step", "global_step", "train/global_step", "trainer/global_step", "iteration", "Step")
_STEP_KEY = re.compile(r'"step"\s*:')
_WANDB_EXTREMES = ("__MIN", "__MAX")
# A gap this many times the usual interval between logged steps is reported as missing steps.
_GAP_FACTOR = 10


class LogReadError(Exception):
    """A log that cannot be read at all; `str(error)` is the one-line reason."""


@dataclass
class Run:
    """The metrics of one run: key -> (step, value, line) in the order written, and warnings about it."""

    path: str
    points: Dict[str, List[Tuple[int, float, int]]] = field(default_factory=dict)
    warnings: List[str] = field(default_factory=list)

    def add(self, key: str, step: int, value: Any, line: int) -> None:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return
        self.points.setdefault(key, []).append((step, float(value), line))

    def cleaned(self) -> Dict[str, Tuple[List[int], List[float], List[int]]]:
        """key -> (steps, values, lines), sorted by step, one value per step (the last written), finite
        values only. Adds a warning for values dropped, steps that go back and long gaps."""
        result = {}
        dropped: Dict[str, Tuple[int, int]] = {}  # key -> (count, first step)
        went_back: Optional[Tuple[int, int, int]] = None
        for key, points in self.points.items():
            by_step: Dict[int, Tuple[float, int]] = {}
            previous = None
            for step, value, line in points:
                if previous is not None and step < previous and went_back is None:
                    went_back = (previous, step, line)
                previous = step
                if not math.isfinite(value):
                    count, first = dropped.get(key, (0, step))
                    dropped[key] = (count + 1, min(first, step))
                    continue
                by_step[step] = (value, line)
            steps = sorted(by_step)
            if steps:
                result[key] = (steps, [by_step[s][0] for s in steps], [by_step[s][1] for s in steps])
        for key, (count, first) in sorted(dropped.items()):
            self.warnings.append(f"{count} non-finite value{'s' if count > 1 else ''} (NaN or inf) of `{key}` "
                                 f"from step {first} left out")
        if went_back is not None:
            self.warnings.append(f"steps go back from {went_back[0]} to {went_back[1]} (line {went_back[2]}): a "
                                 "resumed run? Later values replace earlier ones")
        gap = _longest_gap(result)
        if gap is not None:
            self.warnings.append(f"no metrics logged between step {gap[0]} and step {gap[1]} "
                                 f"(usually every {gap[2]})")
        return result


def _longest_gap(series: Dict[str, Tuple[List[int], List[float], List[int]]]) -> Optional[Tuple[int, int, int]]:
    """The widest gap between logged steps of the run, when it is far wider than the usual interval."""
    steps = sorted({step for steps, _, _ in series.values() for step in steps})
    if len(steps) < 3:
        return None
    intervals = [b - a for a, b in zip(steps, steps[1:])]
    usual = statistics.median(intervals)
    widest = max(range(len(intervals)), key=intervals.__getitem__)
    if usual > 0 and intervals[widest] > _GAP_FACTOR * usual:
        return steps[widest], steps[widest + 1], int(usual)
    return None


# ---- discovery -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Source:
    """A log to read: `kind` is trainer_state, json, jsonl, csv or tensorboard; `named` when given by name."""

    kind: str
    path: str
    named: bool


def log_kind(path: str) -> Optional[str]:
    """The kind of a log file by its name; None for files that are not logs."""
    name = os.path.basename(path)
    if name == TRAINER_STATE:
        return "trainer_state"
    if name.startswith(EVENTS_PREFIX):
        return "tensorboard"
    extension = os.path.splitext(name)[1].lower()
    return {".json": "json", ".jsonl": "jsonl", ".ndjson": "jsonl", ".csv": "csv"}.get(extension)


def find_sources(paths: Sequence[str], excluded: Sequence[str]) -> Tuple[List[Source], List[Tuple[str, str]]]:
    """The logs under `paths` and (path, reason) for paths that do not exist or are not logs.
    `excluded` are file and folder names (globs) never walked into, as the source linter's excludes."""
    import fnmatch

    sources: List[Source] = []
    problems: List[Tuple[str, str]] = []
    for given in paths:
        if os.path.isdir(given):
            sources.extend(_walk(given, lambda name: any(fnmatch.fnmatch(name, p) for p in excluded)))
        elif os.path.exists(given):
            kind = log_kind(given)
            if kind is None:
                problems.append((given, "not a metrics log (trainer_state.json, .json, .jsonl, .csv or a "
                                        "TensorBoard events file)"))
            else:
                sources.append(Source(kind, given, True))
        else:
            problems.append((given, "no such file or folder"))
    unique = {(source.kind, os.path.normpath(source.path)): source for source in sources}
    return sorted(unique.values(), key=lambda source: source.path), problems


def _walk(root: str, excluded) -> Iterator[Source]:
    for folder, folders, files in os.walk(root):
        folders[:] = sorted(name for name in folders if not excluded(name))
        if any(name.startswith(EVENTS_PREFIX) for name in files):
            yield Source("tensorboard", folder, False)
        for name in sorted(files):
            kind = log_kind(name)
            if kind in ("jsonl", "csv"):
                yield Source(kind, os.path.join(folder, name), False)
        state = _trainer_state_of(folder, files, folders)
        if state is not None:
            yield Source("trainer_state", state, False)
        # checkpoint folders hold copies of the history: never walk into them for trainer states
        folders[:] = [name for name in folders if not _CHECKPOINT.match(name) or not state]


def _trainer_state_of(folder: str, files: List[str], folders: List[str]) -> Optional[str]:
    """The trainer_state.json that holds this folder's run: its own, else its last checkpoint's."""
    if TRAINER_STATE in files:
        return os.path.join(folder, TRAINER_STATE)
    checkpoints = sorted((int(m.group(1)), name) for name in folders for m in [_CHECKPOINT.match(name)] if m
                         and os.path.isfile(os.path.join(folder, name, TRAINER_STATE)))
    return os.path.join(folder, checkpoints[-1][1], TRAINER_STATE) if checkpoints else None


# ---- readers -------------------------------------------------------------------------------------


def read(source: Source) -> List[Run]:
    """The runs in one log (a CSV exported from a W&B panel may hold several)."""
    if source.kind == "tensorboard":
        from rllint.logs.tensorboard import read_events

        return [read_events(source.path)]
    text = _text(source.path)
    if source.kind in ("trainer_state", "json"):
        return [_read_json(source.path, text)]
    if source.kind == "jsonl":
        return [_read_jsonl(source.path, text)]
    return _read_csv(source.path, text)


def _text(path: str) -> str:
    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except OSError as error:
        raise LogReadError(f"cannot be read: {error.strerror or error}") from None
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise LogReadError(f"not UTF-8 text: {error.reason} at byte {error.start}") from None


def _read_json(path: str, text: str) -> Run:
    """TRL's trainer_state.json (`log_history`), or a JSON array of step records."""
    try:
        document = json.loads(text)
    except json.JSONDecodeError as error:
        raise LogReadError(f"invalid JSON at line {error.lineno}, column {error.colno}: {error.msg}"
                           f"{' (a truncated file?)' if error.pos >= len(text.rstrip()) else ''}") from None
    if isinstance(document, dict) and isinstance(document.get("log_history"), list):
        records = document["log_history"]
        lines = _entry_lines(text, records)
    elif isinstance(document, list):
        records, lines = document, [1] * len(document)
    else:
        raise LogReadError("no `log_history` list: not a trainer_state.json, nor a list of step records")
    run = Run(path)
    _add_records(run, zip(records, lines))
    return run


def _entry_lines(text: str, records: List[Any]) -> List[int]:
    """The line of each log_history entry's `"step"` key (TRL writes one per entry); 1 when they cannot
    be matched one to one."""
    found: List[int] = []
    line, position = 1, 0
    for match in _STEP_KEY.finditer(text, max(text.find('"log_history"'), 0)):
        line += text.count("\n", position, match.start())
        position = match.start()
        found.append(line)
    with_step = [isinstance(record, dict) and "step" in record for record in records]
    if len(found) != sum(with_step):
        return [1] * len(records)
    positions = iter(found)
    return [next(positions) if has else 1 for has in with_step]


def _read_jsonl(path: str, text: str) -> Run:
    run = Run(path)
    rows = []
    bad: List[int] = []
    lines = text.splitlines()
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            rows.append((json.loads(line), number))
        except json.JSONDecodeError:
            bad.append(number)
    if bad:
        last = max(number for number, line in enumerate(lines, start=1) if line.strip())
        where = f"line {bad[0]}" if len(bad) == 1 else f"{len(bad)} lines from line {bad[0]}"
        still_written = " (a run still being written?)" if bad == [last] else ""
        run.warnings.append(f"{where} not valid JSON{still_written}; skipped")
    if rows and not any(isinstance(row, dict) for row, _ in rows):
        raise LogReadError("no JSON objects: not a metrics log")
    _add_records(run, rows)
    return run


def _add_records(run: Run, records) -> None:
    """Step records (dicts; nested dicts flattened with `/`, a `data` or `metrics` wrapper read through)."""
    counted = False
    for index, (record, line) in enumerate(records):
        if not isinstance(record, dict):
            continue
        flat = _flatten(record)
        step = _step(flat)
        if step is None:
            step, counted = index, True
        for key, value in flat.items():
            if key not in _STEP_KEYS:
                run.add(key, step, value, line)
    if counted:
        run.warnings.append("records without a step; their order is taken as the step")


def _flatten(record: Dict[str, Any], prefix: str = "") -> Dict[str, Any]:
    flat: Dict[str, Any] = {}
    for key, value in record.items():
        if isinstance(value, dict):
            wrapper = not prefix and key in ("data", "metrics")
            flat.update(_flatten(value, "" if wrapper else f"{prefix}{key}/"))
        else:
            flat[f"{prefix}{key}"] = value
    return flat


def _step(record: Dict[str, Any]) -> Optional[int]:
    for key in _STEP_KEYS:
        value = record.get(key)
        if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
            return int(value)
    return None


def _read_csv(path: str, text: str) -> List[Run]:
    """One run per CSV, or one per run of a W&B panel export (`<run> - <key>` columns)."""
    try:
        reader = csv.reader(io.StringIO(text))
        header = next(reader, None)
        rows = [(row, reader.line_num) for row in reader]
    except csv.Error as error:
        raise LogReadError(f"invalid CSV: {error}") from None
    if not header:
        return [Run(path)]
    step_column = next((i for i, name in enumerate(header) if name.strip() in _STEP_KEYS), None)
    groups: Dict[str, List[Tuple[int, str]]] = {}
    for index, name in enumerate(header):
        name = name.strip()
        if index == step_column or name.endswith(_WANDB_EXTREMES):
            continue
        run_name, separator, key = name.rpartition(" - ")
        groups.setdefault(run_name if separator else "", []).append((index, key if separator else name))
    runs = []
    for run_name, columns in sorted(groups.items()):
        run = Run(f"{path}[{run_name}]" if len(groups) > 1 and run_name else path)
        for position, (row, line) in enumerate(rows):
            step = _number(row[step_column]) if step_column is not None and step_column < len(row) else None
            step = int(step) if step is not None and math.isfinite(step) else position
            for index, key in columns:
                value = _number(row[index]) if index < len(row) else None
                if value is not None:
                    run.add(key, step, value, line)
        if step_column is None and rows:
            run.warnings.append("no step column (step, Step, _step, global_step); rows counted as steps")
        runs.append(run)
    return runs


def _number(cell: str) -> Optional[float]:
    try:
        return float(cell)
    except ValueError:
        return None
