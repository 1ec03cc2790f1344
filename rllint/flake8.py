"""The flake8 plugin: rllint's rules inside flake8, and so inside every editor that runs flake8.

flake8 finds it through the `flake8.extension` entry point under the code prefix `RL`. It lints
the lines flake8 read with rllint's own runner (one libcst parse; flake8's `ast` tree stands in
for rllint's own `ast.parse`), with the settings of the closest rllint config above the file, so
`select`, `ignore`, `per-file-ignores` and rule options apply as on the command line; flake8
then applies its own `--select`, `--ignore` and `# noqa` on top. rllint's `# rllint: ignore[...]`
comments are honoured by the runner.
"""
from __future__ import annotations

import ast
from typing import Iterator, List, Tuple

from rllint import __version__
from rllint.config import ConfigTree, load_settings
from rllint.registry import load_rules
from rllint.runner import lint_text

_CONFIGS: List[ConfigTree] = []  # one per flake8 process, built on first use


class Plugin:
    name = "rllint"
    version = __version__

    def __init__(self, tree: ast.AST, filename: str, lines: List[str]) -> None:
        self.tree = tree
        self.filename = filename
        self.lines = lines

    def run(self) -> Iterator[Tuple[int, int, str, type]]:
        """flake8's tuples: 1-based line, 0-based column (flake8 adds one), `RLxxx message`."""
        if not _CONFIGS:
            load_rules()
            _CONFIGS.append(ConfigTree(load_settings()))
        path = self.filename if self.filename not in ("-", "stdin") else "stdin.py"
        settings = _CONFIGS[0].for_path(path)
        result = lint_text("".join(self.lines), path, settings, kind="python", tree=self.tree)
        for d in result.diagnostics:
            if d.path == path:
                yield d.line, d.column - 1, f"{d.code} {d.message}", type(self)
