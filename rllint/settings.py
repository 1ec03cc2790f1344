"""The settings of one run: which rules, which files, and the values of rule options.

Built by `rllint.config` from config files and command-line flags; read by the runner
and, through `CSTRule.option`, by rules. Rules never read config files themselves.
"""
from __future__ import annotations

import fnmatch
import sys
from dataclasses import dataclass, field
from pathlib import Path, PurePath
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Set, Tuple

from rllint.catalogue import Entry, names_rule, select
from rllint.files import DEFAULT_EXCLUDES

if TYPE_CHECKING:
    from rllint.options import Option

# The Python running rllint: the target of a project that states none.
RUNNING_PYTHON: Tuple[int, int] = sys.version_info[:2]


@dataclass
class Settings:
    select: Optional[List[str]] = None
    extend_select: List[str] = field(default_factory=list)
    ignore: List[str] = field(default_factory=list)
    per_file_ignores: Dict[str, List[str]] = field(default_factory=dict)
    exclude: List[str] = field(default_factory=lambda: list(DEFAULT_EXCLUDES))
    extend_exclude: List[str] = field(default_factory=list)
    respect_gitignore: bool = True
    force_exclude: bool = False
    lint_vendored: bool = False  # lint copies of RL frameworks found in a walk (`rllint.vendored`)
    options: Dict[str, Any] = field(default_factory=dict)
    root: Path = field(default_factory=Path.cwd)  # the folder relative patterns are anchored at
    # The folders the command line names: a file under one whose project has no marker belongs to it
    # (`rllint.index.project_root`).
    project_dirs: Tuple[str, ...] = ()
    # The oldest Python the project supports, from `requires-python` (None: unknown, see `target_python`).
    target_version: Optional[Tuple[int, int]] = None
    # `target-version` of the config or `--target-version` (`"py39"`): wins over `requires-python`, as in ruff.
    target_version_name: Optional[str] = None
    config_path: Optional[Path] = None
    cache_dir: Optional[str] = None  # `cache-dir` of the config file, made absolute
    docs_url: Optional[str] = None  # where rule pages are, for rule links (`rllint.pages`)
    # ruff's `fixable` and `unfixable`: the rules whose findings get their fix (None: every rule).
    fixable: Optional[List[str]] = None
    unfixable: List[str] = field(default_factory=list)

    def target_python(self) -> Tuple[int, int]:
        """The oldest Python the project's code must run on: `target-version`, else the lower bound of
        `requires-python`, else the Python that runs rllint (never a newer one than the project may use)."""
        if self.target_version_name:
            return 3, int(self.target_version_name[3:])
        return self.target_version or RUNNING_PYTHON

    def fixes(self, code: str) -> bool:
        """Whether findings of rule `code` carry their fix: selected by `fixable` (every rule when unset)
        and not by `unfixable`, the most specific selector winning, as rules are selected."""
        if self.fixable is None and not self.unfixable:
            return True
        chosen = select(["ALL"] if self.fixable is None else self.fixable, (), self.unfixable)
        return code in {entry.code for entry in chosen}

    def option(self, option: Option) -> Any:
        return self.options.get(option.key, option.default)

    def rules(self) -> List[type]:
        """The classes of the selected rules (their family modules imported)."""
        return [entry.rule for entry in self.selected()]

    def selected(self) -> List[Entry]:
        """The selected rules as the catalogue states them, no rule module imported."""
        return select(self.select, self.extend_select, self.ignore)

    def names(self, code: str) -> bool:
        """Whether `select` or `extend-select` names the rule (its code, its name, its family's prefix such as
        `RL5`, or `RL`: all of rllint), not only turns every rule on (`ALL`): a rule whose default form is narrow
        then reports its broad form too, as its page says."""
        return names_rule(list(self.select or []) + list(self.extend_select), code)

    def linted_kinds(self) -> Set[str]:
        """The kinds of file the selected rules judge: Python and notebooks always (RL000), configs when a
        rule reads them."""
        return {"python", "notebook"} | {kind for rule in self.selected() for kind in rule.file_kinds
                                         if rule.kind == "cst"}

    def rules_for(self, path: str) -> List[type]:
        """The classes of the selected rules minus those that `per-file-ignores` turns off for `path`."""
        return [entry.rule for entry in self.selected_for(path)]

    def selected_for(self, path: str) -> List[Entry]:
        """`rules_for` as catalogue entries, no rule module imported."""
        ignored = [s for pattern, selectors in self.per_file_ignores.items()
                   if _matches(path, pattern, self.root) for s in selectors]
        if not ignored:
            return self.selected()
        return select(self.select, self.extend_select, list(self.ignore) + ignored)


def _matches(path: str, pattern: str, root: Path) -> bool:
    """A per-file-ignores glob, matched against the path relative to the config's folder or its name."""
    candidate = Path(path)
    try:
        relative = candidate.resolve().relative_to(root.resolve()).as_posix()
    except (ValueError, OSError):
        relative = candidate.as_posix()
    return (fnmatch.fnmatch(relative, pattern) or PurePath(relative).match(pattern)
            or fnmatch.fnmatch(candidate.name, pattern))
