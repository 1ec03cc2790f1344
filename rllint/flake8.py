"""The flake8 plugin: rllint's rules inside flake8, and so inside every editor that runs flake8.

flake8 finds it through the `flake8.extension` entry point under the code prefix `RL`. It shows
what `rllint FILE` shows for the file:
- it lints the lines flake8 read with rllint's own runner (one libcst parse; flake8's `ast` tree
  stands in for rllint's own `ast.parse`), with the settings of the closest rllint config above
  the file, so `select`, `ignore`, `per-file-ignores` and rule options apply as on the command line;
- flake8's `--select` and `--extend-select` (or `select` in flake8's config) of RL codes add to
  that selection, so that `flake8 --select RL201` runs RL201 even where it is off by default (`RL`
  alone names the whole plugin and leaves rllint's selection as configured); flake8 then applies
  its own `--select`, `--ignore` and `# noqa` on top;
- as `rllint` does, it also lints the project's modules that import a settings module (`rllint.index`)
  and keeps their findings placed in this file (a value written here, used wrongly there).
rllint's `# rllint: ignore[...]` comments are honoured by the runner.
"""
from __future__ import annotations

import argparse
import ast
import os
from typing import Dict, Iterator, List, Tuple

from rllint import __version__
from rllint.catalogue import UnknownSelector, validate_selectors
from rllint.config import ConfigTree, load_settings
from rllint.diagnostic import Diagnostic
from rllint.index import importers_outside
from rllint.registry import load_rules
from rllint.runner import _shown_path, lint_bytes, lint_text
from rllint.source import SourceError, read_source

_CONFIGS: Dict[Tuple[str, ...], ConfigTree] = {}  # per flake8 selection, built on first use in a process


class Plugin:
    name = "rllint"
    version = __version__
    # RL codes and prefixes that flake8's --select / --extend-select name, more narrowly than `RL`.
    selected: Tuple[str, ...] = ()

    def __init__(self, tree: ast.AST, filename: str, lines: List[str]) -> None:
        self.tree = tree
        self.filename = filename
        self.lines = lines

    @classmethod
    def parse_options(cls, options: argparse.Namespace) -> None:
        """flake8's own selection (command line and its config files), read once per process."""
        named = [*(getattr(options, "select", None) or ()), *(getattr(options, "extend_select", None) or ())]
        cls.selected = tuple(sorted({code.upper() for code in named if _narrows_rllint(code)}))

    def run(self) -> Iterator[Tuple[int, int, str, type]]:
        """flake8's tuples: 1-based line, 0-based column (flake8 adds one), `RLxxx message`."""
        configs = _configs(self.selected)
        path = self.filename if self.filename not in ("-", "stdin") else "stdin.py"
        settings = configs.for_path(path)
        result = lint_text("".join(self.lines), path, settings, kind="python", tree=self.tree)
        found = [d for d in result.diagnostics if d.path == path]
        if path != "stdin.py":
            found += _placed_by_importers(path, settings, configs)
        seen = set()
        for d in sorted(found, key=Diagnostic.sort_key):
            if (d.line, d.column, d.code) not in seen:
                seen.add((d.line, d.column, d.code))
                yield d.line, d.column - 1, f"{d.code} {d.message}", type(self)


def _narrows_rllint(code: str) -> bool:
    """An RL code or prefix of flake8's selection that names rules (not `RL`, the whole plugin)."""
    if not code.upper().startswith("RL") or code.upper() == "RL":
        return False
    try:
        validate_selectors([code.upper()])
    except UnknownSelector:  # flake8 filters by it; rllint has no such rule to run
        return False
    return True


def _configs(selected: Tuple[str, ...]) -> ConfigTree:
    if selected not in _CONFIGS:
        load_rules()
        overrides = {"extend_select": list(selected) or None}
        _CONFIGS[selected] = ConfigTree(load_settings(overrides=overrides), overrides)
    return _CONFIGS[selected]


def _placed_by_importers(path: str, settings, configs: ConfigTree) -> List[Diagnostic]:
    """Findings in `path` that the project's modules importing it place there, as `rllint path` reports them."""
    placed = []
    target = os.path.abspath(path)
    for importer in importers_outside([path], settings):
        try:
            data = read_source(importer)
        except (OSError, SourceError):
            continue
        shown = _shown_path(importer, path)  # as the runner names importers, so that messages read the same
        result = lint_bytes(data, shown, configs.for_path(shown))
        placed += [d for d in result.diagnostics if os.path.abspath(d.path) == target]
    return placed
