"""Which settings another file of the project reads (RULES.md, RL606: "read anywhere in the project").

A config class or command line is often declared in one module and read in others: `self.args.beta`
in a trainer that was handed `args` whole, `self.config.training.lr`, `cfg["clip_ratio"]`. Before a
rule says that a field is never read, it asks here whether any other Python file of the project reads
it as an attribute or a string key. The project is the folder rllint runs in when the file is under
it (as `rllint .` is run), else the folder of the nearest project marker above the file.

Only the files that mention a name are recorded as dependencies of the result (a file that starts
reading a setting later is not seen by a cached result until the declaring file changes).
"""
from __future__ import annotations

import os
import re
from typing import Dict, Iterable, List, Set, Tuple

from rllint.cache import content_hash
from rllint.source import SourceError, read_source

_MARKERS = ("pyproject.toml", "setup.py", "setup.cfg", ".git")
_SKIP = frozenset({".git", ".venv", "venv", "node_modules", "site-packages", "__pycache__", "build", "dist",
                   ".tox", ".mypy_cache"})
_MAX_FILES = 5000
_TEXTS: Dict[str, List[Tuple[str, bytes]]] = {}  # project root -> (path, content) of its Python files


def read_elsewhere(file, names: Iterable[str]) -> Set[str]:
    """The `names` that a Python file of the project other than `file` reads (`.name`, `["name"]`,
    `getattr(x, "name")`)."""
    names = set(names)
    here = os.path.abspath(file.path)
    if not names or not os.path.isfile(here):
        return set()  # text from stdin or an editor buffer: no project around it
    found: Set[str] = set()
    for path, data in _project_files(_root(here)):
        if path == here:
            continue
        mentioned = {n for n in names - found if n.encode() in data}
        if not mentioned:
            continue
        file.dependencies[path] = content_hash(data)
        for name in mentioned:
            if re.search(r"\.{0}\b|[\"']{0}[\"']".format(re.escape(name)).encode(), data):
                found.add(name)
    return found


def _root(path: str) -> str:
    cwd = os.getcwd()
    if path.startswith(cwd.rstrip(os.sep) + os.sep):
        return cwd
    folder = os.path.dirname(path)
    candidate = folder
    for _ in range(8):
        if any(os.path.exists(os.path.join(candidate, marker)) for marker in _MARKERS):
            return candidate
        parent = os.path.dirname(candidate)
        if parent == candidate:
            break
        candidate = parent
    return folder


def _project_files(root: str) -> List[Tuple[str, bytes]]:
    if root not in _TEXTS:
        files: List[Tuple[str, bytes]] = []
        for folder, subfolders, names in os.walk(root):
            subfolders[:] = [s for s in subfolders if s not in _SKIP and not s.startswith(".")]
            for name in names:
                if name.endswith(".py") and len(files) < _MAX_FILES:
                    path = os.path.join(folder, name)
                    try:
                        data = read_source(path)
                    except (OSError, SourceError):
                        continue
                    files.append((path, data))
        _TEXTS[root] = files
    return _TEXTS[root]
