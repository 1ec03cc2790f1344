"""Control characters of file names and messages, made visible before anything is printed.

A file name, or a value a message quotes, may hold a newline (a forged `::error` line that GitHub
Actions reads as an annotation, a forged finding for whatever parses flake8's lines) or a terminal
escape (colours, a cleared screen, a new window title). Every text output and every line on
standard error shows them as Python writes them in a string: `\\n`, `\\x1b`, `\\u2028`.
"""
import re

# C0 controls, DEL and C1 controls, the Unicode line and paragraph separators, and the bidirectional
# overrides and isolates (which reorder what a terminal shows).
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
# What `json.dumps(..., ensure_ascii=False)` leaves raw: it escapes C0 itself, and its own newlines
# (indentation) are no control character of the data.
_JSON_RAW = re.compile("[\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def printable(text: str) -> str:
    """`text` with each control character as its Python escape (`\\n`, `\\x1b`, `\\u202e`)."""
    return _CONTROL.sub(lambda match: repr(match.group())[1:-1], text)


def json_printable(document: str) -> str:
    """A JSON document from `json.dumps(..., ensure_ascii=False)` with the control characters that it
    leaves raw written as `\\uXXXX` escapes; they occur only inside strings, so the JSON is the same."""
    return _JSON_RAW.sub(lambda match: f"\\u{ord(match.group()):04x}", document)
