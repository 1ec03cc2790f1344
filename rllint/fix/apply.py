"""Applying fixes: rounds of non-overlapping edits, each result re-parsed and linted again, until nothing
fixable is left (a fix may make room for another, as in ruff), in Python files and in notebooks' cells;
and `--add-noqa`. Files are written by `rllint.fix.write`: complete or not at all."""
from __future__ import annotations

import ast
import difflib
import re
import tokenize
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Sequence, Set, Tuple

import libcst as cst

from rllint.diagnostic import Diagnostic, FileError, FileResult
from rllint.files import file_kind
from rllint.fix import Edit, edited
from rllint.fix.write import WriteError, reads_as, replace_file, source_bytes, writable_path
from rllint.notebook import NotebookError, join_cells, read_cells, with_sources
from rllint.rules.meta import SyntaxErrorRule, UnusedSuppression
from rllint.runner import byte_limit, lint_bytes, lint_files, lint_text
from rllint.settings import Settings
from rllint.source import (SourceError, decode_config, decode_source, python_readline, read_source,
                           split_lines)

MAX_ROUNDS = 10
# Findings about the file's syntax or its comments, which no `# noqa` can silence.
_NOT_BY_COMMENT = (SyntaxErrorRule.code, UnusedSuppression.code)


class FixError(Exception):
    """A fix produced text that does not parse: a bug in rllint; the file is left as it was."""


@dataclass
class Fixed:
    """Rounds of fixes on a document: a Python file's text, or a notebook's bytes."""

    document: Any
    fixed: List[Diagnostic] = field(default_factory=list)  # the findings whose fixes were applied
    result: FileResult = field(default_factory=FileResult)  # of linting the fixed document
    found: FileResult = field(default_factory=FileResult)  # of linting the document before any fix


@dataclass
class FileFix:
    """A file fixed in memory: its new bytes (its own when nothing changed), what was fixed, what is left,
    the findings before any fix, a unified diff, and how to tell that written bytes read back as intended."""

    data: bytes
    fixed: List[Diagnostic]
    result: FileResult
    found: FileResult
    diff: str
    reads_back: Callable[[bytes], bool]


def applicable(diagnostic: Diagnostic, unsafe: bool) -> bool:
    return diagnostic.fix is not None and (unsafe or diagnostic.fix.safe)


def fix_rounds(document: Any, lint: Callable[[Any], FileResult], apply: Callable[[Any, List[Diagnostic]], Any],
               unsafe: bool) -> Fixed:
    """Fix `document` (linted by `lint`) as far as its fixes go: each round, `apply` makes every applicable
    fix whose edits overlap no other chosen one, and must raise FixError for a result that does not parse."""
    found = lint(document)
    outcome = Fixed(document, result=found, found=found)
    for _ in range(MAX_ROUNDS):
        chosen = _non_overlapping([d for d in outcome.result.diagnostics if applicable(d, unsafe)])
        if not chosen:
            break
        new = apply(outcome.document, chosen)
        outcome = Fixed(new, outcome.fixed + chosen, lint(new), found)
    return outcome


def fix_bytes(data: bytes, path: str, settings: Settings, unsafe: bool) -> FileFix:
    """Fix the Python file or notebook `path` whose bytes are `data`, in memory, with `settings`. Raises
    SourceError, NotebookError, FixError, or WriteError when the fixed text cannot be encoded as the file is."""
    if file_kind(path) == "notebook":
        outcome = fix_rounds(data, lambda notebook: lint_bytes(notebook, path, settings), _fixed_notebook, unsafe)
        sources = read_cells(outcome.document).sources
        return FileFix(outcome.document, outcome.fixed, outcome.result, outcome.found,
                       _notebook_diff(path, data, outcome.document),
                       lambda written: read_cells(written).sources == sources)
    text = decode_source(data)
    outcome = fix_rounds(text, lambda source: lint_text(source, path, settings), _fixed_python, unsafe)
    new = source_bytes(data, text, outcome.document, "python") if outcome.document != text else data
    return FileFix(new, outcome.fixed, outcome.result, outcome.found, _diff(path, text, outcome.document),
                   reads_as(outcome.document, "python"))


def _fixed_python(text: str, chosen: List[Diagnostic]) -> str:
    new_text = edited(text, [edit for d in chosen for edit in d.fix.edits])
    _check_parses(new_text, chosen)
    return new_text


def _fixed_notebook(data: bytes, chosen: List[Diagnostic]) -> bytes:
    """The notebook with the fixes of `chosen` (their edits in their cells' lines) made in its cells."""
    sources = dict(read_cells(data).sources)
    changed: Dict[int, List[Edit]] = {}
    for d in chosen:
        changed.setdefault(d.cell, []).extend(d.fix.edits)
    sources.update({cell: edited(sources[cell], edits) for cell, edits in changed.items()})
    cells = join_cells(sorted(sources.items()))
    broken = [f"cell {cell}: {message} (line {line})" for cell, line, _, message, _ in cells.broken if cell in changed]
    if broken:
        codes = ", ".join(sorted({d.code for d in chosen}))
        raise FixError(f"fixes of {codes} produced code that does not parse ({'; '.join(broken)}); the notebook was "
                       "left as it was (a bug in rllint: please report it)")
    _check_parses(cells.text, chosen)
    return with_sources(data, {cell: sources[cell] for cell in changed})


def _non_overlapping(diagnostics: List[Diagnostic]) -> List[Diagnostic]:
    chosen: List[Diagnostic] = []
    taken: List[Tuple[Any, Edit]] = []  # (cell, edit): edits of different cells never overlap
    for diagnostic in diagnostics:
        mine = [(diagnostic.cell, edit) for edit in diagnostic.fix.edits]
        if not any(cell == other_cell and _overlap(a, b) for cell, a in mine for other_cell, b in taken):
            chosen.append(diagnostic)
            taken.extend(mine)
    return chosen


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
    lines = split_lines(text)
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
        for token in tokenize.generate_tokens(python_readline(text)):
            if token.type == tokenize.STRING or token.type == getattr(tokenize, "FSTRING_MIDDLE", -1):
                blocked.update(range(token.start[0], token.end[0]))
    except (tokenize.TokenError, SyntaxError):
        pass
    return blocked


def fix_files(files: Sequence[str], configs, unsafe: bool, write: bool,
              roots: Sequence[str] = (".",)) -> Tuple[FileResult, List[Diagnostic], List[str]]:
    """`--fix` (`write`) and `--diff`: fix each Python file and notebook with its own settings, one process,
    no cache. Returns what is left to report, the findings fixed, and a unified diff per changed file. A
    file is written only inside the linted tree (`roots`, the run's paths) and only whole; one that
    cannot be fixed or written keeps its findings and is an error. Launch configs are linted, not fixed."""
    total = FileResult()
    fixed: List[Diagnostic] = []
    diffs: List[str] = []
    for path in files:
        settings = configs.for_path(path)
        if file_kind(path) not in ("python", "notebook"):
            result = lint_files([path], settings)
            total.diagnostics.extend(result.diagnostics)
            total.errors.extend(result.errors)
            continue
        try:
            data = read_source(path, byte_limit(path))
            outcome = fix_bytes(data, path, settings, unsafe)
        except OSError as error:
            total.errors.append(FileError(path, f"cannot be read: {error.strerror or error}"))
            continue
        except (SourceError, FixError, NotebookError, WriteError) as error:
            total.errors.append(FileError(path, str(error)))
            continue
        if write and outcome.data != data:
            try:
                replace_file(writable_path(path, roots), data, outcome.data, outcome.reads_back)
            except WriteError as error:
                total.errors.append(FileError(path, str(error)))
                total.diagnostics.extend(outcome.found.diagnostics)  # nothing was fixed: the findings stand
                continue
        if outcome.diff:
            diffs.append(outcome.diff)
        fixed.extend(outcome.fixed)
        total.diagnostics.extend(outcome.result.diagnostics)
        total.errors.extend(outcome.result.errors)
    total.diagnostics.sort(key=Diagnostic.sort_key)
    return total, fixed, diffs


def _diff(path: str, before: str, after: str, where: str = "") -> str:
    lines = difflib.unified_diff(split_lines(before), split_lines(after), fromfile=f"a/{path}{where}",
                                 tofile=f"b/{path}{where}")
    return "".join(line if line.endswith(("\n", "\r")) else line + "\n\\ No newline at end of file\n" for line in lines)


def _notebook_diff(path: str, before: bytes, after: bytes) -> str:
    """A unified diff of each cell whose source changed, named `path:cell N`."""
    old, new = dict(read_cells(before).sources), dict(read_cells(after).sources)
    return "".join(_diff(path, old[cell], new[cell], f":cell {cell}") for cell in sorted(new) if new[cell] != old[cell])


def add_noqa_comments(diagnostics: Sequence[Diagnostic], roots: Sequence[str] = (".",)) -> Tuple[int, List[FileError]]:
    """`--add-noqa`: a `# noqa: CODE` comment for every finding that a comment can silence, written into
    its file (a notebook's cell) as `--fix` writes; the number of lines changed, and the files that could
    not be read or written."""
    by_file: Dict[str, List[Diagnostic]] = {}
    for d in diagnostics:
        if d.code not in _NOT_BY_COMMENT and file_kind(d.path) in ("python", "notebook", "yaml", "shell"):
            by_file.setdefault(d.path, []).append(d)
    added = 0
    errors: List[FileError] = []
    for path, found in by_file.items():
        try:
            data = read_source(path, byte_limit(path))
            new, reads_back, changed = _with_noqa(data, path, found)
            if changed:
                replace_file(writable_path(path, roots), data, new, reads_back)
        except OSError as error:
            errors.append(FileError(path, f"cannot be read: {error.strerror or error}; no noqa comment added"))
            continue
        except (SourceError, NotebookError) as error:
            errors.append(FileError(path, f"{error}; no noqa comment added"))
            continue
        except WriteError as error:
            errors.append(FileError(path, str(error)))
            continue
        added += changed
    return added, errors


def _with_noqa(data: bytes, path: str, found: List[Diagnostic]) -> Tuple[bytes, Callable[[bytes], bool], int]:
    """The file's bytes with the noqa comments of `found`, how to check them once written, and the number of
    lines changed. A notebook gets them in its cells' lines."""
    kind = file_kind(path)
    if kind == "notebook":
        sources = dict(read_cells(data).sources)
        by_cell: Dict[int, List[Diagnostic]] = {}
        for d in found:
            if d.cell in sources:
                by_cell.setdefault(d.cell, []).append(d)
        changed, new_sources = 0, {}
        for cell, in_cell in by_cell.items():
            new_sources[cell], count = add_noqa(sources[cell], in_cell)
            changed += count
        if not changed:
            return data, lambda written: written == data, 0
        new = with_sources(data, new_sources)
        expected = read_cells(new).sources
        return new, lambda written: read_cells(written).sources == expected, changed
    kind = "python" if kind == "python" else "config"
    text = decode_source(data) if kind == "python" else decode_config(data)
    if text is None:  # NUL bytes now: not the text that was linted
        return data, lambda written: written == data, 0
    new_text, changed = add_noqa(text, found, python=kind == "python")
    new = source_bytes(data, text, new_text, kind) if changed else data
    return new, reads_as(new_text, kind), changed
