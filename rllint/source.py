"""A source file as rllint sees it: decoded text, lines, and its suppression comments."""
from __future__ import annotations

import ast
import bisect
import codecs
import hashlib
import io
import os
import re
import stat
import tempfile
import tokenize
from dataclasses import dataclass, field
from typing import BinaryIO, Callable, Dict, Iterable, List, Optional, Set, Tuple


class SourceError(Exception):
    """The bytes of a file cannot be turned into Python text (bad encoding, NUL bytes, not a regular file, too large)."""


# The largest file rllint reads, in bytes. libcst needs hundreds of bytes of memory per byte of
# dense source; the node budget of the runner bounds that, this bounds what is read at all.
MAX_FILE_BYTES = 8 * 1024 * 1024


def content_hash(data: bytes) -> str:
    """The digest that names a file's content in the cache and in a result's dependencies."""
    return hashlib.blake2b(data, digest_size=16).hexdigest()


def read_source(path: str, limit: int = MAX_FILE_BYTES) -> bytes:
    """The bytes of a regular file, at most `limit` of them. Raises SourceError for a FIFO, a device or
    a socket (opening one blocks or reads forever) and for a larger file, OSError when it cannot be read."""
    with open_regular(path) as handle:
        data = handle.read(limit + 1)
        if len(data) > limit:
            raise SourceError(too_large(os.fstat(handle.fileno()).st_size, limit))
    return data


def write_beside(path: str, data: bytes, prefix: str, suffix: str, mode: Optional[int] = None,
                 check: Optional[Callable[[str], None]] = None) -> None:
    """Put `data` in `path`'s place in one step: written to a new temporary file in the same folder (never
    through a link), flushed to disk, given `mode`, passed to `check` (which raises to stop), then moved
    over `path` with `os.replace` (which replaces a link there, not what it points to). The temporary file
    never outlives a failure; raises OSError or what `check` raises, and `path` is then as it was."""
    descriptor, temporary = tempfile.mkstemp(dir=os.path.dirname(path) or ".", prefix=prefix, suffix=suffix)
    try:
        with os.fdopen(descriptor, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        if mode is not None:
            os.chmod(temporary, mode)
        if check is not None:
            check(temporary)
        os.replace(temporary, path)
    except BaseException:
        try:
            os.unlink(temporary)
        except OSError:
            pass
        raise


def open_regular(path: str) -> BinaryIO:
    """A regular file opened to read bytes. Raises SourceError for a FIFO, a device or a socket (opening one
    blocks, reading one may never end), OSError when it cannot be opened."""
    descriptor = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0))
    handle = os.fdopen(descriptor, "rb")
    if not stat.S_ISREG(os.fstat(descriptor).st_mode):
        handle.close()
        raise SourceError("not a regular file (a FIFO, device or socket); not linted")
    return handle


def too_large(size: int, limit: int) -> str:
    return f"too large to lint ({size / 2 ** 20:.1f} MiB; rllint reads files up to {limit // 2 ** 20} MiB)"


# What Python's tokenizer would make of a text, closely enough to bound what its parser costs (about
# 600 bytes per token): a comment, a string and a name or number are one token each, any other
# character that is not a space one; a line break one. A string without its closing quotes ends at the
# end of its line (of the text, for triple quotes), so that every part matches and none is tried again
# from a later start: the count takes time linear in the text, whatever it holds.
_STRING = (r"[rRbBuUfF]{0,2}(?:'\'\'(?:[^'\\]|\\.|'(?!''))*(?:'\'\')?|\"\"\"(?:[^\"\\]|\\.|\"(?!\"\"))*(?:\"\"\")?"
           r"|'(?:[^'\\\n]|\\.)*'?|\"(?:[^\"\\\n]|\\.)*\"?)")
_TOKEN = re.compile(r"#[^\r\n]*|" + _STRING + r"|\w+|[^\w\s]|\n", re.S)


def token_estimate(text: str) -> int:
    """About as many tokens as Python's tokenizer makes of `text`, never many fewer, in a hundredth of the
    time `ast.parse` takes: every `{` counts once more, for the fields of an f-string (which the tokenizer of
    Python before 3.12 makes one token but the parser makes nodes of). Never more than twice `len(text)`."""
    return _TOKEN.subn("", text)[1] + text.count("{")


# A line as Python's tokenizer, libcst and LSP count lines: only \n, \r\n and \r end one.
_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z")


def split_lines(text: str) -> List[str]:
    """The lines of `text`, each with its line ending, as Python counts them. `str.splitlines` also breaks
    at a form feed, \\v, U+0085 or U+2028, which Python keeps inside a line: positions counted that way
    point below where Python (and every finding) puts them, and an edit made there changes the program."""
    return _LINE.findall(text)


def python_readline(text: str) -> Callable[[], str]:
    """A `readline` for `tokenize` that yields the lines Python sees (line endings made `\\n`, which the
    pure-Python tokenizer of 3.9-3.11 needs to end a line at a lone `\\r`)."""
    lines = iter([line.rstrip("\r\n") + "\n" if line.endswith(("\r", "\n")) else line for line in split_lines(text)])
    return lambda: next(lines, "")


def decode_source(data: bytes) -> str:
    """Decode as CPython does: a BOM first, then a PEP 263 coding cookie, else UTF-8.

    A cookie may name any codec Python knows, including ones that are not text encodings
    (`hex`, `zlib`, `rot13`, `undefined`): those are a message for this file, never a crash.
    """
    if b"\x00" in data:
        raise SourceError("contains NUL bytes; not a text file")
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError as error:  # unknown codec in the cookie, or BOM + conflicting cookie
        raise SourceError(f"cannot be decoded: {error}") from None
    try:
        text = data.decode(encoding)
    except UnicodeDecodeError as error:
        raise SourceError(f"cannot be decoded as {encoding}: {error.reason} at byte {error.start}") from None
    except (LookupError, UnicodeError, ValueError, TypeError) as error:  # a codec that is not a text encoding
        raise SourceError(f"cannot be decoded: its coding cookie names {encoding!r}, which does not decode "
                          f"bytes to text ({type(error).__name__}: {error})") from None
    return text[1:] if text.startswith("\ufeff") else text


# Every pattern here is matched in time linear in the comment: no two adjacent parts can match the
# same text, so a crafted comment (`# rllint: noqa: ` and thousands of spaces) cannot make them backtrack.
_BOMS = ((codecs.BOM_UTF32_LE, "utf-32"), (codecs.BOM_UTF32_BE, "utf-32"), (codecs.BOM_UTF8, "utf-8-sig"),
         (codecs.BOM_UTF16_LE, "utf-16"), (codecs.BOM_UTF16_BE, "utf-16"))


def decode_config(data: bytes) -> Optional[str]:
    """A YAML or shell file as text, decoded as YAML does (a BOM picks UTF-8, -16 or -32; else UTF-8), with
    bytes that do not decode replaced, as a shell would pass them on; None for what is not text (NUL bytes).
    These files are often other tools', so their encoding is never an error."""
    encoding = next((name for bom, name in _BOMS if data.startswith(bom)), "utf-8")
    text = data.decode(encoding, "replace")
    if "\x00" in text:
        return None
    return text[1:] if text.startswith("\ufeff") else text


_NOQA = re.compile(r"#\s*noqa(?::\s*(?P<codes>[A-Za-z]+[0-9]+(?:[\s,]+[A-Za-z]+[0-9]+)*))?", re.IGNORECASE)
_IGNORE = re.compile(r"#\s*rllint:\s*ignore\[(?P<selectors>[^\]#]*)\]", re.IGNORECASE)
_MENTIONS = re.compile(r"noqa|rllint", re.IGNORECASE)  # a file without these words has no suppression
_FILE_NOQA = re.compile(r"#\s*rllint:\s*noqa(?![\w-])", re.IGNORECASE)
_SELECTOR_LIST = re.compile(r"[\w\-, \t]+")
_EVERY_LINE = (1, 2 ** 62)


@dataclass
class SuppressionComment:
    """One comment that silences findings; `selectors` is empty for a bare `# noqa`."""

    line: int
    column: int  # 1-based column of the comment
    selectors: Tuple[str, ...]
    lines: Tuple[int, int]  # first and last line covered
    used: Set[str] = field(default_factory=set)
    kind: str = "noqa"  # "noqa" (`# noqa: CODE`), "ignore" (`# rllint: ignore[...]`) or "file" (`# rllint: noqa: CODE`)

    @property
    def bare(self) -> bool:
        return not self.selectors

    def covers(self, line: int, code: str, name: str) -> bool:
        if not self.lines[0] <= line <= self.lines[1]:
            return False
        if self.bare:
            return True
        for selector in self.selectors:
            if selector.upper() == code or selector.lower() == name:
                self.used.add(selector)
                return True
        return False


@dataclass
class Suppressions:
    """All suppression comments of one file, and which of them were used."""

    comments: List[SuppressionComment]
    file_selectors: Optional[Tuple[str, ...]]  # None: no file-level comment; (): the whole file
    _by_line: Dict[int, List[SuppressionComment]] = field(default_factory=dict, repr=False)
    _file_level: Dict[str, List[SuppressionComment]] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        """Indexes that keep filtering linear: comments by each line they cover (an ignore comment on a
        line of its own covers a statement; statements nest only as deep as indentation goes), file-level
        ones by selector."""
        for comment in self.comments:
            if comment.kind == "file":
                for selector in comment.selectors:
                    self._file_level.setdefault(selector.upper(), []).append(comment)
                    self._file_level.setdefault(selector.lower(), []).append(comment)
                continue
            for line in range(comment.lines[0], comment.lines[1] + 1):
                self._by_line.setdefault(line, []).append(comment)

    def suppresses(self, line: int, code: str, name: str) -> bool:
        if self.file_selectors == ():
            return True
        hit = False
        # Every comment that matches is marked used, so none is reported as stale.
        for comment in self._by_line.get(line, ()):
            hit = comment.covers(line, code, name) or hit
        for comment in {id(c): c for c in self._file_level.get(code, []) + self._file_level.get(name, [])}.values():
            hit = comment.covers(line, code, name) or hit
        return hit

    @classmethod
    def parse(cls, text: str, tree: Optional[ast.Module]) -> "Suppressions":
        """Suppressions of a Python file (`tree` given) or of a YAML / shell file (`tree` None).

        In Python, comments are found by tokenizing, so a `# noqa` inside a string does not
        count; in configs, by scanning lines. An ignore comment on a line of its own covers
        the next statement of Python code, or the next line of a config. A file-level
        `# rllint: noqa: CODE` covers every line.
        """
        comments: List[SuppressionComment] = []
        file_selectors: Optional[Tuple[str, ...]] = None
        if not _MENTIONS.search(text):
            return cls(comments, file_selectors)
        statements: Optional[_Statements] = None  # built only for an ignore comment on its own line
        found = _comments(text) if tree is not None else _line_comments(text)
        for line, column, own_line, comment in found:
            file_level = _file_level(comment) if own_line else None
            if file_level is not None:
                if not file_level:
                    file_selectors = ()
                elif file_selectors != ():
                    file_selectors = (file_selectors or ()) + file_level
                    comments.append(SuppressionComment(line, column, file_level, _EVERY_LINE, kind="file"))
                continue
            for match in _NOQA.finditer(comment):
                codes = _split(match.group("codes") or "")
                comments.append(SuppressionComment(line, column, codes, (line, line)))
            for match in _IGNORE.finditer(comment):
                selectors = _split(match.group("selectors"))
                if not selectors:
                    continue
                covered = (line, line)
                if own_line:  # a comment on a line of its own covers the next statement
                    if statements is None:
                        statements = _Statements(_statement_extents(tree) if tree is not None else _code_lines(text))
                    covered = statements.after(line) or covered
                comments.append(SuppressionComment(line, column, selectors, covered, kind="ignore"))
        return cls(comments, file_selectors)


def _file_level(comment: str) -> Optional[Tuple[str, ...]]:
    """The selectors of a file-level `# rllint: noqa[: CODES]` (() for the whole file); None for any other comment."""
    match = _FILE_NOQA.match(comment)
    if match is None:
        return None
    rest = comment[match.end():].strip()
    if not rest:
        return ()
    if not rest.startswith(":") or not _SELECTOR_LIST.fullmatch(rest, 1):
        return None
    return _split(rest[1:]) or None


def _split(selectors: str) -> Tuple[str, ...]:
    return tuple(part for part in re.split(r"[\s,]+", selectors.strip()) if part)


def _comments(text: str) -> Iterable[Tuple[int, int, bool, str]]:
    """(line, 1-based column, whether it stands on a line of its own, text) of each comment.

    Tokenizing keeps `# noqa`
    inside string literals from counting; a file that does not tokenize falls back
    to a plain scan of its lines.
    """
    found = []
    try:
        for token in tokenize.generate_tokens(python_readline(text)):
            if token.type == tokenize.COMMENT:
                row, col = token.start
                found.append((row, col + 1, not token.line[:col].strip(), token.string))
        return found
    except (tokenize.TokenError, SyntaxError, IndentationError):
        return _line_comments(text)


def _line_comments(text: str) -> List[Tuple[int, int, bool, str]]:
    """Comments found by scanning lines for `#`: for configs, and Python that does not tokenize."""
    found = []
    for number, line in enumerate(split_lines(text), start=1):
        line = line.rstrip("\r\n")
        index = line.find("#")
        if index >= 0:
            found.append((number, index + 1, not line[:index].strip(), line[index:]))
    return found


def _code_lines(text: str) -> Dict[int, int]:
    """Each line of a config that holds more than a comment covers itself alone."""
    return {number: number for number, line in enumerate(split_lines(text), start=1)
            if line.strip() and not line.lstrip().startswith("#")}


def _statement_extents(tree: ast.Module) -> Dict[int, int]:
    """First line of each statement (decorators included) -> its last line (the widest one)."""
    extents: Dict[int, int] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.stmt):
            start = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])
            end = getattr(node, "end_lineno", None) or node.lineno
            extents[start] = max(extents.get(start, start), end)
    return extents


class _Statements:
    """First line of each statement -> its last line, searchable by line in logarithmic time."""

    def __init__(self, extents: Dict[int, int]) -> None:
        self._extents = extents
        self._starts = sorted(extents)

    def after(self, line: int) -> Optional[Tuple[int, int]]:
        """The lines of the first statement that starts below `line`."""
        index = bisect.bisect_right(self._starts, line)
        if index == len(self._starts):
            return None
        start = self._starts[index]
        return start, self._extents[start]
