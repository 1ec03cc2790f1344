"""Copies of RL frameworks inside a project: not the user's code, so a walk skips them.

Many RL repositories carry a whole copy of verl or OpenRLHF (hundreds of files) beside a
few scripts of their own; findings in the copy are the framework's, not the project's. A
folder is such a copy when it is

- the framework's package (named `verl`, `trl`, `openrlhf`, with that package's module
  layout), or
- a project folder whose own package metadata (`setup.py`, `pyproject.toml`) names the
  framework and which holds that package,

unless it is part of a released distribution (an unpacked wheel beside its `*.dist-info`:
what `pip` installs and what rllint's own real-world benchmark lints) or the folder the
user asked to lint.
"""
from __future__ import annotations

import os
import re
from typing import Dict, FrozenSet, Optional, Tuple

# The package name -> names that must all be in its folder (its module layout).
_LAYOUTS: Dict[str, Tuple[FrozenSet[str], ...]] = {
    "verl": (frozenset({"protocol.py", "trainer", "workers"}), frozenset({"protocol.py", "trainer", "single_controller"})),
    "trl": (frozenset({"__init__.py", "trainer", "models"}),),
    "openrlhf": (frozenset({"__init__.py", "trainer", "models", "cli"}),),
}
_METADATA = ("setup.py", "pyproject.toml")
_WHEEL_PARTS = ("purelib", "platlib")


def vendored_framework(folder: str, names: FrozenSet[str]) -> Optional[str]:
    """The framework that `folder` (whose entries are `names`) is a copy of, or None."""
    package = os.path.basename(os.path.normpath(folder))
    if package in _LAYOUTS and _has_layout(package, names):
        return None if _in_distribution(folder, package) else package
    for framework in _LAYOUTS:
        if framework in names and any(name in names for name in _METADATA):
            if _declares(folder, framework) and _has_layout(framework, _entries(os.path.join(folder, framework))):
                return framework
    return None


def _has_layout(package: str, names: FrozenSet[str]) -> bool:
    return any(layout <= names for layout in _LAYOUTS[package])


def _in_distribution(folder: str, package: str) -> bool:
    """An unpacked wheel: `NAME-VERSION.dist-info` beside the package, or the `*.data/purelib` layout."""
    parent = os.path.dirname(os.path.abspath(folder))
    if os.path.basename(parent) in _WHEEL_PARTS and os.path.dirname(parent).endswith(".data"):
        parent = os.path.dirname(os.path.dirname(parent))
    prefix = package.replace("-", "_") + "-"
    return any(name.startswith(prefix) and name.endswith((".dist-info", ".egg-info")) for name in _entries(parent))


def _declares(folder: str, framework: str) -> bool:
    """The folder's package metadata names the framework (`name="verl"`, `name='verl-core'`)."""
    pattern = re.compile(r"""\bname\s*=\s*["']{}(?:[-_][\w-]+)?["']""".format(re.escape(framework)))
    for name in _METADATA:
        try:
            with open(os.path.join(folder, name), encoding="utf-8", errors="replace") as handle:
                if pattern.search(handle.read(65536)):
                    return True
        except OSError:
            continue
    return False


def _entries(folder: str) -> FrozenSet[str]:
    try:
        return frozenset(os.listdir(folder))
    except OSError:
        return frozenset()
