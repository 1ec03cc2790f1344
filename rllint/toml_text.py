"""TOML text read with the guards tomllib needs, for rllint's own config files and for the files of settings
a linted project reads (`tomllib.load`): a layer below both, so that the fact engine need not import the
settings."""
from __future__ import annotations

import re
import sys
from typing import Any, Dict

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python < 3.11 only
    import tomli as tomllib

# tomllib's time and memory grow with the square of a dotted key's length (`a.a.a... = 1` of 10,000
# parts: 4 s and 400 MB): a line that joins more keys than this is refused before it is parsed.
MAX_DOTTED_PARTS = 100
# A dot that joins two keys: not a decimal point (between digits), not part of `..`.
_KEY_DOT = re.compile(r"(?<![.\d])\.(?!\.)|(?<=\d)\.(?![.\d])")
_ONE_LINE_STRING = re.compile(r'"(?:[^"\\\n]|\\.)*"|\'[^\'\n]*\'')


class TomlError(ValueError):
    """TOML text that tomllib refuses or cannot bear; `str(error)` is the one-line message."""


def _key_dots(line: str) -> int:
    """About how many dots of a TOML line join keys (those of strings and numbers not counted)."""
    return len(_KEY_DOT.findall(_ONE_LINE_STRING.sub("", line)))


def parse_toml(text: str) -> Dict[str, Any]:
    """TOML text as a table; TomlError for what tomllib refuses or cannot bear."""
    for number, line in enumerate(text.splitlines(), start=1):
        if line.count(".") > MAX_DOTTED_PARTS and _key_dots(line) > MAX_DOTTED_PARTS:
            raise TomlError(f"invalid TOML: line {number} joins more than {MAX_DOTTED_PARTS} keys with dots; "
                            "nested too deeply to read")
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        detail = str(error)  # ends with "(at line L, column C)" or "(at end of document)"
        if "line" not in detail:
            detail += f"; the document ends on line {max(1, len(text.splitlines()))}"
        raise TomlError(f"invalid TOML: {detail}") from None
    except (RecursionError, MemoryError):  # arrays or inline tables nested thousands deep
        raise TomlError("invalid TOML: nested too deeply to read") from None
