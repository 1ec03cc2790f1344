"""Applying fixes to a file's text: rounds of non-overlapping edits, each result re-parsed and linted
again, until nothing fixable is left (a fix may make room for another, as in ruff); and `--add-noqa`."""
from __future__ import annotations

import ast
import difflib
import io
import re
import tokenize
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Sequence, Set, Tuple

import libcst as cst

from rllint.diagnostic import Diagnostic, FileError
from rllint.files import file_kind
from rllint.fix import Edit, edited
from rllint.rules.meta import SyntaxErrorRule, UnusedSuppression
from rllint.runner import FileResult, lint_files, lint_text
from rllint.source import SourceError, decode_source, read_source

MAX_ROUNDS = 10
# Findings about the file's syntax or its comments, which no `# noqa` can silence.
_NOT_BY_COMMENT = (SyntaxErrorRule.code, UnusedSuppression.code)


class FixError(Exception):
    """A fix produced text that does not parse: a bug in rllint; the file is left as it was."""


@dataclass
class Fixed:
    text: str
    fixed: List[Diagnostic] = field(default_factory=list)  # the findings whose fixes were applied
    result: FileResult = field(default_factory=FileResult)  # of linting the fixed text


def applicable(diagnostic: Diagnostic, unsafe: bool) -> bool:
    return diagnostic.fix is not None and (unsafe or diagnostic.fix.safe)


def fix_text(text: str, lint: Callable[[str], FileResult], unsafe: bool, python: bool = True) -> Fixed:
    """Fix `text` (linted by `lint`, which returns a FileResult) as far as its fixes go.

    Each round applies every applicable fix whose edits overlap no other chosen one; the new text
    must parse (`python`: with CPython's parser and libcst) or FixError is raised."""
    outcome = Fixed(text, result=lint(text))
    for _ in range(MAX_ROUNDS):
        chosen, edits = _non_overlapping([d for d in outcome.result.diagnostics if applicable(d, unsafe)])
        if not chosen:
            break
        new_text = edited(outcome.text, edits)
        if python:
            _check_parses(new_text, chosen)
        outcome = Fixed(new_text, outcome.fixed + chosen, lint(new_text))
    return outcome


def _non_overlapping(diagnostics: List[Diagnostic]):
    chosen: List[Diagnostic] = []
    edits: List[Edit] = []
    for diagnostic in diagnostics:
        mine = list(diagnostic.fix.edits)
        if not any(_overlap(a, b) for a in mine for b in edits):
            chosen.append(diagnostic)
            edits.extend(mine)
    return chosen, edits


def _overlap(a: Edit, b: Edit) -> bool:
    return (a.line, a.column) < (b.end_line, b.end_column) and (b.line, b.column) < (a.end_line, a.end_column)


def _check_parses(text: str, fixed: List[Diagnostic]) -> None:
    try:
        ast.parse(text)
        cst.parse_module(text)
    except (SyntaxError, cst.ParserSyntaxError) as error:
        codes = ", ".join(sorted({d.code for d in fixed}))
        raise FixError(f"fixes of {codes} produced code that does not parse ({error}); the file was left as it "
                       "was (a bug in rllint: please report it)") from None


_NOQA = re.compile(r"#\s*noqa(?::\s*(?P<codes>[A-Za-z]+[0-9]+(?:[\s,]+[A-Za-z]+[0-9]+)*))?\s*$", re.IGNORECASE)


def add_noqa(text: str, diagnostics: List[Diagnostic], python: bool = True) -> tuple:
    """`text` with `# noqa: CODE` at the end of each line that has a finding, merged into a `# noqa:`
    comment already there; and the number of lines changed. Lines where a comment cannot go (inside
    a string that spans lines, or ending in a backslash) are left alone."""
    wanted: Dict[int, Set[str]] = {}
    for d in diagnostics:
        wanted.setdefault(d.line, set()).add(d.code)
    blocked = _string_lines(text) if python else set()
    lines = text.splitlines(keepends=True)
    changed = 0
    for number, codes in wanted.items():
        if number > len(lines) or number in blocked:
            continue
        line = lines[number - 1]
        body = line.rstrip("\r\n")
        if body.endswith("\\"):
            continue
        ending = line[len(body):]
        existing = _NOQA.search(body)
        if existing and not existing.group("codes"):
            continue  # a bare `# noqa` silences every code already
        if existing:
            known = re.split(r"[\s,]+", existing.group("codes").strip())
            merged = known + sorted(codes - set(known))
            body = body[:existing.start()] + "# noqa: " + ", ".join(merged)
        else:
            body = body.rstrip() + "  # noqa: " + ", ".join(sorted(codes))
        if body + ending != line:
            lines[number - 1] = body + ending
            changed += 1
    return "".join(lines), changed


def _string_lines(text: str) -> Set[int]:
    """Lines that end inside a string literal (all but the last line of a string that spans lines)."""
    blocked: Set[int] = set()
    try:
        for token in tokenize.generate_tokens(io.StringIO(text).readline):
            if token.type == tokenize.STRING or token.type == getattr(tokenize, "FSTRING_MIDDLE", -1):
                blocked.update(range(token.start[0], token.end[0]))
    except (tokenize.TokenError, SyntaxError):
        pass
    return blocked


def fix_files(files: Sequence[str], configs, unsafe: bool, write: bool) -> Tuple[FileResult, List[Diagnostic], List[str]]:
    """`--fix` (`write`) and `--diff`: fix each Python file with its own settings, one process, no cache.
    Returns what is left to report, the findings fixed, and a unified diff per changed file.
    Notebooks and launch configs are linted but not fixed."""
    total = FileResult()
    fixed: List[Diagnostic] = []
    diffs: List[str] = []
    for path in files:
        settings = configs.for_path(path)
        if file_kind(path) != "python":
            result = lint_files([path], settings)
            total.diagnostics.extend(result.diagnostics)
            total.errors.extend(result.errors)
            continue
        try:
            data = read_source(path)
            text = decode_source(data)
            outcome = fix_text(text, lambda source: lint_text(source, path, settings), unsafe)
        except OSError as error:
            total.errors.append(FileError(path, f"cannot be read: {error.strerror or error}"))
            continue
        except (SourceError, FixError) as error:
            total.errors.append(FileError(path, str(error)))
            continue
        if outcome.text != text:
            if write:
                _write_source(path, data, outcome.text)
            diffs.append(_diff(path, text, outcome.text))
        fixed.extend(outcome.fixed)
        total.diagnostics.extend(outcome.result.diagnostics)
        total.errors.extend(outcome.result.errors)
    total.diagnostics.sort(key=Diagnostic.sort_key)
    return total, fixed, diffs


def _diff(path: str, before: str, after: str) -> str:
    lines = difflib.unified_diff(before.splitlines(keepends=True), after.splitlines(keepends=True),
                                 fromfile=f"a/{path}", tofile=f"b/{path}")
    return "".join(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in lines)


def add_noqa_comments(diagnostics: Sequence[Diagnostic]) -> int:
    """`--add-noqa`: a `# noqa: CODE` comment for every finding that a comment can silence, written into
    its file; returns the number of lines changed. Notebook cells are left alone."""
    by_file: Dict[str, List[Diagnostic]] = {}
    for d in diagnostics:
        if d.cell is None and d.code not in _NOT_BY_COMMENT and file_kind(d.path) in ("python", "yaml", "shell"):
            by_file.setdefault(d.path, []).append(d)
    added = 0
    for path, found in by_file.items():
        try:
            with open(path, "rb") as handle:
                data = handle.read()
            text = decode_source(data)
        except (OSError, SourceError):
            continue
        new_text, changed = add_noqa(text, found, python=file_kind(path) == "python")
        if changed:
            _write_source(path, data, new_text)
            added += changed
    return added


def _write_source(path: str, original: bytes, text: str) -> None:
    """Write `text` in the file's own encoding (its coding cookie or UTF-8), keeping a byte-order mark."""
    encoding, _ = tokenize.detect_encoding(io.BytesIO(original).readline)
    bom = b"\xef\xbb\xbf" if original.startswith(b"\xef\xbb\xbf") else b""
    with open(path, "wb") as handle:
        handle.write(bom + text.encode("utf-8" if encoding == "utf-8-sig" else encoding))
