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
"""
from __future__ import annotations

import ast
import json
import re
from dataclasses import dataclass, replace
from typing import List, Optional, Sequence, Tuple

from rllint.diagnostic import Diagnostic

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


class NotebookError(Exception):
    """The file is not a notebook rllint can read (not JSON, or not nbformat's shape)."""


@dataclass(frozen=True)
class Cells:
    """The joined Python text of a notebook and, for each of its lines, where it came from."""

    text: str
    origins: Tuple[Tuple[int, int], ...]  # joined line (0-based index) -> (1-based cell index, line in cell)
    # Cells left out because they do not parse: (cell index, line in cell, column, Python's message).
    broken: Tuple[Tuple[int, int, int, str], ...] = ()

    def place(self, diagnostic: Diagnostic) -> Diagnostic:
        """A finding of the joined text, placed in its cell; a span that runs past its cell ends there.
        Its fix is dropped: fixes edit files, and a notebook's cells are not edited yet."""
        if not 1 <= diagnostic.line <= len(self.origins):
            return diagnostic
        cell, line = self.origins[diagnostic.line - 1]
        end_line, end_column = diagnostic.end_line, diagnostic.end_column
        if 1 <= end_line <= len(self.origins) and self.origins[end_line - 1][0] == cell:
            end_line = self.origins[end_line - 1][1]
        else:
            end_line, end_column = line, diagnostic.column
        return replace(diagnostic, line=line, end_line=end_line, end_column=end_column, cell=cell, fix=None)


def read_cells(data: bytes) -> Cells:
    """The code cells of a notebook (nbformat 4, or 3 with its worksheets), masked and joined."""
    try:
        notebook = json.loads(data.decode("utf-8-sig"))
    except (UnicodeDecodeError, ValueError) as error:
        raise NotebookError(f"not a valid notebook: {error}") from None
    if not isinstance(notebook, dict):
        raise NotebookError("not a valid notebook: the file holds no JSON object")
    cells = notebook.get("cells")
    if cells is None and isinstance(notebook.get("worksheets"), list):  # nbformat 3
        cells = [cell for sheet in notebook["worksheets"] if isinstance(sheet, dict) for cell in sheet.get("cells", [])]
    if not isinstance(cells, list):
        raise NotebookError("not a valid notebook: no list of cells")
    lines: List[str] = []
    origins: List[Tuple[int, int]] = []
    broken: List[Tuple[int, int, int, str]] = []
    for index, cell in enumerate(cells, start=1):
        if not isinstance(cell, dict):
            raise NotebookError(f"not a valid notebook: cell {index} is not an object")
        if cell.get("cell_type") != "code":
            continue
        source = cell.get("source", cell.get("input", ""))
        if isinstance(source, list) and all(isinstance(part, str) for part in source):
            source = "".join(source)
        if not isinstance(source, str):
            raise NotebookError(f"not a valid notebook: the source of cell {index} is not text")
        masked = _masked(source.splitlines())
        error = _syntax_error(masked)
        if error is not None:
            broken.append((index, *error))
            masked = [""] * len(masked)
        for number, line in enumerate(masked, start=1):
            lines.append(line)
            origins.append((index, number))
    return Cells("".join(line + "\n" for line in lines), tuple(origins), tuple(broken))


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
