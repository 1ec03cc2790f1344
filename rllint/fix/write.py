"""Writing a fixed file so that it ends complete or untouched, never in between (issue 26.1).

The new bytes go to a temporary file in the file's own folder, which is read back and must decode to
the intended text; only then does `os.replace` put it in the file's place, in one step, with the
file's mode. Whatever fails on the way (a codec that cannot hold the text, a full disk, a read-only
file, a link out of the linted tree) leaves the file as it was, and `WriteError` says why in one line.
"""
from __future__ import annotations

import codecs
import io
import os
import stat
import tokenize
from typing import Callable, Sequence

from rllint.source import SourceError, decode_config, decode_source, write_beside

# Byte-order marks and the codecs that read (and write) them, as `decode_config` picks them.
_CONFIG_BOMS = ((codecs.BOM_UTF32_LE, "utf-32"), (codecs.BOM_UTF32_BE, "utf-32"), (codecs.BOM_UTF8, "utf-8-sig"),
                (codecs.BOM_UTF16_LE, "utf-16"), (codecs.BOM_UTF16_BE, "utf-16"))


class WriteError(Exception):
    """A fixed file that was not written; the message says why, and the file is as it was."""


def writable_path(path: str, roots: Sequence[str]) -> str:
    """The file that changing `path` writes: its real path, which must lie in the linted tree (in a folder
    the run was given, or in the folder of a file it was given). A symbolic link into the tree is written
    through (the link stays a link); one that leads out of it is not followed: rllint changes only files
    it was asked to lint, and a hostile tree cannot make it write elsewhere."""
    real = os.path.realpath(path)
    for root in roots:
        top = os.path.realpath(root if os.path.isdir(root) else os.path.dirname(root) or ".")
        if real.startswith(top.rstrip(os.sep) + os.sep):
            return real
    raise WriteError(f"is a symbolic link (or lies in a linked folder) to {real}, outside the linted tree; "
                     "not changed: rllint never writes through a link out of the tree")


def source_bytes(original: bytes, before: str, after: str, kind: str) -> bytes:
    """`after` encoded as the file whose bytes are `original` (and text `before`) is: a Python file in
    the codec of its coding cookie or BOM, a YAML or shell file in that of its BOM. The codec must give
    back the file's own bytes for `before`: one that does not (`unicode_escape`, which would put the
    whole file on one line; bytes that were not text) would change more than the fix."""
    if kind == "python":
        try:
            encoding, _ = tokenize.detect_encoding(io.BytesIO(original).readline)
        except SyntaxError as error:
            raise WriteError(f"cannot be written back: {error}") from None
        codec = "utf-8" if encoding == "utf-8-sig" else encoding
        bom = codecs.BOM_UTF8 if original.startswith(codecs.BOM_UTF8) else b""
    else:
        codec = next((name for mark, name in _CONFIG_BOMS if original.startswith(mark)), "utf-8")
        encoding, bom = codec, b""
    try:
        if bom + before.encode(codec) != original:
            raise WriteError(f"not changed: its encoding ({encoding}) does not write its own text back as the "
                             "same bytes, so rewriting it would change more than the fix")
        return bom + after.encode(codec)
    except (LookupError, TypeError, ValueError) as error:  # UnicodeError; a codec that is no text encoding
        raise WriteError(f"not changed: its encoding ({encoding}) cannot write the fixed text ({error})") from None


def reads_as(text: str, kind: str) -> Callable[[bytes], bool]:
    """Whether bytes read back as `text`, as rllint reads a file of `kind` (its cookie or BOM)."""
    def check(data: bytes) -> bool:
        if kind != "python":
            return decode_config(data) == text
        try:
            return decode_source(data) == text
        except SourceError:
            return False
    return check


def replace_file(path: str, original: bytes, new: bytes, reads_back: Callable[[bytes], bool]) -> None:
    """Put `new` in place of the file `path` (a real path, from `writable_path`), whose bytes were
    `original`, atomically and with its mode kept; raise WriteError and leave the file untouched when
    it is read-only, has changed since it was read, or the new bytes cannot be written and read back."""
    try:
        status = os.stat(path)
        with open(path, "rb") as handle:
            current = handle.read(len(original) + 1)
    except OSError as error:
        raise WriteError(f"cannot be read again: {error.strerror or error}; not changed") from None
    if not os.access(path, os.W_OK) or not status.st_mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH):
        raise WriteError("is read-only; not changed")
    if current != original:
        raise WriteError("changed while rllint was fixing it; not changed (run rllint again)")

    def verify(temporary: str) -> None:
        with open(temporary, "rb") as handle:
            written = handle.read()
        if written != new or not reads_back(written):
            raise WriteError("not changed: the fixed text did not read back as written (a bug in rllint: please "
                             "report it)")

    try:
        write_beside(path, new, f".{os.path.basename(path)}.", ".rllint-tmp", stat.S_IMODE(status.st_mode), verify)
    except OSError as error:
        raise WriteError(f"cannot be written: {error.strerror or error}; not changed") from None
