"""Jupyter notebooks: their code cells as one Python text, and findings placed back in cells.

Code cells are joined in order, each starting on a new line, so a line of the joined text
belongs to exactly one cell. IPython syntax that is not Python is masked line by line, so it
neither fails the parse nor shifts a position: line magics (`%time f()`), shell escapes
(`!pip install x`, `files = !ls`), help (`obj?`), and cells run by a non-Python cell magic
(`%%bash`, `%%writefile`) become `pass` or blank lines. `%%time`-like magics, whose cell is
Python, only have their first line masked. Automagics, IPython's magics and shell aliases
written without `%` (`cd ..`, `pip install x`), are masked where the line is no Python statement.

Jupyter runs each cell on its own, so a cell that does not parse is left out of the joined text
(blank lines keep the positions) and is reported alone: the other cells are still linted.

Fixes and noqa comments are edits of a cell's own lines (`Cells.place` keeps a fix whose edits stay in
one cell and off masked lines), written back by `with_sources`, which replaces only the JSON of the
changed cells' sources and leaves every other byte of the notebook as it was.
"""
from __future__ import annotations

import ast
import codecs
import json
import re
from dataclasses import dataclass, replace
from typing import Any, Callable, Dict, FrozenSet, List, Optional, Sequence, Tuple

from rllint.diagnostic import Diagnostic
from rllint.source import split_lines

# Cell magics whose body is Python; any other cell magic's body is not linted.
_PYTHON_CELL_MAGICS = {"time", "timeit", "capture", "prun", "debug", "pypy"}
_MAGIC = re.compile(r"^(\s*)(?:%|!|[A-Za-z_][\w.]*\s*=\s*[%!])")
_HELP = re.compile(r"^(\s*)[\w.]*\?{1,2}\s*$|^(\s*)\?{1,2}[\w.]*\s*$")
# Line magics and shell aliases that IPython runs without `%` (automagic), by their first word.
_AUTOMAGICS = frozenset({
    "cd", "ls", "ll", "pwd", "pip", "conda", "mamba", "cat", "cp", "mv", "rm", "rmdir", "mkdir", "env", "less",
    "more", "man", "clear", "who", "whos", "who_ls", "reset", "load_ext", "reload_ext", "unload_ext", "matplotlib",
    "autoreload", "aimport", "run", "load", "time", "timeit", "prun", "history", "alias", "bookmark", "dhist",
    "pushd", "popd", "store", "config", "xmode", "precision", "pdb", "debug", "env", "set_env", "sx", "system",
    "pylab", "pinfo", "psearch", "lsmagic", "magic", "rehashx", "save", "edit", "notebook", "tb", "page"})


# The largest notebook rllint reads, in bytes: image outputs make notebooks large, and only the code cells'
# text is linted (within the bounds of a Python file, `too_large` of `read_cells`). Linting one of this size
# takes about 90 MB, fixing it (the JSON read several times over) about 150 MB: within the process bound.
MAX_NOTEBOOK_BYTES = 16 * 1024 * 1024


class _Number(str):
    """A JSON number kept as its text: nothing rllint reads is a number, Python's ints refuse more than 4,300
    digits and its floats overflow (issue 26.5), and a notebook written back holds them as they were. It
    equals only a number of the same text, never a string."""

    def __eq__(self, other: object) -> bool:
        return type(other) is _Number and str.__eq__(self, other)

    def __ne__(self, other: object) -> bool:
        return not self == other

    __hash__ = str.__hash__


_DECODER = json.JSONDecoder(parse_int=_Number, parse_float=_Number, parse_constant=_Number)
_SPACE = re.compile(r"[ \t\n\r]*")


class NotebookError(Exception):
    """The file is not a notebook rllint can read (not JSON, or not nbformat's shape)."""


@dataclass(frozen=True)
class Cells:
    """The joined Python text of a notebook and, for each of its lines, where it came from."""

    text: str
    origins: Tuple[Tuple[int, int], ...]  # joined line (0-based index) -> (1-based cell index, line in cell)
    # Cells left out because they do not parse: (cell index, line in cell, column, Python's message, the cell's
    # masked text).
    broken: Tuple[Tuple[int, int, int, str, str], ...] = ()
    sources: Tuple[Tuple[int, str], ...] = ()  # (cell index, source) of each code cell, as the notebook has it
    masked: FrozenSet[int] = frozenset()  # joined lines (0-based) whose IPython syntax was masked
    kernel: Optional[Tuple[int, int]] = None  # the Python version the notebook last ran on (language_info)

    def place(self, diagnostic: Diagnostic) -> Diagnostic:
        """A finding of the joined text, placed in its cell; a span that runs past its cell ends there.
        Its fix is kept, with its edits in the cell's lines, where it can be made in that cell alone."""
        if not 1 <= diagnostic.line <= len(self.origins):
            return replace(diagnostic, fix=None)
        cell, line = self.origins[diagnostic.line - 1]
        end_line, end_column = diagnostic.end_line, diagnostic.end_column
        if 1 <= end_line <= len(self.origins) and self.origins[end_line - 1][0] == cell:
            end_line = self.origins[end_line - 1][1]
        else:
            end_line, end_column = line, diagnostic.column
        fix = diagnostic.fix
        if fix is not None:
            edits = [self._in_cell(edit, cell) for edit in fix.edits]
            fix = None if None in edits else replace(fix, edits=tuple(edits))
        return replace(diagnostic, line=line, end_line=end_line, end_column=end_column, cell=cell, fix=fix)

    def _in_cell(self, edit: Any, cell: int) -> Any:
        """An edit of the joined text in the lines of `cell`; None when it reaches another cell or a line
        whose IPython syntax was masked (the text there is not the cell's own)."""
        lines = range(edit.line - 1, edit.end_line)
        if not all(0 <= line < len(self.origins) and self.origins[line][0] == cell and line not in self.masked
                   for line in lines):
            return None
        return replace(edit, line=self.origins[edit.line - 1][1], end_line=self.origins[edit.end_line - 1][1])


def read_cells(data: bytes, too_large: Optional[Callable[[str], Optional[str]]] = None) -> Cells:
    """The code cells of a notebook (nbformat 4, or 3 with its worksheets), masked and joined. `too_large`
    says why a text of Python is too large to lint, if it is: it judges the code cells' text before any
    of them is parsed (the image outputs of a notebook do not count)."""
    code = []
    notebook = _load(data)
    for index, cell in enumerate(_cells(notebook), start=1):
        if cell.get("cell_type") != "code":
            continue
        source = cell.get("source", cell.get("input", ""))
        if isinstance(source, list) and all(_is_text(part) for part in source):
            source = "".join(source)
        if not _is_text(source):
            raise NotebookError(f"not a valid notebook: the source of cell {index} is not text")
        code.append((index, source))
    problem = too_large("".join(source for _, source in code)) if too_large is not None else None
    if problem:
        raise NotebookError(problem)
    return replace(join_cells(code), kernel=_kernel(notebook))


def _kernel(notebook: dict) -> Optional[Tuple[int, int]]:
    """(major, minor) of the Python the notebook's kernel ran, from `metadata.language_info.version`."""
    info = notebook.get("metadata", {}).get("language_info", {}) if isinstance(notebook.get("metadata"), dict) else {}
    version = info.get("version") if isinstance(info, dict) and info.get("name", "python") == "python" else None
    found = re.match(r"(\d+)\.(\d+)", version) if isinstance(version, str) else None
    return (int(found.group(1)), int(found.group(2))) if found else None


def _is_text(value: Any) -> bool:
    return isinstance(value, str) and not isinstance(value, _Number)


def _load(data: bytes) -> Any:
    try:
        return _DECODER.decode(data.decode("utf-8-sig"))
    except (UnicodeDecodeError, ValueError) as error:
        raise NotebookError(f"not a valid notebook: {error}") from None
    except RecursionError:
        raise NotebookError("not a valid notebook: its JSON is nested too deeply to read") from None


def _cells(notebook: Any) -> List[dict]:
    if not isinstance(notebook, dict):
        raise NotebookError("not a valid notebook: the file holds no JSON object")
    cells = notebook.get("cells")
    if cells is None and isinstance(notebook.get("worksheets"), list):  # nbformat 3
        cells = [cell for sheet in notebook["worksheets"] if isinstance(sheet, dict) for cell in sheet.get("cells", [])]
    if not isinstance(cells, list):
        raise NotebookError("not a valid notebook: no list of cells")
    for index, cell in enumerate(cells, start=1):
        if not isinstance(cell, dict):
            raise NotebookError(f"not a valid notebook: cell {index} is not an object")
    return cells


def join_cells(code: Sequence[Tuple[int, str]]) -> Cells:
    """The code cells `code` ((cell index, source) in order) masked and joined, each starting a new line."""
    lines: List[str] = []
    origins: List[Tuple[int, int]] = []
    broken: List[Tuple[int, int, int, str, str]] = []
    masked_lines = set()
    for index, source in code:
        original = [line.rstrip("\r\n") for line in split_lines(source)]
        masked = _masked(original)
        error = _syntax_error(masked)
        if error is not None:
            broken.append((index, *error, "".join(line + "\n" for line in masked)))
            masked = [""] * len(masked)
        for number, (line, own) in enumerate(zip(masked, original), start=1):
            if line != own:
                masked_lines.add(len(lines))
            lines.append(line)
            origins.append((index, number))
    return Cells("".join(line + "\n" for line in lines), tuple(origins), tuple(broken), tuple(code),
                 frozenset(masked_lines))


def with_sources(data: bytes, sources: Dict[int, str]) -> bytes:
    """The notebook `data` with the source of each cell in `sources` (by cell index) replaced, and every
    other byte as it was (outputs, metadata, key order, indentation, numbers). A source written as a list
    of lines stays one, laid out as before. Raises NotebookError when the notebook is not nbformat 4 or
    the result would not read back as the same notebook with those sources."""
    bom = codecs.BOM_UTF8 if data.startswith(codecs.BOM_UTF8) else b""
    text = data.decode("utf-8-sig")
    expected = _load(data)
    if not isinstance(expected, dict) or not isinstance(expected.get("cells"), list):
        raise NotebookError("not changed: only notebooks of nbformat 4 (a top-level list of cells) are changed")
    spans = _source_spans(text)
    ascii_only = text.isascii()  # the notebook escapes every other character: so do its new sources
    for index in sorted(sources, reverse=True):
        if index not in spans:
            raise NotebookError(f"not changed: the source of cell {index} was not found in its JSON")
        key, start, end = spans[index]
        cell = expected["cells"][index - 1]
        cell[key] = _lines(sources[index]) if isinstance(cell[key], list) else sources[index]
        text = text[:start] + _source_json(text[start:end], sources[index], ascii_only) + text[end:]
    new = bom + text.encode("utf-8")
    if _load(new) != expected:
        raise NotebookError("not changed: the notebook did not read back as the same notebook with the new "
                            "cell sources (a bug in rllint: please report it)")
    return new


def _lines(source: str) -> List[str]:
    """A source as nbformat stores it: a list of lines, each with its `\\n`."""
    return re.findall(r"[^\n]*\n|[^\n]+$", source)


def _source_json(old: str, source: str, ascii_only: bool) -> str:
    """`source` as JSON in the form and layout of `old`, the JSON it replaces (a string, or a list of lines
    with the spaces and line breaks of the old list)."""
    if not old.startswith("["):
        return json.dumps(source, ensure_ascii=ascii_only)
    elements = _elements(old, 0)
    if not elements:
        return json.dumps(_lines(source), ensure_ascii=ascii_only)
    opening, closing = old[1:elements[0][0]], old[elements[-1][1]:-1]
    separator = old[elements[0][1]:elements[1][0]] if len(elements) > 1 else "," + opening
    body = separator.join(json.dumps(line, ensure_ascii=ascii_only) for line in _lines(source))
    return "[" + (opening + body + closing if body else "") + "]"


def _source_spans(text: str) -> Dict[int, Tuple[str, int, int]]:
    """For each cell of an nbformat 4 notebook's JSON text (1-based), the key of its source (`source`, else
    nbformat 3's `input`) and the span of its value; where a key is repeated, the last counts, as in `json`."""
    members = dict((key, (start, end)) for key, start, end in _members(text, _SPACE.match(text).end()))
    spans = {}
    for index, (start, _) in enumerate(_elements(text, members["cells"][0]), start=1):
        own = {key: (begin, end) for key, begin, end in _members(text, start)}
        key = "source" if "source" in own else "input" if "input" in own else None
        if key is not None:
            spans[index] = (key, *own[key])
    return spans


def _members(text: str, start: int) -> List[Tuple[str, int, int]]:
    """(key, start, end) of each member of the JSON object at `start`."""
    return [(json.loads(text[key_start:key_end]), value_start, value_end)
            for (key_start, key_end), (value_start, value_end) in _items(text, start, "{", "}", keyed=True)]


def _elements(text: str, start: int) -> List[Tuple[int, int]]:
    """(start, end) of each element of the JSON array at `start`."""
    return [span for _, span in _items(text, start, "[", "]", keyed=False)]


def _items(text: str, start: int, opening: str, closing: str, keyed: bool) -> List[Tuple[Tuple[int, int], Tuple[int, int]]]:
    """The spans of the keys (or (0, 0)) and values of the object or array at `start`, found with `json`'s own
    scanner (each value is decoded to find where it ends)."""
    if not text.startswith(opening, start):
        raise NotebookError(f"not a valid notebook: expected {opening!r} at character {start}")
    items = []
    index = _SPACE.match(text, start + 1).end()
    if text.startswith(closing, index):
        return items
    while True:
        key = (0, 0)
        if keyed:
            _, key_end = json.decoder.scanstring(text, index + 1)
            key = (index, key_end)
            index = _SPACE.match(text, _SPACE.match(text, key_end).end() + 1).end()  # past the colon
        _, end = _DECODER.raw_decode(text, index)
        items.append((key, (index, end)))
        index = _SPACE.match(text, end).end()
        if text.startswith(closing, index):
            return items
        index = _SPACE.match(text, index + 1).end()  # past the comma


def _syntax_error(lines: Sequence[str]) -> Optional[Tuple[int, int, str]]:
    """(line, column, message) of a cell that does not parse on its own, else None (IPython's
    top-level `await` included)."""
    try:
        compile("\n".join(lines) + "\n", "<cell>", "exec", ast.PyCF_ONLY_AST | ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
    except SyntaxError as error:
        return (error.lineno or 1, error.offset or 1, error.msg)
    except (ValueError, RecursionError, MemoryError):
        return None  # the runner reports these for the whole text
    return None


def _masked(lines: Sequence[str]) -> List[str]:
    """The cell's lines with IPython-only syntax replaced: `pass` (at the line's indentation)
    where a statement was, blank lines for a non-Python cell magic's body."""
    if lines and lines[0].lstrip().startswith("%%"):
        magic = lines[0].strip()[2:].split()[0] if lines[0].strip()[2:] else ""
        body = list(lines[1:]) if magic in _PYTHON_CELL_MAGICS else [""] * (len(lines) - 1)
        return [""] + _masked(body) if magic in _PYTHON_CELL_MAGICS else [""] + body
    masked = []
    continued = False
    scanner = _Continuation()
    for line in lines:
        if continued or (not scanner.inside and (_MAGIC.match(line) or _HELP.match(line) or _automagic(line))):
            indent = re.match(r"\s*", line).group(0)
            masked.append("" if continued else indent + "pass")
            continued = line.rstrip().endswith("\\")  # a magic continued on the next line
        else:
            masked.append(line)
            scanner.feed(line)
    return masked


_PYTHON_AFTER_NAME = re.compile(r"[=(\[{,:;]|[-+*/%&|^<>!@]=?|\.[A-Za-z_]|\bin\b|\bif\b|\bfor\b")


def _automagic(line: str) -> bool:
    """`cd ..`, `pip install x`: a magic or alias without its `%`, on a line that is no Python statement."""
    words = line.split(None, 1)
    if not words or words[0] not in _AUTOMAGICS:
        return False
    if len(words) == 2 and _PYTHON_AFTER_NAME.match(words[1]):
        return False  # `config = OmegaConf.create({`: an assignment or a call that goes on below
    try:
        compile(line.strip(), "<line>", "exec", ast.PyCF_ONLY_AST)
    except SyntaxError:
        return True
    return False


class _Continuation:
    """Whether the next line continues a statement (open brackets, a triple-quoted string or a
    backslash): a `%` or `!` there is Python (`"%d"\n  % n`), not IPython."""

    def __init__(self) -> None:
        self.depth = 0
        self.quote: Optional[str] = None  # the open triple quote
        self.backslash = False

    @property
    def inside(self) -> bool:
        return self.depth > 0 or self.quote is not None or self.backslash

    def feed(self, line: str) -> None:
        index = 0
        while index < len(line):
            if self.quote is not None:
                end = line.find(self.quote, index)
                if end < 0:
                    break
                self.quote, index = None, end + 3
                continue
            char = line[index]
            if char == "#":
                break
            if char in "\"'":
                if line.startswith(char * 3, index):
                    self.quote, index = char * 3, index + 3
                    continue
                end = index + 1
                while end < len(line) and line[end] != char:
                    end += 2 if line[end] == "\\" else 1
                index = end + 1
                continue
            if char in "([{":
                self.depth += 1
            elif char in ")]}":
                self.depth = max(0, self.depth - 1)
            index += 1
        self.backslash = self.quote is None and line.rstrip().endswith("\\")


def place_all(diagnostics: Sequence[Diagnostic], cells: Optional[Cells], path: str) -> List[Diagnostic]:
    """Findings of the notebook at `path` placed in their cells; findings in other files unchanged."""
    if cells is None:
        return list(diagnostics)
    return [cells.place(d) if d.path == path else d for d in diagnostics]
