"""Launch configs as (key, value, position) records: Hydra / TRL YAML and shell launch scripts.

Real RL runs set their hyperparameters far from the training loop: verl in Hydra YAML
and `key=value` overrides, OpenRLHF in shell scripts with `--flag value` arguments,
TRL in YAML files for its CLI. The RL6xx and RL306 rules judge those values where they
are written, so every record carries the exact line and column of the value, and the
entry point of the command it was given to (an SFT stage and a PPO stage of one script
are judged apart).

YAML lists: every element gets an index part (`trainer.logger.0`, `defaults.1.actor@...`),
lists of scalars included, so Hydra `defaults:` lists are entries like any other.

Shell: this is a word scanner, not a shell: it splits commands at `;`, `&&`, `|`,
newlines and parentheses, drops comments, redirections and here-document bodies, and
keeps every word's offset in the original text (`shlex` gives no columns, so words are
scanned here and unquoted by the POSIX rules). Variables and arrays are looked up by
text position: the last assignment before the use, else (a function body that runs
after a later assignment) the first one after it. A value taken from a variable is
positioned at the literal the variable was assigned; a value that is not a literal
(`$(date)`, `"$DIR/x"`) is kept as written, at the word.

RL or not: `rl_entries` gives what an RL-only rule judges: the entries of commands that
launch an RL trainer (`command_is_rl`, per command), or every entry of a YAML file that
`is_rl_config`.
"""
from __future__ import annotations

import bisect
import re
from dataclasses import dataclass
from typing import Dict, Iterable, List, NamedTuple, Optional, Tuple, Union

from rllint.files import is_test_path

__all__ = [
    "ConfigEntry", "ConfigSyntaxError", "ConfigTooLarge", "read_yaml", "read_shell",
    "is_rl_config", "command_is_rl", "rl_entries", "mentions_rl", "LaunchConfig",
]


@dataclass(frozen=True)
class ConfigEntry:
    """One key set by a launch config, positioned where its value is written.

    `invocation` groups the entries given to one run: the ordinal of the shell command
    (0, 1, ...), or of the YAML document; None for shell variables and arrays that no
    command received. Rules that judge combinations (the advantage estimator next to the
    group size, two KL switches) compare entries of one invocation only.
    """

    key: str
    value: object
    text: str
    line: int
    column: int
    command: Optional[str]
    source: str
    invocation: Optional[int] = None


class ConfigSyntaxError(Exception):
    """A YAML file that does not parse; line and column are 1-based."""

    def __init__(self, message: str, line: int, column: int) -> None:
        super().__init__(f"{message} (line {line}, column {column})")
        self.message = message
        self.line = line
        self.column = column


class ConfigTooLarge(Exception):
    """A YAML file whose aliases and merges would expand beyond what is read of one file (an alias bomb)."""


class _Positions:
    """Offset -> 1-based (line, column), both counted in characters."""

    def __init__(self, text: str) -> None:
        self._starts = [0] + [m.end() for m in re.finditer("\n", text)]

    def at(self, offset: int) -> Tuple[int, int]:
        index = bisect.bisect_right(self._starts, offset) - 1
        return index + 1, offset - self._starts[index] + 1


# ---------------------------------------------------------------------------- YAML

# YAML 1.2 floats without a dot (`1e-6`, `5E+3`): PyYAML's YAML 1.1 resolver reads them as
# strings, while OmegaConf (Hydra) and argparse (TRL's YAML defaults) read numbers.
_YAML12_FLOAT = re.compile(r"^[-+]?(?:[0-9][0-9_]*)(?:\.[0-9_]*)?[eE][-+]?[0-9]+$")
_SCALAR_TAGS = {
    "tag:yaml.org,2002:int": "construct_yaml_int",
    "tag:yaml.org,2002:float": "construct_yaml_float",
    "tag:yaml.org,2002:bool": "construct_yaml_bool",
    "tag:yaml.org,2002:null": "construct_yaml_null",
}
_yaml_tools = None


def _yaml():
    """(yaml module, Loader class, constructor) built on first use: most runs never read YAML."""
    global _yaml_tools
    if _yaml_tools is None:
        import yaml

        base = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
        loader = type("_ConfigLoader", (base,), {})
        loader.add_implicit_resolver("tag:yaml.org,2002:float", _YAML12_FLOAT, list("-+0123456789"))
        _yaml_tools = (yaml, loader, yaml.constructor.SafeConstructor())
    return _yaml_tools


# What reading one YAML file may cost: a unit per node visited and per character of the keys built.
# Aliases and `<<` merges are expanded where they are used, as Hydra and OmegaConf see them, and 486
# bytes of nested aliases expand to billions of entries; a real config costs a few thousand units.
_YAML_BUDGET = 5_000_000


def read_yaml(text: str) -> List[ConfigEntry]:
    """Every scalar of every document, under its dotted key; anchors, aliases and `<<` merges resolved.

    Raises ConfigSyntaxError, or ConfigTooLarge when aliases expand beyond `_YAML_BUDGET`.
    """
    yaml, loader, _ = _yaml()
    text = text[1:] if text.startswith("\ufeff") else text  # the parser's offsets do not count a BOM
    entries: List[ConfigEntry] = []
    budget = [_YAML_BUDGET]
    try:
        for document, root in enumerate(yaml.compose_all(text, Loader=loader)):
            if root is not None:
                _walk_yaml(root, text, document, entries, budget)
    except yaml.MarkedYAMLError as error:
        mark = error.problem_mark or error.context_mark
        message = "; ".join(part for part in (error.context, error.problem) if part) or str(error)
        raise ConfigSyntaxError(message, mark.line + 1 if mark else 1, mark.column + 1 if mark else 1) from None
    except RecursionError:  # the pure-Python parser, where libyaml is missing, recurses per level
        raise ConfigSyntaxError("nested too deeply to read", 1, 1) from None
    except yaml.YAMLError as error:  # reader errors (control characters) carry an offset only
        line, column = _Positions(text).at(getattr(error, "position", 0) or 0)
        raise ConfigSyntaxError(getattr(error, "reason", None) or str(error), line, column) from None
    return entries


def _walk_yaml(root, text: str, document: int, out: List[ConfigEntry], budget: List[int]) -> None:
    """Depth first, in document order, with an explicit stack: libyaml nests up to 1,000 levels.

    `budget` (one number, shared by the documents of a file) is spent per node and per key character.
    """
    stack = [(root, "", frozenset())]
    merged: Dict[int, Dict[str, object]] = {}  # each mapping's pairs, merges resolved once
    while stack:
        node, key, active = stack.pop()
        budget[0] -= 1 + len(key)
        if budget[0] < 0:
            raise ConfigTooLarge("its aliases and merges expand to too many entries (an alias bomb?); not read")
        if node.id == "scalar":
            if key:
                out.append(_yaml_entry(node, key, text, document))
            continue
        if id(node) in active:  # a recursive alias (`&a [*a]`)
            continue
        active = active | {id(node)}
        prefix = key + "." if key else ""
        if node.id == "mapping":
            children = [(value, prefix + name) for name, value in _mapping_pairs(node, merged, frozenset()).items()]
        else:
            children = [(value, prefix + str(index)) for index, value in enumerate(node.value)]
        stack.extend((value, name, active) for value, name in reversed(children))


def _yaml_entry(node, key: str, text: str, document: int) -> ConfigEntry:
    start = node.start_mark
    index, line, column = start.index, start.line + 1, start.column + 1
    properties = _PROPERTIES.match(text, index) if text[index:index + 1] in ("&", "!") else None
    if properties:  # `&anchor !tag value`: the value starts after its properties
        skipped = properties.group()
        index = properties.end()
        line += skipped.count("\n")
        column = index - text.rfind("\n", 0, index) if "\n" in skipped else column + len(skipped)
    return ConfigEntry(key, _yaml_scalar(node), text[index:node.end_mark.index].rstrip("\r\n"),
                       line, column, None, "yaml", document)


_MERGE = "tag:yaml.org,2002:merge"
_PROPERTIES = re.compile(r"(?:[&!][^\s,\[\]{}]*\s+)+")


def _mapping_pairs(node, memo: Dict[int, Dict[str, object]], merging: frozenset) -> Dict[str, object]:
    """Key text -> value node; keys written in the mapping win over merged ones, earlier merges over later.

    Computed once per mapping (`memo`): a mapping merged into many others is not merged again per use."""
    if id(node) in memo:
        return memo[id(node)]
    if not any(key.tag == _MERGE for key, _ in node.value):
        pairs = {key.value: value for key, value in node.value if key.id == "scalar"}  # complex keys name nothing
        memo[id(node)] = pairs
        return pairs
    merging = merging | {id(node)}
    written = {key.value for key, _ in node.value if key.id == "scalar" and key.tag != _MERGE}
    pairs = {}
    for key, value in node.value:
        if key.tag == _MERGE:
            for source in value.value if value.id == "sequence" else [value]:
                if source.id == "mapping" and id(source) not in merging:
                    for name, inherited in _mapping_pairs(source, memo, merging).items():
                        if name not in written:
                            pairs.setdefault(name, inherited)
        elif key.id == "scalar":
            pairs[key.value] = value
    memo[id(node)] = pairs
    return pairs


def _yaml_scalar(node) -> object:
    """YAML's own typing (plus 1.2 floats); strings for other tags and values that do not construct."""
    method = _SCALAR_TAGS.get(node.tag)
    if method is not None:
        try:
            return getattr(_yaml()[2], method)(node)
        except (ValueError, TypeError, KeyError, ArithmeticError):
            pass
    return node.value


# ---------------------------------------------------------------------------- TOML

_TOML_TABLE = re.compile(r"^\s*\[([^\[\]]+)\]\s*(?:#.*)?$")
_TOML_KEY = re.compile(r"^\s*([A-Za-z0-9_\-]+(?:\s*\.\s*[A-Za-z0-9_\-]+)*)\s*=\s*")


def read_toml(text: str) -> List[ConfigEntry]:
    """Every scalar of a TOML file of settings under its dotted key (list elements by index, as in YAML),
    positioned at the value of the line that writes it (or of the key that holds it, for an inline table or an
    array). Raises ConfigSyntaxError where tomllib refuses the text; arrays of tables (`[[x]]`, whose keys
    repeat) and quoted keys are not positioned here and make the file unreadable."""
    from rllint.toml_text import TomlError, parse_toml

    try:
        document = parse_toml(text)
    except TomlError as error:
        raise ConfigSyntaxError(str(error), 1, 1) from None
    written: Dict[str, Tuple[int, int, str]] = {}
    prefix = ""
    for number, line in enumerate(text.splitlines(), start=1):
        if line.lstrip().startswith(("[[", '"', "'")):
            raise ConfigSyntaxError("an array of tables or a quoted key", number, 1)
        table = _TOML_TABLE.match(line)
        if table:
            prefix = "".join(table.group(1).split()) + "."
            continue
        key = _TOML_KEY.match(line)
        if key:
            written.setdefault(prefix + "".join(key.group(1).split()),
                               (number, key.end() + 1, line[key.end():].split(" #", 1)[0].strip()))
    entries: List[ConfigEntry] = []
    pending: List[Tuple[str, object, Tuple[int, int, str]]] = [("", document, (1, 1, ""))]
    while pending:
        key, found, where = pending.pop()
        where = written.get(key, where)
        if isinstance(found, dict):
            pending.extend((f"{key}.{k}" if key else k, v, where) for k, v in reversed(list(found.items())))
        elif isinstance(found, list):
            pending.extend((f"{key}.{i}", v, where) for i, v in reversed(list(enumerate(found))))
        else:
            entries.append(ConfigEntry(key, found, where[2] if key in written else str(found), where[0], where[1],
                                       None, "toml", 0))
    return entries


# --------------------------------------------------------------------------- shell

class _Word(NamedTuple):
    start: int
    raw: str  # the word as written, quotes included


class _Array(NamedTuple):
    name: str
    append: bool
    items: Tuple[_Word, ...]
    start: int
    end: int


class _Heredoc:
    """A here-document: its body's span is known once the scanner reaches the end of the command's line."""

    __slots__ = ("delimiter", "strip_tabs", "quoted", "start", "end")

    def __init__(self, delimiter: str, strip_tabs: bool, quoted: bool) -> None:
        self.delimiter, self.strip_tabs, self.quoted = delimiter, strip_tabs, quoted
        self.start = self.end = 0


class _Value(NamedTuple):
    value: object
    text: str
    start: int
    literal: bool  # no expansion left in it


class _Held(NamedTuple):
    """Text after the shell's quote removal and variable expansion, each character with the offset in the
    script where it is written (a variable's characters where its assignment writes them)."""

    text: str
    offsets: Tuple[int, ...]
    substitutes: bool  # it keeps a command substitution (`$(...)`, backticks) that only running would expand
    spaced: bool  # it holds several words (white space outside command substitutions)


_ASSIGNMENT = re.compile(r"([A-Za-z_]\w*)(\+?)=")
_NAME = re.compile(r"[A-Za-z_]\w*\Z")
_CONTINUATION = re.compile(r"\\\r?\n")
_SPLIT_WORD = re.compile(r"(?:[^\s\\]|\\(?!\r?\n))+")
_ARRAY_OPEN = re.compile(r"[A-Za-z_]\w*\+?=\Z")
_PLAIN_REF = re.compile(r"\$(?:([A-Za-z_]\w*)|\{([A-Za-z_]\w*)(?:(:?[-=])(.*))?\})\Z", re.S)
_MAX_HELD = 128  # variables expanded inside one another's values (a `CMD="$CMD --x"` chain is one per link)
_MAX_EVAL = 4  # `eval` of text that itself runs `eval`
_VAR_REF = re.compile(
    r'(?P<q>"?)\$(?:(?P<name>[A-Za-z_]\w*)|\{(?P<bname>[A-Za-z_]\w*)(?:(?P<op>:?[-=])(?P<default>[^}]*))?\})(?P=q)\Z')
_ARRAY_REF = re.compile(r'"?\$\{(?P<name>[A-Za-z_]\w*)\[[@*]\]\}"?\Z')
_OVERRIDE = re.compile(r"(?:\+\+|\+)?([A-Za-z_][\w\-]*(?:[./@][\w\-]+)*)=")
_INT = re.compile(r"[-+]?\d+\Z")
_FLOAT = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?\Z")
_OPERATORS = ("&&", "||", ";;", ";&", "|&", ";", "|", "&", "(", ")")
_WORD_END = frozenset(" \t\r\n;&|<>()")
_PLAIN_RUN = re.compile(r"[^ \t\r\n;&|<>()\\'\"`$]+")
_RESERVED_PREFIX = frozenset({"{", "}", "!", "then", "do", "else", "elif", "if", "while", "until", "time",
                              "fi", "done", "esac"})
_COMPOUND = frozenset({"for", "select", "case", "function", "test"})
_DECLARE = frozenset({"export", "local", "declare", "typeset", "readonly"})
# Programs that run the command after their own options (and this many positional words).
_WRAPPERS = {"env": 0, "nohup": 0, "exec": 0, "time": 0, "setsid": 0, "sudo": 0, "command": 0, "srun": 0,
             "mpirun": 0, "numactl": 0, "stdbuf": 0, "nice": 0, "timeout": 1, "taskset": 1}
_PYTHON = re.compile(r"python[\d.]*")
# A launcher option is never followed by its value when that word is one of these programs.
_PROGRAM = re.compile(r"python[\d.]*|torchrun|deepspeed|accelerate|trl|bash|sh")
# Programs whose arguments set no training hyperparameter.
_NOT_LAUNCHERS = frozenset({
    "echo", "printf", "set", "unset", "cd", "pushd", "popd", "mkdir", "rm", "cp", "mv", "ln", "ls", "cat", "tee",
    "touch", "chmod", "source", ".", "exit", "return", "shift", "trap", "wait", "sleep", "kill", "eval", "read",
    "let", "true", "false", "git", "pip", "pip3", "wget", "curl", "sed", "awk", "grep", "head", "tail", "tar",
    "find", "xargs", "sort", "wc", "date", "basename", "dirname", "realpath", "nvidia-smi", "huggingface-cli",
    "conda", "ulimit", "alias", "shopt", "hostname", "whoami", "seq",
})


def read_shell(text: str) -> List[ConfigEntry]:
    """Flags and Hydra overrides of every command, and every `VAR=value` assignment (see the module docstring).

    Raises ConfigSyntaxError only for quotes and substitutions nested too deeply to scan.
    """
    try:
        return _Shell(text).read()
    except RecursionError:
        raise ConfigSyntaxError("quotes and substitutions nested too deeply to read", 1, 1) from None


def _line_end(text: str, i: int) -> int:
    end = text.find("\n", i)
    return len(text) if end < 0 else end


def _quote_end(text: str, i: int) -> int:
    """End of a double-quoted string whose body starts at i."""
    n = len(text)
    while i < n:
        c = text[i]
        if c == "\\":
            i += 2
        elif c == '"':
            return i + 1
        elif c == "$" and text[i + 1:i + 2] in ("(", "{"):
            i = _balanced_end(text, i + 1)
        elif c == "`":
            i = _backtick_end(text, i + 1)
        else:
            i += 1
    return n


def _backtick_end(text: str, i: int) -> int:
    n = len(text)
    while i < n and text[i] != "`":
        i += 2 if text[i] == "\\" else 1
    return min(i + 1, n)


def _balanced_end(text: str, i: int) -> int:
    """End of the `(...)` or `{...}` group opening at i (quotes and nested groups skipped)."""
    opening = text[i]
    closing = ")" if opening == "(" else "}"
    depth, n = 0, len(text)
    while i < n:
        c = text[i]
        if c == "\\":
            i += 2
            continue
        if c == "'":
            end = text.find("'", i + 1)
            i = n if end < 0 else end + 1
            continue
        if c == '"':
            i = _quote_end(text, i + 1)
            continue
        if c == "`":
            i = _backtick_end(text, i + 1)
            continue
        if c == "$" and text[i + 1:i + 2] in ("(", "{") and text[i + 1] != opening:
            i = _balanced_end(text, i + 1)
            continue
        if c == opening:
            depth += 1
        elif c == closing:
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    return n


def _word_end(text: str, i: int) -> int:
    n = len(text)
    while i < n:
        plain = _PLAIN_RUN.match(text, i)
        if plain:
            i = plain.end()
            continue
        c = text[i]
        if c in _WORD_END:
            break
        if c == "\\":
            i += 2
        elif c == "'":
            end = text.find("'", i + 1)
            i = n if end < 0 else end + 1
        elif c == '"':
            i = _quote_end(text, i + 1)
        elif c == "`":
            i = _backtick_end(text, i + 1)
        elif c == "$" and text[i + 1:i + 2] in ("(", "{"):
            i = _balanced_end(text, i + 1)
        else:
            i += 1
    return min(i, n)


_QUOTED_PARTS = re.compile(r"""\\(.?)|'([^']*)'?|"((?:\\.|[^"\\])*)"?|([^\\'"]+)""", re.S)
_DOUBLE_QUOTE_ESCAPE = re.compile(r'\\([$`"\\\n])')
_SPECIAL = re.compile(r"[\\'\"$`]")


def _unquote(raw: str) -> Tuple[str, bool]:
    """(the word after quote removal, whether it still holds an expansion: `$...` or a backtick)."""
    if not _SPECIAL.search(raw):
        return raw, False
    out: List[str] = []
    expands = False
    for escaped, single, double, plain in _QUOTED_PARTS.findall(raw):
        if single or double or plain:
            if double:
                expands = expands or bool(re.search("[$`]", _DOUBLE_QUOTE_ESCAPE.sub("", double)))
                double = _DOUBLE_QUOTE_ESCAPE.sub(lambda m: m.group(1).strip("\n"), double)
            expands = expands or "$" in plain or "`" in plain
            out.append(single or double or plain)
        elif escaped != "\n":
            out.append(escaped)
    return "".join(out), expands


def _shell_scalar(word: str) -> object:
    """Numbers and booleans as an argument parser would read them; `null`/`None` as None; else the string."""
    if _INT.match(word):
        return int(word)
    if _FLOAT.match(word):
        return float(word)
    lowered = word.lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    if lowered in ("null", "none"):
        return None
    return word


def _is_flag(word: str) -> bool:
    return word.startswith("-") and len(word) > 1 and not _FLOAT.match(word)


_Token = Union[_Word, _Array, _Heredoc, str]  # a str is an operator or a newline


def _tokens(text: str) -> List[_Token]:
    tokens: List[_Token] = []
    heredocs: List[_Heredoc] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c in " \t\r":
            i += 1
        elif c == "\\" and text[i + 1:i + 2] in ("\n", "\r"):
            i = _line_end(text, i) + 1
        elif c == "#":
            i = _line_end(text, i)
        elif c == "\n":
            tokens.append("\n")
            i += 1
            for heredoc in heredocs:
                heredoc.start = i
                i, heredoc.end = _heredoc_end(text, i, heredoc.delimiter, heredoc.strip_tabs)
            heredocs = []
        elif c in "<>" or text.startswith("&>", i):
            i = _redirection(text, i, tokens, heredocs)
        elif text.startswith("((", i) and (not tokens or isinstance(tokens[-1], str)):
            i = _balanced_end(text, i)  # arithmetic command
        elif c in ";&|()":
            operator = next(op for op in _OPERATORS if text.startswith(op, i))
            tokens.append(operator)
            i += len(operator)
        else:
            end = _word_end(text, i)
            raw = text[i:end]
            if text[end:end + 1] == "(" and _ARRAY_OPEN.match(raw):
                items, end = _array_items(text, end + 1)
                tokens.append(_Array(raw.rstrip("+="), raw.endswith("+="), items, i, end))
            else:
                tokens.append(_Word(i, raw))
            i = max(end, i + 1)
    return tokens


def _array_items(text: str, i: int) -> Tuple[Tuple[_Word, ...], int]:
    items: List[_Word] = []
    n = len(text)
    while i < n:
        c = text[i]
        if c in " \t\r\n":
            i += 1
        elif c == "\\" and text[i + 1:i + 2] in ("\n", "\r"):
            i = _line_end(text, i) + 1
        elif c == "#":
            i = _line_end(text, i)
        elif c == ")":
            return tuple(items), i + 1
        else:
            end = _word_end(text, i)
            if end > i:
                items.append(_Word(i, text[i:end]))
            i = max(end, i + 1)
    return tuple(items), n


def _redirection(text: str, i: int, tokens: List[_Token], heredocs: List[_Heredoc]) -> int:
    """Skip a redirection and its target; a here-document's delimiter is remembered for the next newline."""
    if tokens and isinstance(tokens[-1], _Word) and tokens[-1].raw.isdigit() \
            and tokens[-1].start + len(tokens[-1].raw) == i:
        tokens.pop()  # the io number of `2>&1`
    n = len(text)
    j = i + 1 if text[i] == "&" else i
    heredoc = strip_tabs = False
    if text.startswith("<<<", j):
        j += 3
    elif text.startswith("<<", j):
        heredoc = True
        j += 2
        if text.startswith("-", j):
            strip_tabs = True
            j += 1
    elif text[j + 1:j + 2] == "(":
        return _balanced_end(text, j + 1)  # process substitution
    else:
        while j < n and text[j] in "<>&|":
            j += 1
    while j < n and text[j] in " \t":
        j += 1
    end = _word_end(text, j)
    if heredoc:
        delimiter = _unquote(text[j:end])[0]
        heredocs.append(_Heredoc(delimiter, strip_tabs, delimiter != text[j:end]))
        tokens.append(heredocs[-1])
    return max(end, i + 1)


def _heredoc_end(text: str, i: int, delimiter: str, strip_tabs: bool) -> Tuple[int, int]:
    """(offset after the delimiter line, offset where the body ends)."""
    n = len(text)
    while i < n:
        end = _line_end(text, i)
        line = text[i:end].rstrip("\r")
        if (line.lstrip("\t") if strip_tabs else line) == delimiter:
            return min(end + 1, n), i
        i = end + 1
    return n, n


def _simple_commands(tokens: List[_Token]) -> Iterable[List[Union[_Word, _Array, _Heredoc]]]:
    current: List[Union[_Word, _Array, _Heredoc]] = []
    for token in tokens:
        if isinstance(token, str):
            if current:
                yield current
            current = []
        else:
            current.append(token)
    if current:
        yield current


class _Definition(NamedTuple):
    start: int
    end: int
    raw: Optional[str]  # a scalar assignment's value as written
    raw_start: int
    array: Optional[_Array]
    heredoc: Optional[_Heredoc] = None  # `read VAR <<EOF`: the body, not shell-quoted


class _Shell:
    """One pass over a script's simple commands; variables and arrays are looked up by position."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.positions = _Positions(text)
        self.entries: List[ConfigEntry] = []
        self.commands = [(self._strip_reserved(words),) + self._assignments(self._strip_reserved(words))
                         for words in _simple_commands(_tokens(text))]
        self.definitions: Dict[str, List[_Definition]] = {}
        self.expanded: set = set()  # start offsets of array assignments some command received
        self.invocations = 0
        self._resolving: set = set()
        self._held_by: Dict[int, Optional[_Held]] = {}  # definition start -> the text it holds
        for words, assignments, _, sets_variables in self.commands:
            for name, definition in assignments if sets_variables else ():
                self.definitions.setdefault(name, []).append(definition)
            read = self._read_heredoc(words)
            if read:
                self.definitions.setdefault(read[0], []).append(read[1])

    def read(self) -> List[ConfigEntry]:
        for command in self.commands:
            self._command(*command)
        for definitions in self.definitions.values():
            for definition in definitions:
                if definition.array is not None and definition.start not in self.expanded:
                    self._arguments(self._expand(list(definition.array.items)), None, None)
        return self.entries

    # -- words and values

    @staticmethod
    def _assignments(words) -> Tuple[List[Tuple[str, _Definition]], int, bool]:
        """(assignments leading the command, index of its program word, whether they set shell variables)."""
        declared = bool(words) and isinstance(words[0], _Word) and _unquote(words[0].raw)[0] in _DECLARE
        found: List[Tuple[str, _Definition]] = []
        index = 1 if declared else 0
        while index < len(words):
            word = words[index]
            match = _ASSIGNMENT.match(word.raw) if isinstance(word, _Word) else None
            if isinstance(word, _Array):
                found.append((word.name, _Definition(word.start, word.end, None, 0, word)))
            elif match:  # `VAR+=more` appends to a value this reader does not know: no raw value
                raw = None if match.group(2) else word.raw[match.end():]
                found.append((match.group(1), _Definition(word.start, word.start + len(word.raw), raw,
                                                          word.start + match.end(), None)))
            elif not declared:  # `export -a NAME` options and bare names are skipped
                break
            index += 1
        return found, index, declared or index == len(words)

    @staticmethod
    def _read_heredoc(words) -> Optional[Tuple[str, _Definition]]:
        """`read -r -d '' ARGS <<EOF ... EOF` (OpenRLHF's example scripts): ARGS holds the body."""
        names = [w for w in words if isinstance(w, _Word)]
        heredoc = next((w for w in words if isinstance(w, _Heredoc)), None)
        if heredoc is None or len(names) < 2 or names[0].raw != "read" or not _NAME.match(names[-1].raw):
            return None
        body = heredoc.start, heredoc.end
        return names[-1].raw, _Definition(names[0].start, body[1], None, body[0], None, heredoc)

    @staticmethod
    def _strip_reserved(words):
        start = 0
        while start < len(words) and isinstance(words[start], _Word) and words[start].raw in _RESERVED_PREFIX:
            start += 1
        return words[start:]

    def _lookup(self, name: str, at: int, earlier_only: bool = False) -> Optional[_Definition]:
        definitions = self.definitions.get(name, [])
        before = [d for d in definitions if d.end <= at]
        if before:
            return before[-1]
        after = [d for d in definitions if d.start > at] if not earlier_only else []
        return after[0] if after else None

    def _variable(self, name: str, at: int) -> Optional[_Value]:
        definition = self._lookup(name, at)
        if definition is not None and definition.heredoc is not None:
            heredoc = definition.heredoc
            body = self.text[heredoc.start:heredoc.end]
            expands = not heredoc.quoted and bool(re.search("[$`]", body))
            return _Value(body if heredoc.quoted else _CONTINUATION.sub("", body), body, heredoc.start, not expands)
        if definition is None or definition.raw is None or definition.start in self._resolving:
            return None
        self._resolving.add(definition.start)
        try:
            return self._value(definition.raw, definition.raw_start)
        finally:
            self._resolving.discard(definition.start)

    def _value(self, raw: str, start: int) -> _Value:
        """What a word holds: a literal, a variable's literal value (positioned at its assignment), the text a
        variable holds after expansion, or the word."""
        match = _VAR_REF.match(raw)
        if match:
            name = match.group("name") or match.group("bname")
            known = self._variable(name, start)
            if known is not None and known.literal:
                return known
            default = match.group("default")
            if known is None and default is not None and match.group("op"):
                fallback = self._value(default, start + match.start("default"))
                if fallback.literal:
                    return fallback
            held = self._held(name, start, 0) if known is not None else None
            if held is not None:  # `CONFIG="$ROOT/configs/run.yaml"`: that text as far as it is known
                return _Value(held.text, raw, start, False)
        word, expands = _unquote(raw)
        return _Value(word if expands else _shell_scalar(word), raw, start, not expands)

    def _expand(self, words: List[_Word], depth: int = 0) -> List[_Word]:
        """Splice `"${array[@]}"` and unquoted `$ARGS` holding a literal list of words."""
        out: List[_Word] = []
        for word in words:
            array_ref = _ARRAY_REF.match(word.raw)
            var_ref = _VAR_REF.match(word.raw)
            if array_ref and depth < 8:
                out.extend(self._expand(self._array(array_ref.group("name"), word.start), depth + 1))
            elif var_ref and not var_ref.group("q") and not var_ref.group("op") and depth < 8:
                out.extend(self._split(var_ref.group("name") or var_ref.group("bname"), word))
            else:
                out.append(word)
        return out

    def _array(self, name: str, at: int) -> List[_Word]:
        definition = self._lookup(name, at)
        if definition is None or definition.array is None:
            return []
        items: List[_Word] = []
        chain = [definition]
        while chain[-1].array.append:  # `args+=(...)` adds to the assignment before it
            previous = [d for d in self.definitions[name] if d.end <= chain[-1].start and d.array is not None]
            if not previous:
                break
            chain.append(previous[-1])
        for part in reversed(chain):
            self.expanded.add(part.start)
            items.extend(part.array.items)
        return items

    def _split(self, name: str, word: _Word) -> List[_Word]:
        """Word splitting of an unquoted `$ARGS`: the words of the text it holds, each positioned where it is
        written (`ARGS="$ARGS --n ${N}"` chains included)."""
        held = self._held(name, word.start, 0)
        if held is None or held.substitutes or not held.spaced:
            return [word]
        return [_Word(held.offsets[m.start()], m.group()) for m in re.finditer(r"\S+", held.text)]

    def _held(self, name: str, at: int, depth: int, earlier_only: bool = False) -> Optional[_Held]:
        """The text a scalar variable (or a `read` here-document) holds where `at` reads it; None when that is
        not known (no assignment, an array, `VAR+=...`, too deep a chain)."""
        definition = self._lookup(name, at, earlier_only)
        if definition is None or depth > _MAX_HELD or definition.start in self._resolving:
            return None
        if definition.start in self._held_by:
            return self._held_by[definition.start]
        self._resolving.add(definition.start)
        try:
            heredoc = definition.heredoc
            if heredoc is not None and heredoc.quoted:
                body = self.text[heredoc.start:heredoc.end]
                held: Optional[_Held] = _Held(body, tuple(range(heredoc.start, heredoc.end)), False,
                                              bool(re.search(r"\s", body)))
            elif heredoc is not None:
                held = self._expanded(self.text[heredoc.start:heredoc.end], heredoc.start, depth, name, quotes=False)
            elif definition.raw is not None:
                held = self._expanded(definition.raw, definition.raw_start, depth, name)
            else:
                held = None
        finally:
            self._resolving.discard(definition.start)
        self._held_by[definition.start] = held
        return held

    def _expanded(self, raw: str, start: int, depth: int, own: Optional[str] = None, quotes: bool = True) -> _Held:
        """What the shell makes of `raw` (written at `start`) before it splits words: quotes removed (with
        `quotes`; a here-document's body keeps them), escapes resolved, variables expanded. A variable that
        holds one literal word, or one word made by a command (`DIR="$(pwd)"`), stays a reference (`${N}`), which
        the reader resolves where it is written; any other is replaced by its text; one not known, a command
        substitution and `${X:-d}` stay as written. `own`: the variable this is the assignment of (`$own` in it
        is its earlier value)."""
        chars: List[str] = []
        offsets: List[int] = []
        substitutes = spaced = False

        def keep(begin: int, end: int, words: bool = True) -> None:
            nonlocal spaced
            chars.extend(raw[begin:end])
            offsets.extend(range(start + begin, start + end))
            spaced = spaced or words and any(ch.isspace() for ch in raw[begin:end])

        i, n, double = 0, len(raw), False
        while i < n:
            c = raw[i]
            if c == "\\" and i + 1 < n:
                following = raw[i + 1]
                if following == "\n":
                    i += 2
                    continue
                if double or not quotes:
                    if following in '$`"\\' and (quotes or following != '"'):
                        keep(i + 1, i + 2)
                    else:
                        keep(i, i + 2)
                else:
                    keep(i + 1, i + 2)
                i += 2
            elif quotes and c == '"':
                double = not double
                i += 1
            elif quotes and c == "'" and not double:
                end = raw.find("'", i + 1)
                end = n if end < 0 else end
                keep(i + 1, end)
                i = end + 1
            elif c == "$" and raw[i + 1:i + 2] == "(" or c == "`":
                end = _balanced_end(raw, i + 1) if c == "$" else _backtick_end(raw, i + 1)
                keep(i, end, words=False)  # the white space inside separates no words
                substitutes = True
                i = end
            elif c == "$":
                end = _balanced_end(raw, i + 1) if raw[i + 1:i + 2] == "{" else \
                    i + 1 + len(re.match(r"[A-Za-z_]\w*|", raw[i + 1:]).group())
                match = _PLAIN_REF.match(raw[i:end])
                if match is None:  # `$1`, `${#X}`, `${X%.*}`, `${X:?msg}`: what they hold is not known
                    keep(i, max(end, i + 1), words=False)
                    i = max(end, i + 1)
                    continue
                name = match.group(1) or match.group(2)
                itself = name == own
                held = self._reference(name, start + i, depth, itself)
                if held is None and match.group(4) is not None:  # `${X:-default}` of an X not known
                    held = self._expanded(match.group(4), start + i + match.start(4), depth + 1)
                    if not held.spaced and not held.substitutes:
                        held = None if self._value(raw[i:end], start + i).literal else held
                if held is None:
                    keep(i, end)  # one literal word, resolved where the reader meets it, or not known
                else:
                    chars.extend(held.text)
                    offsets.extend(held.offsets)
                    substitutes = substitutes or held.substitutes
                    spaced = spaced or held.spaced
                i = end
            else:
                keep(i, i + 1)
                i += 1
        return _Held("".join(chars), tuple(offsets), substitutes, spaced)

    def _reference(self, name: str, at: int, depth: int, itself: bool) -> Optional[_Held]:
        """The text `$name` read at `at` stands for inside another value, or None where the reference itself
        stays: a variable not known, one literal word, or one word made by a command."""
        known = None if itself else self._variable(name, at)
        if known is not None and known.literal and not re.search(r"\s", str(known.value)):
            return None
        held = self._held(name, at, depth + 1, earlier_only=itself)
        return None if held is None or held.substitutes and not held.spaced else held

    # -- commands

    def _command(self, words, assignments, program_index: int, sets_variables: bool, depth: int = 0) -> None:
        if sets_variables:
            for name, definition in assignments:
                if definition.raw is not None:
                    self._emit(name, self._value(definition.raw, definition.raw_start), None, "shell-variable", None)
            return
        program_words = [w for w in words[program_index:] if isinstance(w, _Word)]
        wrapped = self._past_wrappers(program_words, 0)
        if wrapped < len(program_words) and _unquote(program_words[wrapped].raw)[0] == "eval":
            if depth < _MAX_EVAL:
                self._eval(program_words[wrapped + 1:], depth + 1)
            return
        first = _unquote(program_words[0].raw)[0] if program_words else ""
        if first in _COMPOUND or first.startswith("["):
            return
        arguments = self._expand(program_words)
        found = self._entry_point(arguments)
        if found is None:
            return
        command, rest = found
        invocation = self.invocations
        self.invocations += 1
        for name, definition in assignments:  # `VAR=x python ...`: environment of this command only
            if definition.raw is not None:
                self._emit(name, self._value(definition.raw, definition.raw_start), command, "shell-variable",
                           invocation)
        self._arguments(rest, command, invocation)

    def _eval(self, words: List[_Word], depth: int) -> None:
        """`eval WORDS` (`eval "$CMD"`, `timeout 60 eval ${FULL_CMD} || ...`): the text its arguments expand
        to, joined by spaces, read again as commands (`conda activate x && torchrun ...` is two), every word
        positioned where it is written. Assignments it makes are not followed."""
        chars: List[str] = []
        offsets: List[int] = []
        for word in words:
            held = self._expanded(word.raw, word.start, 0)
            if chars:
                chars.append(" ")
                offsets.append(word.start)
            chars.extend(held.text)
            offsets.extend(held.offsets)
        text = "".join(chars)
        for command in _simple_commands(_tokens(text)):
            placed = [_Word(offsets[w.start], w.raw) for w in command
                      if isinstance(w, _Word) and w.start < len(offsets)]
            placed = self._strip_reserved(placed)
            assignments, index, sets_variables = self._assignments(placed)
            if not sets_variables:
                self._command(placed, assignments, index, False, depth)

    def _word_text(self, word: _Word) -> str:
        value = self._value(word.raw, word.start)
        return value.value if isinstance(value.value, str) else value.text

    def _entry_point(self, words: List[_Word]) -> Optional[Tuple[str, List[_Word]]]:
        """The program, module or script that receives the arguments, and those arguments."""
        i = 0
        while i < len(words):
            i = self._past_wrappers(words, i)
            if i >= len(words):
                return None
            program = self._word_text(words[i])
            base = program.rsplit("/", 1)[-1]
            following = self._word_text(words[i + 1]) if i + 1 < len(words) else ""
            if base in ("uv", "poetry", "pipenv", "pdm", "hatch") and following == "run":
                i = self._skip_options(words, i + 2)
                continue
            if base in ("bash", "sh", "zsh") and following and not following.startswith("-"):
                return following, words[i + 2:]
            if _PYTHON.fullmatch(base):
                return self._python(words, i + 1)
            if base in ("torchrun", "deepspeed"):
                return self._launcher(words, i + 1)
            if base == "accelerate":
                return self._launcher(words, i + 2) if following == "launch" else None
            if base == "ray":
                marker = next((j for j in range(i, len(words)) if words[j].raw == "--"), None)
                if marker is None:
                    return None
                i = marker + 1
                continue
            if base == "trl" and following:
                return f"trl {following}", words[i + 2:]
            if base in _NOT_LAUNCHERS or not program:
                return None
            return program, words[i + 1:]
        return None

    def _past_wrappers(self, words: List[_Word], i: int) -> int:
        """The index of the program that wrappers starting at `i` run (`env A=1 timeout 60 python ...`)."""
        while i < len(words):
            base = self._word_text(words[i]).rsplit("/", 1)[-1]
            if base not in _WRAPPERS:
                return i
            i = self._skip_options(words, i + 1) + _WRAPPERS[base]
            while base == "env" and i < len(words) and _ASSIGNMENT.match(words[i].raw):
                i += 1
        return i

    def _skip_options(self, words: List[_Word], i: int) -> int:
        """Past a launcher's own options: `--opt=v`, `-oL`, `--opt v` / `-n v` (unless v is a script or a
        program) and boolean `--opt`."""
        while i < len(words):
            word = self._word_text(words[i])
            if not word.startswith("-") or word in ("-m", "--module"):
                return i
            following = self._word_text(words[i + 1]) if i + 1 < len(words) else ""
            takes_value = "=" not in word and (word.startswith("--") or len(word) == 2) \
                and following and not following.startswith("-") \
                and not following.endswith(".py") and not _PROGRAM.fullmatch(following.rsplit("/", 1)[-1])
            i += 2 if takes_value else 1
        return i

    def _python(self, words: List[_Word], i: int) -> Optional[Tuple[str, List[_Word]]]:
        while i < len(words):
            word = self._word_text(words[i])
            if word == "-c":
                return None
            if word.startswith("-m"):
                module = word[2:] or (self._word_text(words[i + 1]) if i + 1 < len(words) else "")
                rest = words[i + 1:] if word[2:] else words[i + 2:]
                if module in ("torch.distributed.run", "torch.distributed.launch", "accelerate.commands.launch"):
                    return self._launcher(rest, 0)
                return (module, rest) if module else None
            if word in ("-W", "-X"):
                i += 2
            elif word.startswith("-"):
                i += 1
            else:
                return word, words[i + 1:]
        return None

    def _launcher(self, words: List[_Word], i: int) -> Optional[Tuple[str, List[_Word]]]:
        while True:
            i = self._skip_options(words, i)
            if i >= len(words):
                return None
            word = self._word_text(words[i])
            if word in ("-m", "--module"):
                i += 1
                continue
            return word, words[i + 1:]

    def _arguments(self, words: List[_Word], command: Optional[str], invocation: Optional[int]) -> None:
        """`--flag value`, `--flag=value`, boolean `--flag` and Hydra `[+|++]a.b=value` words."""
        i = 0
        while i < len(words):
            word = words[i]
            unquoted = _unquote(word.raw)[0]
            if unquoted.startswith("--") and len(unquoted) > 2:
                if "=" in unquoted:
                    key = unquoted[2:unquoted.index("=")]
                    self._emit(key, self._segment(word), command, "shell-flag", invocation)
                else:
                    following = words[i + 1] if i + 1 < len(words) else None
                    following_text = self._word_text(following) if following else ""
                    if following is not None and not _is_flag(following_text) and following_text not in ("$@", "$*"):
                        self._emit(unquoted[2:], self._value(following.raw, following.start), command,
                                   "shell-flag", invocation)
                        i += 1
                    else:
                        self._emit(unquoted[2:], _Value(True, word.raw, word.start, True), command,
                                   "shell-flag", invocation)
            elif not unquoted.startswith("-"):
                match = _OVERRIDE.match(unquoted)
                if match:
                    self._emit(match.group(1), self._segment(word), command, "shell-override", invocation)
            i += 1

    def _segment(self, word: _Word) -> _Value:
        """The value after the first `=` of `--flag=value` / `key=value`."""
        equals = word.raw.index("=") if "=" in word.raw else len(word.raw)
        if not any(q in word.raw[:equals] for q in "'\"\\"):
            return self._value(word.raw[equals + 1:], word.start + equals + 1)
        unquoted, expands = _unquote(word.raw)  # a quoted key: `"lr=1e-5"`
        value = unquoted[unquoted.index("=") + 1:]
        if _VAR_REF.match(value) and word.raw[0] == '"' and not any(q in word.raw[1:equals] for q in "'\"\\"):
            return self._value(value, word.start + equals + 1)  # `"lr=${LR:-3e-5}"`: the variable or its default
        return _Value(value if expands else _shell_scalar(value), value, word.start + equals + 1, not expands)

    def _emit(self, key: str, value: _Value, command: Optional[str], source: str, invocation: Optional[int]) -> None:
        line, column = self.positions.at(value.start)
        self.entries.append(ConfigEntry(key, value.value, value.text, line, column, command, source, invocation))


# ---------------------------------------------------------------------- RL or not

# Entry points are judged by the words of their last name part (`openrlhf.cli.train_ppo_ray`
# -> train, ppo, ray; `trl grpo` -> grpo); an RL method word wins over a non-RL one.
_RL_METHODS = frozenset({"ppo", "grpo", "rloo", "dpo", "dapo", "gspo", "kto", "orpo", "xpo", "reinforce", "remax",
                         "rlhf", "rl", "gkd", "simpo", "cpo", "bco", "prime"})
_NOT_RL_WORDS = frozenset({"sft", "rm", "prm", "reward", "pretrain", "eval", "evaluate", "evaluation", "generation",
                           "generate", "inference", "merge", "convert", "serve", "env"})
# Keys that only RL post-training sets (a dotted key counts when any part is one of them).
_RL_KEYS = frozenset({
    "actor_rollout_ref", "num_generations", "n_samples_per_prompt", "adv_estimator", "advantage_estimator",
    "kl_coef", "init_kl_coef", "kl_loss_coef", "use_kl_loss", "use_kl_in_reward", "kl_ctrl", "eps_clip",
    "clip_ratio", "clip_ratio_low", "clip_ratio_high", "cliprange", "ppo_epochs", "num_ppo_epochs",
    "ppo_mini_batch_size", "rollout_batch_size", "micro_rollout_batch_size", "reward_funcs", "remote_rm_url",
    "reward_pretrain", "critic_pretrain", "actor_learning_rate", "max_completion_length", "scale_rewards",
    "epsilon_high",
})
# RL trainer and config classes named in a YAML file's comments (`# GRPOConfig for trl grpo`).
_RL_CLASS = re.compile(r"\b(?:GRPO|PPO|RLOO|OnlineDPO|DPO|KTO|ORPO|XPO|NashMD|GKD|Reinforce\w*)(?:Trainer|Config)\b")
_MENTIONED_ENTRY = re.compile(r"(?:-m\s+|--module\s+|\btrl\s+)([\w.\-]+)|([\w./\-]+\.py)\b")


def _name_words(name: str) -> List[str]:
    last = name.split()[-1] if name.startswith("trl ") else re.sub(r"\.py$", "", name).rsplit("/", 1)[-1]
    last = last.rsplit(".", 1)[-1]
    return [w for w in re.split(r"[_\-]+", last.lower()) if w]


def _entry_verdict(command: str) -> Optional[bool]:
    """True for an RL trainer entry point, False for an SFT / reward-model / eval one, None when it does not say."""
    words = _name_words(command)
    if any(w in _RL_METHODS for w in words):
        return True
    if any(w in _NOT_RL_WORDS for w in words):
        return False
    return None


def _rl_key(key: str) -> bool:
    parts = key.lstrip("-+").split(".")
    return any(part in _RL_KEYS for part in parts) or (len(parts) > 2 and parts[-2:] == ["rollout", "n"])


def command_is_rl(entries: Iterable[ConfigEntry]) -> bool:
    """Is one invocation (entries sharing `invocation`) an RL run? Its entry point decides, else its keys."""
    entries = list(entries)
    command = next((e.command for e in entries if e.command), None)
    verdict = _entry_verdict(command) if command else None
    if verdict is not None:
        return verdict
    return any(_rl_key(e.key) for e in entries if e.source != "shell-variable")


def _invocations(entries: Iterable[ConfigEntry]) -> Dict[int, List[ConfigEntry]]:
    groups: Dict[int, List[ConfigEntry]] = {}
    for entry in entries:
        if entry.invocation is not None:
            groups.setdefault(entry.invocation, []).append(entry)
    return groups


def is_rl_config(entries: List[ConfigEntry], text: str) -> bool:
    """RULES.md: a launch config names an RL trainer, entry point or RL-only key.

    A shell script with commands is RL when one of its commands is; a YAML file (or a
    script without commands) when a key is RL-only or its text names an RL entry point or
    trainer (`# python3 -m verl.trainer.main_ppo --config-name ...`, `# trl grpo --config ...`,
    `# GRPOConfig`).
    """
    if any(e.command for e in entries):
        return any(command_is_rl(group) for group in _invocations(entries).values())
    if any(_rl_key(e.key) for e in entries if e.source == "yaml"):
        return True
    return bool(_RL_CLASS.search(text)) or any(
        _entry_verdict(m.group(1) or m.group(2)) for m in _MENTIONED_ENTRY.finditer(text))


def rl_entries(entries: List[ConfigEntry], text: str) -> List[ConfigEntry]:
    """The entries an RL-only rule should judge: those of RL commands, or all of an RL YAML file."""
    if any(e.command for e in entries):
        rl = {i for i, group in _invocations(entries).items() if command_is_rl(group)}
        return [e for e in entries if e.invocation in rl]
    return [e for e in entries if e.source == "yaml"] if is_rl_config(entries, text) else []


_KEY_WORD = re.compile(r"[A-Za-z_][\w.\-]*")


def mentions_rl(text: str) -> bool:
    """Whether a config's raw text names an RL key, trainer or entry point: used for files that
    do not parse, to decide whether their syntax error is worth reporting."""
    return is_rl_config([], text) or any(_rl_key(word.lstrip("-")) for word in _KEY_WORD.findall(text))


class LaunchConfig:
    """The entries of one YAML or shell file (`rllint.runner.ConfigFile`), read once.

    `entries`: every key the file sets; `rl_entries`: those that RL-only rules judge (the
    RL commands of a script, or all of an RL YAML file; none in test code). Raises ConfigSyntaxError.
    """

    def __init__(self, file) -> None:
        self.entries = read_yaml(file.text) if file.kind == "yaml" else read_shell(file.text)
        # A test or smoke launcher runs a toy: its values are no run's settings.
        self.rl_entries = [] if is_test_path(file.path) else rl_entries(self.entries, file.text)
