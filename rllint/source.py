"""A source file as rllint sees it: decoded text, lines, and its suppression comments."""
from __future__ import annotations

import ast
import io
import re
import tokenize
from dataclasses import dataclass, field
from typing import Dict, Iterable, List, Optional, Set, Tuple


class SourceError(Exception):
    """The bytes of a file cannot be turned into Python text (bad encoding, NUL bytes)."""


def decode_source(data: bytes) -> str:
    """Decode as CPython does: a BOM first, then a PEP 263 coding cookie, else UTF-8."""
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
    return text[1:] if text.startswith("\ufeff") else text


_NOQA = re.compile(r"#\s*noqa(?::\s*(?P<codes>[A-Za-z]+[0-9]+(?:[\s,]+[A-Za-z]+[0-9]+)*))?", re.IGNORECASE)
_IGNORE = re.compile(r"#\s*rllint:\s*ignore\[(?P<selectors>[^\]]*)\]", re.IGNORECASE)
_MENTIONS = re.compile(r"noqa|rllint", re.IGNORECASE)  # a file without these words has no suppression
_FILE_NOQA = re.compile(r"^\s*#\s*rllint:\s*noqa(?::\s*(?P<selectors>[\w\-, ]+))?\s*$", re.IGNORECASE)


@dataclass
class SuppressionComment:
    """One comment that silences findings; `selectors` is empty for a bare `# noqa`."""

    line: int
    column: int  # 1-based column of the comment
    selectors: Tuple[str, ...]
    lines: Tuple[int, int]  # first and last line covered
    used: Set[str] = field(default_factory=set)

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

    def suppresses(self, line: int, code: str, name: str) -> bool:
        if self.file_selectors is not None:
            if not self.file_selectors:
                return True
            if any(s.upper() == code or s.lower() == name for s in self.file_selectors):
                return True
        hit = False
        for comment in self.comments:
            # Every comment that matches is marked used, so none is reported as stale.
            hit = comment.covers(line, code, name) or hit
        return hit

    @classmethod
    def parse(cls, text: str, tree: Optional[ast.Module]) -> "Suppressions":
        """Suppressions of a Python file (`tree` given) or of a YAML / shell file (`tree` None).

        In Python, comments are found by tokenizing, so a `# noqa` inside a string does not
        count; in configs, by scanning lines. An ignore comment on a line of its own covers
        the next statement of Python code, or the next line of a config.
        """
        comments: List[SuppressionComment] = []
        file_selectors: Optional[Tuple[str, ...]] = None
        if not _MENTIONS.search(text):
            return cls(comments, file_selectors)
        statement_ends: Optional[Dict[int, int]] = None  # built only for an ignore comment on its own line
        found = _comments(text) if tree is not None else _line_comments(text)
        for line, column, own_line, comment in found:
            file_level = _FILE_NOQA.match(comment)
            if file_level and own_line:
                found = _split(file_level.group("selectors") or "")
                if not found:
                    file_selectors = ()
                elif file_selectors != ():
                    file_selectors = (file_selectors or ()) + found
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
                    if statement_ends is None:
                        statement_ends = _statement_extents(tree) if tree is not None else _code_lines(text)
                    covered = _next_statement(line, statement_ends) or covered
                comments.append(SuppressionComment(line, column, selectors, covered))
        return cls(comments, file_selectors)


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
        for token in tokenize.generate_tokens(io.StringIO(text).readline):
            if token.type == tokenize.COMMENT:
                row, col = token.start
                found.append((row, col + 1, not token.line[:col].strip(), token.string))
        return found
    except (tokenize.TokenError, SyntaxError, IndentationError):
        return _line_comments(text)


def _line_comments(text: str) -> List[Tuple[int, int, bool, str]]:
    """Comments found by scanning lines for `#`: for configs, and Python that does not tokenize."""
    found = []
    for number, line in enumerate(text.splitlines(), start=1):
        index = line.find("#")
        if index >= 0:
            found.append((number, index + 1, not line[:index].strip(), line[index:]))
    return found


def _code_lines(text: str) -> Dict[int, int]:
    """Each line of a config that holds more than a comment covers itself alone."""
    return {number: number for number, line in enumerate(text.splitlines(), start=1)
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


def _next_statement(line: int, extents: Dict[int, int]) -> Optional[Tuple[int, int]]:
    following = [start for start in extents if start > line]
    if not following:
        return None
    start = min(following)
    return start, extents[start]
