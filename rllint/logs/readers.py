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
import itertools
import json
import math
import os
import re
import statistics
from array import array
from dataclasses import dataclass, field
from typing import Any, BinaryIO, Callable, Dict, Iterator, List, Optional, Sequence, Set, Tuple

from rllint.source import SourceError, open_regular

TRAINER_STATE = "trainer_state.json"
EVENTS_PREFIX = "events.out.tfevents."
_CHECKPOINT = re.compile(r"^checkpoint-(\d+)$")
_STEP_KEYS = ("step", "_step", "global_step", "train/global_step", "trainer/global_step", "iteration", "Step")
_STEP_KEY = re.compile(r'"step"\s*:')
_WANDB_EXTREMES = ("__MIN", "__MAX")
# A gap this many times the usual interval between logged steps is reported as missing steps.
_GAP_FACTOR = 10
# A JSON document (trainer_state.json, an array of records) is parsed whole: its text and its tree take about
# three times its size in memory. JSON-lines and CSV files are read a line at a time, up to these bounds.
MAX_DOCUMENT_BYTES = 64 * 2 ** 20
MAX_STREAMED_BYTES = 2 * 2 ** 30
MAX_LINE_BYTES = 16 * 2 ** 20
# Steps beyond this are not steps (a float holds every integer up to it).
_MAX_STEP = 2 ** 53
# Keys that hold no metric are remembered, for a warning, up to this many.
MAX_IGNORED = 1000

# The columns of one key: steps, values and the line of each, as machine numbers (a point costs 24 bytes).
Columns = Tuple[Sequence[int], Sequence[float], Sequence[int]]


class LogReadError(Exception):
    """A log that cannot be read at all; `str(error)` is the one-line reason."""


@dataclass
class Run:
    """The metrics of one run: key -> (steps, values, lines) in the order written, for the keys `wants`
    accepts (those that can hold a metric the checks read); the other numeric keys by name in `ignored`;
    and warnings about the run."""

    path: str
    wants: Callable[[str], bool] = field(default=lambda key: True, repr=False)
    points: Dict[str, Columns] = field(default_factory=dict)
    ignored: Set[str] = field(default_factory=set)
    warnings: List[str] = field(default_factory=list)

    def add(self, key: str, step: int, value: Any, line: int) -> None:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return
        columns = self.points.get(key)
        if columns is None:
            if not self.wants(key):
                if len(self.ignored) < MAX_IGNORED:
                    self.ignored.add(key)
                return
            columns = self.points[key] = (array("q"), array("d"), array("q"))
        try:
            number = float(value)
        except OverflowError:  # an integer beyond a float's range
            number = math.inf
        columns[0].append(step)
        columns[1].append(number)
        columns[2].append(line)

    def cleaned(self) -> Dict[str, Columns]:
        """key -> (steps, values, lines), sorted by step, one value per step (the last written), finite
        values only. Adds a warning for values dropped, steps that go back and long gaps."""
        result = {}
        dropped: Dict[str, Tuple[int, int]] = {}  # key -> (count, first step)
        went_back: Optional[Tuple[int, int, int]] = None
        for key, (steps, values, lines) in self.points.items():
            if all(a < b for a, b in zip(steps, itertools.islice(steps, 1, None))) and all(map(math.isfinite, values)):
                result[key] = (steps, values, lines)  # as most logs are: kept as they are, no copy
                continue
            by_step: Dict[int, Tuple[float, int]] = {}
            previous = None
            for step, value, line in zip(steps, values, lines):
                if previous is not None and step < previous and went_back is None:
                    went_back = (previous, step, line)
                previous = step
                if not math.isfinite(value):
                    count, first = dropped.get(key, (0, step))
                    dropped[key] = (count + 1, min(first, step))
                    continue
                by_step[step] = (value, line)
            kept = sorted(by_step)
            if kept:
                result[key] = (array("q", kept), array("d", (by_step[s][0] for s in kept)),
                               array("q", (by_step[s][1] for s in kept)))
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


def _longest_gap(series: Dict[str, Columns]) -> Optional[Tuple[int, int, int]]:
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


def read_text_log(source: Source, wants: Callable[[str], bool]) -> List[Run]:
    """The runs in one JSON, JSON-lines or CSV log (a CSV exported from a W&B panel may hold several), with
    the values of the keys `wants` accepts."""
    streamed = source.kind in ("jsonl", "csv")
    with open_log(source.path, MAX_STREAMED_BYTES if streamed else MAX_DOCUMENT_BYTES) as handle:
        if source.kind == "jsonl":
            return [_read_jsonl(Run(source.path, wants), handle)]
        if source.kind == "csv":
            return _read_csv(source.path, wants, handle)
        return [_read_json(Run(source.path, wants), handle)]


def open_log(path: str, limit: int) -> BinaryIO:
    """A log opened to read, with the guards of source files: a regular file (a FIFO would block, a device
    never end) of at most `limit` bytes."""
    try:
        handle = open_regular(path)
    except SourceError:
        raise LogReadError("not a regular file (a FIFO, device or socket); not read") from None
    except OSError as error:
        raise LogReadError(f"cannot be read: {error.strerror or error}") from None
    size = os.fstat(handle.fileno()).st_size
    if size > limit:
        handle.close()
        raise LogReadError(f"too large to read ({size / 2 ** 20:,.1f} MiB; rllint reads logs of this kind up to "
                           f"{limit // 2 ** 20:,} MiB)")
    return handle


def _lines(handle: BinaryIO) -> Iterator[Tuple[int, int, bytes]]:
    """(line number, offset of its first byte, bytes) of each line, a byte-order mark left out; a line
    longer than `MAX_LINE_BYTES` makes the file unreadable (a file of zeros has no line breaks)."""
    offset = 0
    for number in itertools.count(1):
        line = handle.readline(MAX_LINE_BYTES + 1)
        if not line:
            return
        if len(line) > MAX_LINE_BYTES and not line.endswith(b"\n"):
            raise LogReadError(f"line {number} is longer than {MAX_LINE_BYTES // 2 ** 20} MiB: not a metrics log")
        skipped = 3 if number == 1 and line.startswith(b"\xef\xbb\xbf") else 0
        yield number, offset + skipped, line[skipped:]
        offset += len(line)


def _decoded(line: bytes, offset: int) -> str:
    try:
        return line.decode("utf-8")
    except UnicodeDecodeError as error:
        raise LogReadError(f"not UTF-8 text: {error.reason} at byte {offset + error.start}") from None


def _parse(text: str) -> Any:
    """JSON as the readers want it: every number a float (an integer beyond a float's range is inf, which
    is left out with a warning, instead of an error; so is one of more digits than `int` converts)."""
    return json.loads(text, parse_int=float)


def _read_json(run: Run, handle: BinaryIO) -> Run:
    """TRL's trainer_state.json (`log_history`), or a JSON array of step records."""
    text = _decoded(handle.read(), 0)
    if text.startswith("\ufeff"):
        text = text[1:]
    try:
        document = _parse(text)
    except json.JSONDecodeError as error:
        raise LogReadError(f"invalid JSON at line {error.lineno}, column {error.colno}: {error.msg}"
                           f"{' (a truncated file?)' if error.pos >= len(text.rstrip()) else ''}") from None
    except RecursionError:
        raise LogReadError("nested too deeply to read (JSON of more than about 1,000 levels): not a metrics "
                           "log") from None
    if isinstance(document, dict) and isinstance(document.get("log_history"), list):
        records = document["log_history"]
        lines = _entry_lines(text, records)
    elif isinstance(document, list):
        records, lines = document, [1] * len(document)
    else:
        raise LogReadError("no `log_history` list: not a trainer_state.json, nor a list of step records")
    counted = False
    for position, (record, line) in enumerate(zip(records, lines)):
        counted |= _add_record(run, record, line, position)
    if counted:
        run.warnings.append(_COUNTED)
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


def _read_jsonl(run: Run, handle: BinaryIO) -> Run:
    """One record per line, read a line at a time: only the values of wanted keys are kept."""
    rows = objects = last = 0
    invalid, deep = _Skipped(), _Skipped()  # lines that are not JSON; nested deeper than Python's reader goes
    counted = False
    for number, offset, line in _lines(handle):
        if not line.strip():
            continue
        last = number
        try:
            record = _parse(_decoded(line, offset))
        except ValueError:
            invalid.add(number)
            continue
        except RecursionError:
            deep.add(number)
            continue
        objects += isinstance(record, dict)
        counted |= _add_record(run, record, number, rows)
        rows += 1
    if invalid.count:
        still_written = " (a run still being written?)" if invalid.count == 1 and invalid.last == last else ""
        run.warnings.append(f"{invalid.where()} not valid JSON{still_written}; skipped")
    if deep.count:
        run.warnings.append(f"{deep.where()} nested too deeply to read (JSON of more than about 1,000 levels); "
                            "skipped")
    if rows and not objects:
        raise LogReadError("no JSON objects: not a metrics log")
    if counted:
        run.warnings.append(_COUNTED)
    return run


_COUNTED = "records without a step; their order is taken as the step"


@dataclass
class _Skipped:
    """Lines of a log skipped for one reason: the first, the last, and how many."""

    first: int = 0
    last: int = 0
    count: int = 0

    def add(self, number: int) -> None:
        self.first, self.last, self.count = self.first or number, number, self.count + 1

    def where(self) -> str:
        return f"line {self.first}" if self.count == 1 else f"{self.count} lines from line {self.first}"


def _add_record(run: Run, record: Any, line: int, position: int) -> bool:
    """A step record (a dict; nested dicts flattened with `/`, a `data` or `metrics` wrapper read through);
    True when it has no step and `position` stands for it."""
    if not isinstance(record, dict):
        return False
    flat = _flatten(record)
    step = _step(flat)
    for key, value in flat.items():
        if key not in _STEP_KEYS:
            run.add(key, position if step is None else step, value, line)
    return step is None


def _flatten(record: Dict[str, Any]) -> Dict[str, Any]:
    """`{"a": {"b": 1}}` -> `{"a/b": 1}`, without recursion (a record may nest as deep as JSON goes)."""
    flat: Dict[str, Any] = {}
    pending = [("", record)]
    while pending:
        prefix, mapping = pending.pop()
        for key, value in mapping.items():
            if isinstance(value, dict):
                wrapper = not prefix and key in ("data", "metrics")
                pending.append(("" if wrapper else f"{prefix}{key}/", value))
            else:
                flat[f"{prefix}{key}"] = value
    return flat


def _step(record: Dict[str, Any]) -> Optional[int]:
    for key in _STEP_KEYS:
        step = _as_step(record.get(key))
        if step is not None:
            return step
    return None


def _as_step(value: Any) -> Optional[int]:
    """A logged number as a step; None for what cannot be one (not a number, not finite, beyond `_MAX_STEP`)."""
    if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) \
            and abs(value) <= _MAX_STEP:
        return int(value)
    return None


def _read_csv(path: str, wants: Callable[[str], bool], handle: BinaryIO) -> List[Run]:
    """One run per CSV, or one per run of a W&B panel export (`<run> - <key>` columns), read a row at a time."""
    reader = csv.reader(_decoded(line, offset) for _, offset, line in _lines(handle))
    try:
        header = next(reader, None)
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
        runs = [(Run(f"{path}[{run_name}]" if len(groups) > 1 and run_name else path, wants), columns)
                for run_name, columns in sorted(groups.items())]
        position = -1
        for position, row in enumerate(reader):
            logged = _as_step(_number(row[step_column])) if step_column is not None and step_column < len(row) else None
            step = position if logged is None else logged
            for run, columns in runs:
                for index, key in columns:
                    value = _number(row[index]) if index < len(row) else None
                    if value is not None:
                        run.add(key, step, value, reader.line_num)
    except csv.Error as error:
        raise LogReadError(f"invalid CSV: {error}") from None
    if step_column is None and position >= 0:
        for run, _ in runs:
            run.warnings.append("no step column (step, Step, _step, global_step); rows counted as steps")
    return [run for run, _ in runs]


def _number(cell: str) -> Optional[float]:
    try:
        return float(cell)
    except ValueError:
        return None
