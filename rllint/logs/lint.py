"""Lint runs: read each log, name its metrics, run the selected RL7xx rules, and word the findings.

The result has the source linter's shapes (`Diagnostic`, `FileError`), so the same
reporters and exit codes serve both; warnings are one line each and never change the exit
status. `runs` keeps what was checked and where findings lie, for `--plot`.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence, Tuple

from rllint.diagnostic import Diagnostic, FileError
from rllint.logs.metrics import SEQUENCE_LEVEL, SPARSE, SPARSE_WINDOW, resolve, wanted
from rllint.logs.readers import MAX_IGNORED, LogReadError, Run, Source, find_sources, read_text_log
from rllint.logs.series import Series
from rllint.registry import LogFinding, LogRule
from rllint.rules.runlogs import LOG_WINDOW
from rllint.settings import Settings

_SHOWN_KEYS = 6  # unknown keys listed in a warning


def read(source: Source, mapping: Optional[Dict[str, str]] = None) -> List[Run]:
    """The runs in one log, with the values of the keys that can hold a metric (the built-in names and
    `mapping`'s, metric -> key); TensorBoard's reader is an optional extra, imported only for its files."""
    wants = wanted(mapping or {})
    if source.kind == "tensorboard":
        from rllint.logs.tensorboard import read_events

        return [read_events(source.path, wants)]
    return read_text_log(source, wants)


class RunMetrics:
    """What a log rule may ask of a run: the series of a metric, the metrics logged, the settings."""

    def __init__(self, path: str, series: Dict[str, Series], settings: Settings) -> None:
        self.path = path
        self._series = series
        self.settings = settings

    def series(self, metric: str) -> Optional[Series]:
        return self._series.get(metric)

    def logged(self) -> List[Series]:
        return list(self._series.values())


@dataclass
class CheckedRun:
    """A run that was judged: its series and the findings on them (for the plot)."""

    path: str
    series: List[Series]
    findings: List[LogFinding]


@dataclass
class LogResult:
    diagnostics: List[Diagnostic] = field(default_factory=list)
    errors: List[FileError] = field(default_factory=list)
    warnings: List[Tuple[str, str]] = field(default_factory=list)  # (path, message)
    runs: List[CheckedRun] = field(default_factory=list)


def lint_logs(paths: Sequence[str], settings: Settings, mapping: Optional[Dict[str, str]] = None) -> LogResult:
    """Lint the runs under `paths`; `mapping` (metric -> key) is the user's, before the built-in names."""
    result = LogResult()
    names = [p for p in [*settings.exclude, *settings.extend_exclude] if "/" not in p]
    sources, problems = find_sources(paths, names)
    result.errors.extend(FileError(path, reason) for path, reason in problems)
    for source in sources:
        try:
            runs = read(source, mapping)
        except LogReadError as error:
            result.errors.append(FileError(source.path, str(error)))
            continue
        for run in runs:
            _check(run, source, settings, mapping or {}, result)
    result.diagnostics.sort(key=lambda d: (d.path, d.step or 0, d.code))
    return result


def _check(run: Run, source: Source, settings: Settings, mapping: Dict[str, str], result: LogResult) -> None:
    points = run.cleaned()
    quiet = not source.named and source.kind in ("jsonl", "csv")  # met in a walk: perhaps not a metrics log
    keys = resolve(points, mapping)
    for warning in run.warnings if keys or not quiet else ():
        result.warnings.append((run.path, warning))
    logged = set(points) | run.ignored
    if not logged:
        if not quiet:
            result.warnings.append((run.path, "no metrics logged; nothing to check"))
        return
    if not keys:
        if not quiet:
            shown = ", ".join(f"`{key}`" for key in sorted(logged)[:_SHOWN_KEYS])
            more = f" and {len(logged) - _SHOWN_KEYS}{'+' if len(run.ignored) >= MAX_IGNORED else ''} more" \
                if len(logged) > _SHOWN_KEYS else ""
            result.warnings.append((run.path, f"no known metric among its keys ({shown}{more}); name them with "
                                              "--metric NAME=KEY"))
        return
    for metric, key in sorted(mapping.items()):
        if keys.get(metric) != key:
            result.warnings.append((run.path, f"no key `{key}` for {metric}"))
    window = settings.option(LOG_WINDOW)
    series = {metric: Series(metric, key, *points[key], window=SPARSE_WINDOW if metric in SPARSE else window,
                             sequence_level=key in SEQUENCE_LEVEL)
              for metric, key in keys.items()}
    longest = max(len(s) for s in series.values())
    if longest < 2 * window:
        result.warnings.append((run.path, f"only {longest} logged steps; trends need {2 * window} (2 x log-window)"))
    metrics = RunMetrics(run.path, series, settings)
    rules = [rule for rule in settings.rules_for(run.path) if issubclass(rule, LogRule)]
    findings: List[LogFinding] = []
    for rule in rules:
        check = rule(metrics)
        check.check()
        findings.extend(check.findings)
    result.diagnostics.extend(_diagnostic(run.path, finding) for finding in findings)
    read_by = {metric for rule in rules for metric in rule.metrics}
    result.runs.append(CheckedRun(run.path, [s for m, s in series.items() if m in read_by], findings))


def _diagnostic(path: str, finding: LogFinding) -> Diagnostic:
    rule, series = finding.rule, finding.series
    return Diagnostic(path, series.lines[finding.first], 1, series.lines[finding.last], 1, rule.code, rule.name,
                      rule.severity, finding.message, step=series.steps[finding.first])
