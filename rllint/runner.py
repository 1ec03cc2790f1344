"""Lint one file (a guarded parse, one batched traversal, the suppression filter) and many (in worker processes).

Whatever a file holds, linting it ends with findings or with one line saying why it was not
linted, and the run goes on (README, "Limits"):
- bytes: regular files only, at most `MAX_FILE_BYTES` (a notebook `MAX_NOTEBOOK_BYTES`, its code cells
  held to the bounds of Python text); decoding errors name the file;
- Python's own parser sees a file first; when it refuses one, libcst (which knows the newest
  grammar) judges whether it is Python at all: RL000 means "not Python", while newer syntax
  than the running interpreter's is a one-line error;
- before libcst parses, a node budget and a nesting bound (counted as libcst nests, which is
  deeper than `ast` for `a and b and ...` and dotted imports) keep its memory and time in check
  and its native parser from overflowing its stack, which it runs on a large one of its own;
- in worker processes (`lint_files`, every mode of the command line) a crash costs one file and
  each file has a time bound.
"""
from __future__ import annotations

import ast
import functools
import importlib
import os
import re
import sys
import threading
import tokenize
import io
from collections import deque
from dataclasses import replace
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

from rllint import workers
from rllint.analysis.launches import CONFIG_FILES
from rllint.analysis.nodes import AstNodes
from rllint.cache import ResultCache
from rllint.catalogue import Entry, UnknownSelector, entries, find, import_option
from rllint.diagnostic import Diagnostic, FileError, FileResult
from rllint.files import file_kind
from rllint.index import importers_outside, name_folders
from rllint.notebook import MAX_NOTEBOOK_BYTES, NotebookError, place_all, read_cells
from rllint.registry import OPTIONS, Finding
from rllint.rules.meta import SyntaxErrorRule, UnusedSuppression
from rllint.settings import Settings
from rllint.source import (MAX_FILE_BYTES, SourceError, Suppressions, content_hash, decode_config, decode_source,
                           read_source, token_estimate, too_large)
from rllint.traversal import visit_batched

# libcst's visitors recurse once per nesting level: a 500-term `+` chain, which CPython
# parses, needs more than the default limit of 1000 frames.
RECURSION_LIMIT = 20000
# A process lints a file in at most about 320 MiB (README, "Limits"): a worker holds about 60 MiB, and
# libcst's tree with the analyses' facts holds about 2.7 KB per `ast` node of typical code, up to 4.3 KB for
# dense literals (the largest primer file has 45,000 nodes; a 2,500-line module about 12,000).
MAX_NODES = 60_000
# Python's own tree costs about 250 bytes per node and twice that while `ast.parse` builds it: source code
# has about one node per 4 bytes, so larger texts are refused before it is built.
MAX_PYTHON_BYTES = 1024 * 1024
# Python's parser needs about 600 bytes per token (`a=1` lines: a token per byte, 650 MB for a MiB), so a text
# of more tokens (`rllint.source.token_estimate`) is refused before it is parsed: 90 MB at this bound, which
# is 2.5 times the most tokens a file within `MAX_NODES` of the primer has.
MAX_TOKENS = 150_000
# libcst's parse time grows with the square of the nesting depth (2,000 levels of `a[0][0]...` take
# 7 s) and its native parser recurses once per level.
MAX_NESTING = 2_000
# Python refuses more nested brackets than this in every version ("too many nested parentheses").
MAX_BRACKETS = 200
# Seconds one file may take in a worker process before the worker is stopped.
FILE_TIME_LIMIT = 60.0
# A file of this many bytes or more is linted by a fresh worker (`workers.run`'s `heavy`): libcst's tree of dense
# source takes up to 600 bytes per byte, which must not add to what a worker kept from the files before.
HEAVY_FILE_BYTES = 128 * 1024
# The stack of the thread a file is linted on: libcst's native parser and the visitors recurse per
# nesting level, and the main thread's stack (8 MB, less in some threads) is too small for the bound above.
_STACK_BYTES = 512 * 1024 * 1024


class _Facts:
    """Analyses of one file, each built on first request and at most once."""

    def __init__(self, path: str, text: str, settings: Settings) -> None:
        self.path = path
        self.text = text
        self.settings = settings
        self._facts: Dict[type, Any] = {}
        # Other files the analyses read (values imported from project modules): path -> content hash.
        self.dependencies: Dict[str, str] = {}
        self.notes: List[str] = []  # what the analyses could not see (a project cut short by a bound)

    def fact(self, analysis: type) -> Any:
        """The instance of `analysis` (a class taking this file) for this file."""
        if analysis not in self._facts:
            self._facts[analysis] = analysis(self)
        return self._facts[analysis]


class FileContext(_Facts):
    """A parsed Python file: `module` is the libcst tree, `tree` the ast one."""

    kind = "python"

    def __init__(self, path: str, text: str, module: cst.Module, tree: ast.Module, settings: Settings,
                 ast_nodes: Optional[AstNodes] = None) -> None:
        super().__init__(path, text, settings)
        self.module = module
        self.tree = tree
        if ast_nodes is not None:  # the runner's walk of `tree` indexed its nodes already
            self._facts[AstNodes] = ast_nodes


class ConfigFile(_Facts):
    """A launch config (`kind` "yaml" or "shell"); `rllint.analysis.configs.LaunchConfig` reads it."""

    def __init__(self, path: str, text: str, kind: str, settings: Settings) -> None:
        super().__init__(path, text, settings)
        self.kind = kind


def lint_bytes(data: bytes, path: str, settings: Settings) -> FileResult:
    """Lint the bytes of the file `path`: decoded as Python decodes source (a notebook's code cells joined,
    a launch config as YAML and shell read it), then `lint_text`."""
    kind = file_kind(path)
    if len(data) > byte_limit(path):
        return _error(path, too_large(len(data), byte_limit(path)))
    if kind == "notebook":
        try:
            cells = read_cells(data, too_large_python)
        except NotebookError as error:
            return _error(path, str(error))
        result = lint_text(cells.text, path, settings, kind="python")
        result.diagnostics = place_all(result.diagnostics, cells, path)
        newer = [broken for broken in cells.broken if _newer_python(broken[4], cells.kernel)]
        result.errors += [FileError(path, f"cell {cell} uses syntax that {_RUNNING}, which runs rllint, cannot parse: "
                                          f"{message} (line {line}); run rllint on a newer Python to lint it")
                          for cell, line, _, message, _ in newer]
        broken = [b for b in cells.broken if b not in newer]
        if broken and _selects(settings.selected_for(path), SyntaxErrorRule):
            result.diagnostics = sorted(result.diagnostics + [
                replace(d, cell=cell) for cell, line, column, message, _ in broken
                for d in _diagnostics(path, SyntaxErrorRule, [(line, column, line, column, {"detail": message})])],
                key=Diagnostic.sort_key)
        return result
    if kind in ("yaml", "shell"):
        text = decode_config(data)
        return FileResult() if text is None else lint_text(text, path, settings)
    try:
        text = decode_source(data)
    except SourceError as error:
        return _error(path, str(error))
    except MemoryError:
        return _error(path, _OUT_OF_MEMORY)
    return lint_text(text, path, settings)


def lint_text(text: str, path: str, settings: Settings, kind: Optional[str] = None,
              tree: Optional[ast.Module] = None) -> FileResult:
    """Lint `text` as the file `path` would be linted (standard input without a name is Python);
    `kind` overrides the kind the name says (a notebook's code cells are Python); `tree` is the
    text's `ast` tree when the caller has parsed it already (flake8 has).

    Runs on a thread with a large stack (see `_STACK_BYTES`); running out of memory is this file's error.
    """
    name_folders(settings.project_dirs)
    try:
        return _on_large_stack(_lint_text, text, path, settings, kind, tree)
    except MemoryError:
        return _error(path, _OUT_OF_MEMORY)


_OUT_OF_MEMORY = "ran out of memory while linting; not linted"


def _error(path: str, message: str) -> FileResult:
    return FileResult(errors=[FileError(path, message)])


def _on_large_stack(function: Callable[..., FileResult], *arguments: Any) -> FileResult:
    outcome: List[Tuple[bool, Any]] = []

    def call() -> None:
        try:
            outcome.append((True, function(*arguments)))
        except BaseException as error:  # handed to the caller's thread
            outcome.append((False, error))

    try:
        previous = threading.stack_size(_STACK_BYTES)
    except (ValueError, RuntimeError):  # a platform that cannot size thread stacks
        return function(*arguments)
    try:
        thread = threading.Thread(target=call, name="rllint-lint", daemon=True)
        thread.start()
    except RuntimeError:  # no room for such a stack (an address-space limit): the caller's stack it is
        return function(*arguments)
    finally:
        threading.stack_size(previous)
    thread.join()
    done, value = outcome[0]
    if done:
        return value
    raise value


def _lint_text(text: str, path: str, settings: Settings, kind: Optional[str], tree: Optional[ast.Module]
               ) -> FileResult:
    if len(text) > MAX_FILE_BYTES:
        return _error(path, too_large(len(text.encode("utf-8", "replace")), MAX_FILE_BYTES))
    kind = kind or file_kind(path) or "python"
    rules = [rule for rule in settings.selected_for(path) if kind in rule.file_kinds]
    if kind != "python":
        return _lint_config(text, path, kind, settings, rules)
    problem = too_large_python(text, count_tokens=tree is None)
    if problem:
        return _error(path, problem)
    try:
        tree = tree or ast.parse(text, filename=path)
    except SyntaxError as error:
        return _not_parsed(text, path, error, rules)
    except ValueError:  # NUL characters, which decode_source already refuses in files
        return _error(path, "contains NUL characters; not Python text")
    except (RecursionError, MemoryError):
        return _error(path, "too deeply nested for Python's parser; not linted")

    suppressions = Suppressions.parse(text, tree)
    if suppressions.file_selectors == ():
        return FileResult()
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, RECURSION_LIMIT))
    try:
        findings, wrapper, file = _run_cst_rules(text, path, tree, settings, rules)
        diagnostics = _positioned(path, findings, wrapper, file)
    except _NotAnalysed as reason:
        return _error(path, str(reason))
    except RecursionError:
        return _error(path, "too deeply nested to analyse (recursion limit); not linted")
    finally:
        sys.setrecursionlimit(limit)

    result = _filtered(path, [d for d in diagnostics if d.path == path], suppressions, rules)
    remote, used = _remote_filtered([d for d in diagnostics if d.path != path], settings)
    result.diagnostics = sorted(result.diagnostics + remote, key=Diagnostic.sort_key)
    result.dependencies, result.used_elsewhere = ({} if file is None else file.dependencies), used
    result.notes = [] if file is None else file.notes
    return result


def too_large_python(text: str, count_tokens: bool = True) -> Optional[str]:
    """Why a text of Python is too large to parse within the memory bound (its size, or about how many tokens
    it has), or None. Python's parser is not called on a larger text: a notebook's cells are held to it too."""
    if len(text) > MAX_PYTHON_BYTES:
        size = len(text.encode("utf-8", "replace"))
        return (f"too large to lint ({size / 2 ** 20:.1f} MiB of Python; rllint lints Python files up to "
                f"{MAX_PYTHON_BYTES // 2 ** 20} MiB)")
    # The estimate counts each character at most once, and a `{` once more: a text within the bound that way
    # (a 2,500-line module is) is not counted.
    tokens = token_estimate(text) if count_tokens and len(text) + text.count("{") > MAX_TOKENS else 0
    if tokens > MAX_TOKENS:
        return f"too large to lint (about {tokens:,} tokens; rllint lints Python files of up to {MAX_TOKENS:,})"
    return None


class _NotAnalysed(Exception):
    """A file that is Python but that rllint cannot analyse; the message says why, in one line."""


def _shape(tree: ast.AST) -> Tuple[int, int, AstNodes]:
    """(nodes, nesting, the nodes by type) of an `ast` tree, nesting counted as libcst nests: `a and b and c`
    is one `BoolOp` in `ast` but a chain in libcst, and so are dotted import names and `for` clauses. The
    walk is `ast.walk`'s (breadth first), so that its index is the one `AstNodes` would build."""
    deepest = 0
    by_type: Dict[type, List[ast.AST]] = {}
    queue = deque([(tree, 0)])
    children = ast.iter_child_nodes
    while queue:
        node, depth = queue.popleft()
        kind = type(node)
        same = by_type.get(kind)
        if same is None:
            by_type[kind] = [node]
        else:
            same.append(node)
        if kind is ast.BoolOp:
            depth += len(node.values)
        elif kind is ast.Import or kind is ast.ImportFrom:
            depth += max([(getattr(node, "module", None) or "").count(".")]
                         + [alias.name.count(".") for alias in node.names])
        elif kind in _COMPREHENSIONS:
            depth += len(node.generators)
        if depth > deepest:
            deepest = depth
        depth += 1
        queue.extend([(child, depth) for child in children(node)])
    return sum(map(len, by_type.values())), deepest, AstNodes.indexed(by_type)


_COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)


def _parse_cst(text: str, tree: ast.Module) -> Tuple[cst.Module, AstNodes]:
    """libcst's tree of a file Python parsed, within the node and nesting budgets, and the nodes of
    Python's tree by type (the budget's walk found them)."""
    nodes, nesting, ast_nodes = _shape(tree)
    if nodes > MAX_NODES:
        raise _NotAnalysed(f"too large to lint ({nodes:,} syntax nodes; rllint lints up to {MAX_NODES:,})")
    if nesting > MAX_NESTING:
        raise _NotAnalysed(f"too deeply nested to lint ({nesting:,} levels; rllint lints up to {MAX_NESTING:,})")
    try:
        return cst.parse_module(text), ast_nodes
    except cst.ParserSyntaxError as error:
        raise _NotAnalysed(f"could not be analysed: Python parses it but libcst, rllint's parser, does not "
                           f"(line {error.raw_line}, column {error.raw_column + 1}: {error.message}); "
                           "not linted") from None


_RUNNING = "Python {}.{}".format(*sys.version_info[:2])


def _newer_python(text: str, kernel: Optional[Tuple[int, int]]) -> bool:
    """Whether a notebook cell that the running Python cannot parse is newer Python, not a syntax error: libcst
    parses it, and the notebook's kernel is not known to be a Python that the running one can stand for."""
    return (kernel is None or kernel > sys.version_info[:2]) and _judge(text) is True


def _not_parsed(text: str, path: str, error: SyntaxError, rules: Sequence[type]) -> FileResult:
    """A file the running Python cannot parse: RL000 only when it is not Python in any version libcst
    knows either; newer syntax is a one-line error, since the analyses need Python's own tree."""
    verdict = _judge(text)
    where = f"{error.msg} (line {error.lineno or 1})"
    if verdict is False:
        return FileResult(_syntax_error(path, error, rules))
    if verdict is True:
        return _error(path, f"uses syntax that {_RUNNING}, which runs rllint, cannot parse: {where}; "
                            "run rllint on a newer Python to lint it")
    return _error(path, f"{_RUNNING} cannot parse it ({where}), and it is too deeply nested or has too long a "
                        "statement for rllint to tell whether it is newer Python; not linted")


def _judge(text: str) -> Optional[bool]:
    """Whether libcst parses `text` (True, False), or None when its shape is beyond what libcst is given.

    The shape is read with the tokenizer, not a grammar: the deepest bracket nesting (beyond
    `MAX_BRACKETS` no Python parses it) and the most tokens in one statement, which bounds
    how deep libcst's tree of it can be.
    """
    brackets = most = tokens = 0
    depth = 0
    try:
        for token in tokenize.generate_tokens(io.StringIO(text).readline):
            if token.type == tokenize.OP and token.string in "([{":
                depth += 1
                brackets = max(brackets, depth)
            elif token.type == tokenize.OP and token.string in ")]}":
                depth = max(0, depth - 1)
            if token.type in (tokenize.NEWLINE, tokenize.ENDMARKER):
                tokens = 0
            else:
                tokens += 1
                most = max(most, tokens)
    except tokenize.TokenError:  # the end of the file inside a string or brackets: everything was read
        pass
    except SyntaxError:  # a dedent to no outer level, which no Python's tokenizer accepts
        return False
    if brackets > MAX_BRACKETS:
        return False
    if most > MAX_NESTING:
        return None
    try:
        cst.parse_module(text)
    except cst.ParserSyntaxError:
        return False
    except RecursionError:
        return None
    return True


def _remote_filtered(diagnostics: List[Diagnostic],
                     settings: Settings) -> Tuple[List[Diagnostic], List[Tuple[str, int, str]]]:
    """Findings placed in another file (a value written in an imported module) obey that file's
    suppression comments and per-file-ignores; one per place and code. Also returns the comments
    of those files that were used, so that linting them does not call the comments stale (RL001)."""
    kept: Dict[Tuple[str, int, int, str], Diagnostic] = {}
    read: Dict[str, Optional[Suppressions]] = {}
    for d in diagnostics:
        if (d.path, d.line, d.column, d.code) in kept or d.code not in {r.code for r in settings.selected_for(d.path)}:
            continue
        if d.path not in read:
            read[d.path] = _suppressions_of(d.path)
        if read[d.path] is not None and not read[d.path].suppresses(d.line, d.code, d.name):
            kept[(d.path, d.line, d.column, d.code)] = d
    used = [(path, comment.line, selector) for path, suppressions in read.items() if suppressions is not None
            for comment in suppressions.comments for selector in sorted(comment.used)]
    return list(kept.values()), used


def _suppressions_of(path: str) -> Optional[Suppressions]:
    """The suppression comments of a file that is not the one being linted (a module, or a settings file it
    reads); None if it cannot be read."""
    try:
        if path.endswith(CONFIG_FILES):
            text = decode_config(read_source(path))
            return None if text is None else Suppressions.parse(text, None)
        text = decode_source(read_source(path))
        return Suppressions.parse(text, ast.parse(text))
    except (OSError, SourceError, SyntaxError, ValueError, RecursionError, MemoryError):
        return None


def triggered(rules: Sequence[Entry], text: str, settings: Optional[Settings] = None) -> List[type]:
    """The classes of the rules among `rules` that visit files and whose trigger words `text` holds (README,
    "Developing"): only their family modules are imported, and none when no rule is triggered. A file that
    holds a word of a model name the config adds (`reference-model-names`) triggers every rule."""
    lowered = text.lower() if any(rule.ignore_case for rule in rules) else text
    if settings is not None and any(word in text for word in configured_model_words(settings)):
        return [rule.rule for rule in rules if rule.kind == "cst"]
    return [rule.rule for rule in rules if rule.kind == "cst" and rule.triggered(text, lowered)]


def configured_model_words(settings: Settings) -> List[str]:
    """The literal parts of the model-name patterns set in the config (`ref_*_lm` gives `ref_`, `_lm`)."""
    words = []
    for key, patterns in settings.options.items():
        import_option(key)
        if key in OPTIONS and OPTIONS[key].names_models:
            words += [word for pattern in patterns for word in re.split(r"[*?]|\[[^]]*\]", pattern) if word]
    return words


def _selects(rules: Sequence[Entry], rule: type) -> bool:
    return any(entry.code == rule.code for entry in rules)


def _run_cst_rules(
    text: str, path: str, tree: ast.Module, settings: Settings, rules: Sequence[Entry]
) -> Tuple[List[Finding], Optional[MetadataWrapper], Optional[FileContext]]:
    triggered_rules = triggered(rules, text, settings)
    if not triggered_rules:
        return [], None, None
    module, ast_nodes = _parse_cst(text, tree)
    wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
    file = FileContext(path, text, module, tree, settings, ast_nodes)
    visitors = [rule(file) for rule in triggered_rules]
    visit_batched(module, visitors)
    return [finding for visitor in visitors for finding in visitor.findings], wrapper, file


def _lint_config(text: str, path: str, kind: str, settings: Settings, rules: Sequence[Entry]) -> FileResult:
    """A YAML or shell launch config: its rules read (key, value, position) entries, not a tree.

    A config that does not parse is reported (RL000) only when it speaks of RL: YAML
    files of other tools (templated Helm charts, CI files) are none of rllint's business.
    """
    checks = triggered(rules, text, settings)
    if not checks:
        return FileResult()
    from rllint.analysis.configs import ConfigSyntaxError, ConfigTooLarge, LaunchConfig, mentions_rl  # YAML

    file = ConfigFile(path, text, kind, settings)
    try:
        file.fact(LaunchConfig)
    except ConfigTooLarge as error:
        return _error(path, str(error))
    except ConfigSyntaxError as error:
        if not _selects(rules, SyntaxErrorRule) or not mentions_rl(text):
            return FileResult()
        span = (error.line, error.column, error.line, error.column, {"detail": str(error)})
        return FileResult(_diagnostics(path, SyntaxErrorRule, [span]))
    suppressions = Suppressions.parse(text, None)
    if suppressions.file_selectors == ():
        return FileResult()
    findings: List[Finding] = []
    for rule in checks:
        check = rule(file)
        check.check_config()
        findings.extend(check.findings)
    return _filtered(path, _positioned(path, findings, None), suppressions, rules)


def _filtered(path: str, diagnostics: List[Diagnostic], suppressions: Suppressions,
              rules: Sequence[Entry]) -> FileResult:
    """Drop suppressed findings (once per place and code), then report stale suppressions (RL001)."""
    kept = {}
    for d in diagnostics:
        if not suppressions.suppresses(d.line, d.code, d.name):
            kept.setdefault((d.line, d.column, d.code), d)
    found = list(kept.values())
    if _selects(rules, UnusedSuppression):
        found.extend(_unused_suppressions(path, suppressions, rules))
    return FileResult(sorted(found, key=Diagnostic.sort_key))


def _positioned(path: str, findings: List[Finding], wrapper: Optional[MetadataWrapper],
                file: Optional[FileContext] = None) -> List[Diagnostic]:
    """Positions of nodes are resolved only for files with findings: most files have none.
    Findings at a node of `file` get the fix of their rule (`rllint.fix`), when there is one."""
    if not findings:
        return []
    from rllint.fix import build_fix  # only for files with findings, and only the builders of their rules

    catalogue = entries()
    positions = wrapper.resolve(PositionProvider) if wrapper is not None and any(f.node for f in findings) else {}
    spans = []
    for finding in findings:
        if finding.node is None:
            line, column, end_line, end_column = finding.span
        else:
            where = positions[finding.node]
            line, column = where.start.line, where.start.column + 1
            end_line, end_column = where.end.line, where.end.column + 1
        where = path if finding.path is None else _shown_path(finding.path, path)
        fixer = catalogue[finding.rule.code].fix if finding.rule.code in catalogue else None
        fix = None
        if fixer is not None and finding.node is not None and file and file.settings.fixes(finding.rule.code):
            importlib.import_module(fixer)
            fix = build_fix(finding.rule.code, finding.node, file, positions)
        spans.append((where, finding.rule, line, column, end_line, end_column, finding.message, fix,
                      finding.severity or finding.rule.severity))
    return [Diagnostic(where, line, col, end_line, end_col, rule.code, rule.name, severity, message, fix)
            for where, rule, line, col, end_line, end_col, message, fix, severity in spans]


def _shown_path(other: str, linted: str) -> str:
    """Another file's path spelled as the linted file's is (relative to the working folder when it is)."""
    if os.path.isabs(linted):
        return os.path.abspath(other)
    relative = os.path.relpath(other)
    return other if relative.startswith(os.pardir) else relative


def _syntax_error(path: str, error: SyntaxError, rules: Sequence[Entry]) -> List[Diagnostic]:
    if not _selects(rules, SyntaxErrorRule):
        return []
    line = error.lineno or 1
    column = error.offset or 1
    end_line = getattr(error, "end_lineno", None) or line
    end_column = getattr(error, "end_offset", None) or column
    if end_line < line or (end_line == line and end_column < column):
        end_line, end_column = line, column
    return _diagnostics(path, SyntaxErrorRule, [(line, column, end_line, end_column, {"detail": error.msg})])


def _diagnostics(path: str, rule: type, spans: List[tuple]) -> List[Diagnostic]:
    """Findings that the runner itself makes: (line, column, end line, end column, message values)."""
    return [Diagnostic(path, line, col, end_line, end_col, rule.code, rule.name, rule.severity,
                       rule.message.format(**values))
            for line, col, end_line, end_col, values in spans]


def _unused_suppressions(path: str, suppressions: Suppressions, rules: Sequence[Entry]) -> List[Diagnostic]:
    """RL001: codes and names in suppression comments that silenced nothing among the rules that ran,
    and those that name no rule at all (`# noqa: RL999`, `# rllint: ignore[not-a-rule]`).

    Codes in `# noqa:` are whole codes, as in ruff: `RL2` is not a prefix that covers RL201..RL299
    but a code that names no rule. Codes of other tools (`E501`) are none of RL001's business.
    """
    ran = {rule.code: rule for rule in rules}
    ran.update({rule.name: rule for rule in rules})
    found = []
    for comment in suppressions.comments:
        for selector in comment.selectors:
            reason = _stale(selector, comment, ran)
            if reason is not None:
                found.append((comment.line, comment.column, comment.line, comment.column,
                              {"selector": selector, "reason": reason}))
    return _diagnostics(path, UnusedSuppression, found)


def _stale(selector: str, comment, ran: Dict[str, Entry]) -> Optional[str]:
    """Why `selector` of `comment` is worth an RL001 finding; None when it is not."""
    rule = ran.get(selector.upper()) or ran.get(selector.lower())
    if rule is not None:
        if rule.code == UnusedSuppression.code or selector in comment.used:
            return None
        return "nothing in this file is reported under it" if comment.kind == "file" else \
            "nothing on this line is reported under it"
    if comment.kind != "ignore" and not selector.upper().startswith("RL"):
        return None  # another tool's code in a `# noqa`
    try:
        find(selector)
        return None  # a rule that did not run here
    except UnknownSelector:
        pass
    codes = [code for code in entries() if code.startswith(selector.upper())] if selector[:2].upper() == "RL" else []
    if codes:
        return f"`# noqa` takes whole codes, not prefixes such as this one (of {codes[0]}..{codes[-1]})"
    return "no rule has this code or name"


def byte_limit(path: str) -> int:
    """The most bytes rllint reads of the file `path`: a notebook's image outputs are not linted, so it may be
    larger (its code cells are held to the bounds of a Python file)."""
    return MAX_NOTEBOOK_BYTES if file_kind(path) == "notebook" else MAX_FILE_BYTES


def _read(path: str) -> Tuple[Optional[bytes], Optional[FileResult]]:
    try:
        return read_source(path, byte_limit(path)), None
    except SourceError as error:
        return None, _error(path, str(error))
    except OSError as error:
        return None, _error(path, f"cannot be read: {error.strerror or error}")
    except MemoryError:
        return None, _error(path, _OUT_OF_MEMORY)


def lint_data(data: bytes, path: str, settings: Settings, time_limit: float = FILE_TIME_LIMIT) -> FileResult:
    """`lint_bytes` in a worker process, as `lint_files` lints (standard input: an editor's buffer)."""
    outcome = workers.run([(data, path)], functools.partial(lint_bytes, settings=settings), 1, time_limit)[path]
    return _error(path, outcome.message) if isinstance(outcome, workers.Failure) else outcome


def lint_files(paths: Sequence[str], settings: Settings, jobs: Optional[int] = None,
               cache: Optional[ResultCache] = None, isolated: bool = True,
               time_limit: float = FILE_TIME_LIMIT) -> FileResult:
    """Lint files, skipping those the cache knows.

    `isolated` (the command line's way): each file is linted in a worker process (`jobs` of
    them, default one per core), so that a crash in native code costs that file only and no file
    takes longer than `time_limit` seconds. Otherwise in this process, one file after the other.
    Ctrl-C stops the workers and raises KeyboardInterrupt; nothing is cached then.
    """
    return lint_groups([(settings, paths, cache)], jobs, isolated, time_limit)


# Files that share settings (those of one config file) and the result cache of those settings.
Group = Tuple[Settings, Sequence[str], Optional[ResultCache]]


def lint_groups(groups: Sequence[Group], jobs: Optional[int] = None, isolated: bool = True,
                time_limit: float = FILE_TIME_LIMIT) -> FileResult:
    """`lint_files` of each group, its files linted with its settings, in one pool of worker processes for
    them all: a tree of a thousand config files starts one pool, not a thousand one after the other."""
    jobs = jobs or os.cpu_count() or 1
    results: Dict[Tuple[int, str], FileResult] = {}
    pending: Dict[Tuple[int, str], Tuple[bytes, str]] = {}
    linted: List[Tuple[List[str], List[str]]] = []  # each group's paths and the importers linted with them
    for number, (settings, paths, cache) in enumerate(groups):
        # Files of the project outside the run that import one of it: their findings on values written in the
        # run's files are the run's (a pre-commit of `hparams.py` alone reports what its importers make of it).
        name_folders(settings.project_dirs)
        importers = [_shown_path(p, paths[0]) for p in importers_outside(paths, settings)]
        linted.append((list(paths), importers))
        for path in list(paths) + importers:
            data, failure = _read(path)
            if failure is not None:
                results[number, path] = failure
                continue
            digest = content_hash(data)
            cached = cache.get(path, digest) if cache is not None else None
            if cached is not None and cache.stale(cached.dependencies):
                cached = None
            if cached is not None:
                results[number, path] = cached
            else:
                pending[number, path] = (data, digest)
    if isolated:
        tasks = [(data, key, groups[key[0]][0]) for key, (data, _) in pending.items()]
        done = workers.run(tasks, _lint_task, jobs, time_limit, heavy=lambda task: len(task[0]) >= HEAVY_FILE_BYTES)
        fresh = {key: _error(key[1], outcome.message) if isinstance(outcome, workers.Failure) else outcome
                 for key, outcome in done.items()}
    else:
        fresh = {key: lint_bytes(data, key[1], groups[key[0]][0]) for key, (data, _) in pending.items()}
    for key, result in fresh.items():
        results[key] = result
        cache = groups[key[0]][2]
        if cache is not None and not result.errors:
            cache.put(key[1], pending[key][1], result)
    total = FileResult()
    for number, (paths, importers) in enumerate(linted):
        cache = groups[number][2]
        if cache is not None:
            cache.save()
        own = {path: results[number, path] for path in paths + importers}
        found = _reported(paths, importers, own)
        total.diagnostics.extend(found.diagnostics)
        total.errors.extend(found.errors)
        total.notes.extend(note for note in found.notes if note not in total.notes)
    total.diagnostics.sort(key=Diagnostic.sort_key)
    return total


def _lint_task(data: bytes, key: Tuple[int, str], settings: Settings) -> FileResult:
    """A worker's task of `lint_groups`: `key` is (group, path), as a path may be linted in two groups."""
    return lint_bytes(data, key[1], settings)


def _reported(paths: List[str], importers: List[str], results: Dict[str, FileResult]) -> FileResult:
    """What a group's results report: its importers' findings in the group's files only, each finding once."""
    run = {os.path.abspath(path) for path in paths}
    for importer in importers:
        results[importer].diagnostics = [d for d in results[importer].diagnostics if os.path.abspath(d.path) in run]
        results[importer].errors = []
    paths = paths + importers
    total = FileResult()
    used_elsewhere = {(os.path.abspath(other), line, selector)
                      for path in paths for other, line, selector in results[path].used_elsewhere}
    seen = set()
    for path in paths:
        for d in results[path].diagnostics:
            where = os.path.abspath(d.path)
            if d.code == UnusedSuppression.code and (where, d.line, _stale_selector(d)) in used_elsewhere:
                continue  # the comment silenced a finding that another linted file placed there
            # A value written in a shared module is found from each file that imports it: report it once.
            # Byte-identical copies of a file are other paths, and each is reported on its own.
            if (where, d.cell, d.line, d.column, d.code) not in seen:
                seen.add((where, d.cell, d.line, d.column, d.code))
                total.diagnostics.append(d)
        total.errors.extend(results[path].errors)
        total.notes.extend(note for note in results[path].notes if note not in total.notes)
    return total


def _stale_selector(diagnostic: Diagnostic) -> Optional[str]:
    """The selector an RL001 finding calls stale (its message quotes it)."""
    start = diagnostic.message.find("`")
    return diagnostic.message[start + 1:diagnostic.message.find("`", start + 1)] if start >= 0 else None
