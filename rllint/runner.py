"""Lint one file (parse once, one batched traversal, suppression filter) and many (in worker processes)."""
from __future__ import annotations

import ast
import os
import sys
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence, Tuple

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

from rllint.analysis.configs import ConfigSyntaxError, LaunchConfig, mentions_rl
from rllint.cache import ResultCache, content_hash
from rllint.diagnostic import Diagnostic, FileError
from rllint.files import file_kind
from rllint.fix import build_fix
from rllint.notebook import NotebookError, place_all, read_cells
from rllint.registry import CSTRule, Finding, load_rules
from rllint.rules.meta import SyntaxErrorRule, UnusedSuppression
from rllint.settings import Settings
from rllint.source import SourceError, Suppressions, decode_source
from rllint.traversal import visit_batched

# Below this many files, starting worker processes costs more than it saves.
_PARALLEL_THRESHOLD = 16
# libcst's visitors recurse once per nesting level: a 500-term `+` chain, which CPython
# parses, needs more than the default limit of 1000 frames.
RECURSION_LIMIT = 20000


class _Facts:
    """Analyses of one file, each built on first request and at most once."""

    def __init__(self, path: str, text: str, settings: Settings) -> None:
        self.path = path
        self.text = text
        self.settings = settings
        self._facts: Dict[type, Any] = {}
        # Other files the analyses read (values imported from project modules): path -> content hash.
        self.dependencies: Dict[str, str] = {}

    def fact(self, analysis: type) -> Any:
        """The instance of `analysis` (a class taking this file) for this file."""
        if analysis not in self._facts:
            self._facts[analysis] = analysis(self)
        return self._facts[analysis]


class FileContext(_Facts):
    """A parsed Python file: `module` is the libcst tree, `tree` the ast one."""

    kind = "python"

    def __init__(self, path: str, text: str, module: cst.Module, tree: ast.Module, settings: Settings) -> None:
        super().__init__(path, text, settings)
        self.module = module
        self.tree = tree


class ConfigFile(_Facts):
    """A launch config (`kind` "yaml" or "shell"); `rllint.analysis.configs.LaunchConfig` reads it."""

    def __init__(self, path: str, text: str, kind: str, settings: Settings) -> None:
        super().__init__(path, text, settings)
        self.kind = kind


@dataclass
class FileResult:
    diagnostics: List[Diagnostic] = field(default_factory=list)
    errors: List[FileError] = field(default_factory=list)
    # Other files the result depends on (path -> content hash): a cached result is stale when one changes.
    dependencies: Dict[str, str] = field(default_factory=dict)
    # Suppression comments of other files that silenced a finding of this one: (path, line, selector).
    used_elsewhere: List[Tuple[str, int, str]] = field(default_factory=list)


def lint_bytes(data: bytes, path: str, settings: Settings) -> FileResult:
    if file_kind(path) == "notebook":
        try:
            cells = read_cells(data)
        except NotebookError as error:
            return FileResult(errors=[FileError(path, str(error))])
        result = lint_text(cells.text, path, settings, kind="python")
        result.diagnostics = place_all(result.diagnostics, cells, path)
        return result
    try:
        text = decode_source(data)
    except SourceError as error:
        return FileResult(errors=[FileError(path, str(error))])
    return lint_text(text, path, settings)


def lint_text(text: str, path: str, settings: Settings, kind: Optional[str] = None,
              tree: Optional[ast.Module] = None) -> FileResult:
    """Lint `text` as the file `path` would be linted (standard input without a name is Python);
    `kind` overrides the kind the name says (a notebook's code cells are Python); `tree` is the
    text's `ast` tree when the caller has parsed it already (flake8 has)."""
    kind = kind or file_kind(path) or "python"
    rules = [rule for rule in settings.rules_for(path) if kind in rule.file_kinds]
    if kind != "python":
        return _lint_config(text, path, kind, settings, rules)
    try:
        tree = tree or ast.parse(text, filename=path)
    except SyntaxError as error:
        return FileResult(_syntax_error(path, error, rules))
    except (RecursionError, MemoryError):
        return FileResult(errors=[FileError(path, "too deeply nested for Python's parser; not linted")])

    suppressions = Suppressions.parse(text, tree)
    if suppressions.file_selectors == ():
        return FileResult()
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, RECURSION_LIMIT))
    try:
        findings, wrapper, file = _run_cst_rules(text, path, tree, settings, rules)
        diagnostics = _positioned(path, findings, wrapper, file)
    except cst.ParserSyntaxError as error:  # syntax newer than libcst knows
        line, column = error.raw_line, error.raw_column + 1
        spans = [(line, column, line, column, {"detail": error.message})] if SyntaxErrorRule in rules else []
        return FileResult(_diagnostics(path, SyntaxErrorRule, spans))
    except RecursionError:
        return FileResult(errors=[FileError(path, "too deeply nested to analyse (recursion limit); not linted")])
    finally:
        sys.setrecursionlimit(limit)

    result = _filtered(path, [d for d in diagnostics if d.path == path], suppressions, rules)
    remote, used = _remote_filtered([d for d in diagnostics if d.path != path], settings)
    result.diagnostics = sorted(result.diagnostics + remote, key=Diagnostic.sort_key)
    result.dependencies, result.used_elsewhere = ({} if file is None else file.dependencies), used
    return result


def _remote_filtered(diagnostics: List[Diagnostic],
                     settings: Settings) -> Tuple[List[Diagnostic], List[Tuple[str, int, str]]]:
    """Findings placed in another file (a value written in an imported module) obey that file's
    suppression comments and per-file-ignores; one per place and code. Also returns the comments
    of those files that were used, so that linting them does not call the comments stale (RL001)."""
    kept: Dict[Tuple[str, int, int, str], Diagnostic] = {}
    read: Dict[str, Optional[Suppressions]] = {}
    for d in diagnostics:
        if (d.path, d.line, d.column, d.code) in kept or d.code not in {r.code for r in settings.rules_for(d.path)}:
            continue
        if d.path not in read:
            read[d.path] = _suppressions_of(d.path)
        if read[d.path] is not None and not read[d.path].suppresses(d.line, d.code, d.name):
            kept[(d.path, d.line, d.column, d.code)] = d
    used = [(path, comment.line, selector) for path, suppressions in read.items() if suppressions is not None
            for comment in suppressions.comments for selector in sorted(comment.used)]
    return list(kept.values()), used


def _suppressions_of(path: str) -> Optional[Suppressions]:
    """The suppression comments of a file that is not the one being linted; None if it cannot be read."""
    data, failure = _read(path)
    if failure is not None:
        return None
    try:
        text = decode_source(data)
        return Suppressions.parse(text, ast.parse(text))
    except (SourceError, SyntaxError, ValueError, RecursionError, MemoryError):
        return None


def _run_cst_rules(
    text: str, path: str, tree: ast.Module, settings: Settings, rules: Sequence[type]
) -> Tuple[List[Finding], Optional[MetadataWrapper], Optional[FileContext]]:
    triggered = [r for r in rules if issubclass(r, CSTRule) and (not r.triggers or any(w in text for w in r.triggers))]
    if not triggered:
        return [], None, None
    module = cst.parse_module(text)
    wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
    file = FileContext(path, text, module, tree, settings)
    visitors = [rule(file) for rule in triggered]
    visit_batched(module, visitors)
    return [finding for visitor in visitors for finding in visitor.findings], wrapper, file


def _lint_config(text: str, path: str, kind: str, settings: Settings, rules: Sequence[type]) -> FileResult:
    """A YAML or shell launch config: its rules read (key, value, position) entries, not a tree.

    A config that does not parse is reported (RL000) only when it speaks of RL: YAML
    files of other tools (templated Helm charts, CI files) are none of rllint's business.
    """
    checks = [r for r in rules if issubclass(r, CSTRule) and (not r.triggers or any(w in text for w in r.triggers))]
    if not checks:
        return FileResult()
    file = ConfigFile(path, text, kind, settings)
    try:
        file.fact(LaunchConfig)
    except ConfigSyntaxError as error:
        if SyntaxErrorRule not in rules or not mentions_rl(text):
            return FileResult()
        span = (error.line, error.column, error.line, error.column, {"detail": str(error)})
        return FileResult(_diagnostics(path, SyntaxErrorRule, [span]))
    suppressions = Suppressions.parse(text, None)
    if suppressions.file_selectors == ():
        return FileResult()
    findings: List[Finding] = []
    for rule in checks:
        check = rule(file)
        check.check_config()
        findings.extend(check.findings)
    return _filtered(path, _positioned(path, findings, None), suppressions, rules)


def _filtered(path: str, diagnostics: List[Diagnostic], suppressions: Suppressions,
              rules: Sequence[type]) -> FileResult:
    """Drop suppressed findings (once per place and code), then report stale suppressions (RL001)."""
    kept = {}
    for d in diagnostics:
        if not suppressions.suppresses(d.line, d.code, d.name):
            kept.setdefault((d.line, d.column, d.code), d)
    found = list(kept.values())
    if UnusedSuppression in rules:
        found.extend(_unused_suppressions(path, suppressions, rules))
    return FileResult(sorted(found, key=Diagnostic.sort_key))


def _positioned(path: str, findings: List[Finding], wrapper: Optional[MetadataWrapper],
                file: Optional[FileContext] = None) -> List[Diagnostic]:
    """Positions of nodes are resolved only for files with findings: most files have none.
    Findings at a node of `file` get the fix of their rule (`rllint.fix`), when there is one."""
    if not findings:
        return []
    positions = wrapper.resolve(PositionProvider) if wrapper is not None and any(f.node for f in findings) else {}
    spans = []
    for finding in findings:
        if finding.node is None:
            line, column, end_line, end_column = finding.span
        else:
            where = positions[finding.node]
            line, column = where.start.line, where.start.column + 1
            end_line, end_column = where.end.line, where.end.column + 1
        where = path if finding.path is None else _shown_path(finding.path, path)
        fix = build_fix(finding.rule.code, finding.node, file, positions) if finding.node is not None and file else None
        spans.append((where, finding.rule, line, column, end_line, end_column, finding.message, fix,
                      finding.severity or finding.rule.severity))
    return [Diagnostic(where, line, col, end_line, end_col, rule.code, rule.name, severity, message, fix)
            for where, rule, line, col, end_line, end_col, message, fix, severity in spans]


def _shown_path(other: str, linted: str) -> str:
    """Another file's path spelled as the linted file's is (relative to the working folder when it is)."""
    if os.path.isabs(linted):
        return os.path.abspath(other)
    relative = os.path.relpath(other)
    return other if relative.startswith(os.pardir) else relative


def _syntax_error(path: str, error: SyntaxError, rules: Sequence[type]) -> List[Diagnostic]:
    if SyntaxErrorRule not in rules:
        return []
    line = error.lineno or 1
    column = error.offset or 1
    end_line = getattr(error, "end_lineno", None) or line
    end_column = getattr(error, "end_offset", None) or column
    if end_line < line or (end_line == line and end_column < column):
        end_line, end_column = line, column
    return _diagnostics(path, SyntaxErrorRule, [(line, column, end_line, end_column, {"detail": error.msg})])


def _diagnostics(path: str, rule: type, spans: List[tuple]) -> List[Diagnostic]:
    """Findings that the runner itself makes: (line, column, end line, end column, message values)."""
    return [Diagnostic(path, line, col, end_line, end_col, rule.code, rule.name, rule.severity,
                       rule.message.format(**values))
            for line, col, end_line, end_col, values in spans]


def _unused_suppressions(path: str, suppressions: Suppressions, rules: Sequence[type]) -> List[Diagnostic]:
    """RL001: codes in `# noqa:` / `# rllint: ignore[...]` that silenced nothing among the rules that ran."""
    ran = {rule.code: rule for rule in rules}
    ran.update({rule.name: rule for rule in rules})
    found = []
    for comment in suppressions.comments:
        for selector in comment.selectors:
            rule = ran.get(selector.upper()) or ran.get(selector.lower())
            if rule is not None and rule is not UnusedSuppression and selector not in comment.used:
                found.append((comment.line, comment.column, comment.line, comment.column, {"selector": selector}))
    return _diagnostics(path, UnusedSuppression, found)


def _read(path: str) -> Tuple[Optional[bytes], Optional[FileResult]]:
    try:
        with open(path, "rb") as handle:
            return handle.read(), None
    except OSError as error:
        return None, FileResult(errors=[FileError(path, f"cannot be read: {error.strerror or error}")])


def lint_files(
    paths: Sequence[str], settings: Settings, jobs: Optional[int] = None, cache: Optional[ResultCache] = None
) -> FileResult:
    """Lint files, in worker processes when there are many, skipping those the cache knows.

    Workers are also a guard: should libcst's native parser crash on one file, the
    files of the broken pool are linted again one process each, so that the crash
    costs that file only.
    """
    load_rules()
    jobs = jobs or os.cpu_count() or 1
    results: Dict[str, FileResult] = {}
    pending: Dict[str, Tuple[bytes, str]] = {}
    for path in paths:
        data, failure = _read(path)
        if failure is not None:
            results[path] = failure
            continue
        digest = content_hash(data)
        cached = cache.get(path, digest) if cache is not None else None
        if cached is not None and cache.stale(cached.dependencies):
            cached = None
        if cached is not None:
            results[path] = cached
        else:
            pending[path] = (data, digest)
    if jobs == 1 or len(pending) < _PARALLEL_THRESHOLD:
        fresh = {path: lint_bytes(data, path, settings) for path, (data, _) in pending.items()}
    else:
        fresh = _lint_in_workers(pending, settings, jobs)
    for path, result in fresh.items():
        results[path] = result
        if cache is not None:
            cache.put(path, pending[path][1], result)
    if cache is not None:
        cache.save()
    total = FileResult()
    used_elsewhere = {(os.path.abspath(other), line, selector)
                      for path in paths for other, line, selector in results[path].used_elsewhere}
    seen = set()
    for path in paths:
        for d in results[path].diagnostics:
            where = os.path.abspath(d.path)
            if d.code == UnusedSuppression.code and (where, d.line, _stale_selector(d)) in used_elsewhere:
                continue  # the comment silenced a finding that another linted file placed there
            # A value written in a shared module is found from each file that imports it: report it once.
            if (where, d.line, d.column, d.code) not in seen:
                seen.add((where, d.line, d.column, d.code))
                total.diagnostics.append(d)
        total.errors.extend(results[path].errors)
    total.diagnostics.sort(key=Diagnostic.sort_key)
    return total


def _stale_selector(diagnostic: Diagnostic) -> Optional[str]:
    """The selector an RL001 finding calls stale (its message quotes it)."""
    start = diagnostic.message.find("`")
    return diagnostic.message[start + 1:diagnostic.message.find("`", start + 1)] if start >= 0 else None


def _lint_in_workers(pending: Dict[str, Tuple[bytes, str]], settings: Settings, jobs: int) -> Dict[str, FileResult]:
    results: Dict[str, FileResult] = {}
    crashed: List[str] = []
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        futures = {path: pool.submit(lint_bytes, data, path, settings) for path, (data, _) in pending.items()}
        for path, future in futures.items():
            try:
                results[path] = future.result()
            except BrokenProcessPool:
                crashed.append(path)
    for path in crashed:
        results[path] = _lint_alone(pending[path][0], path, settings)
    return results


def _lint_alone(data: bytes, path: str, settings: Settings) -> FileResult:
    try:
        with ProcessPoolExecutor(max_workers=1) as pool:
            return pool.submit(lint_bytes, data, path, settings).result()
    except BrokenProcessPool:
        return FileResult(errors=[FileError(path, "the parser crashed on this file (too deeply nested?); not linted")])
