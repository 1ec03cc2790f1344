"""Which files a run lints: directories walked, excludes and `.gitignore` applied, kinds recognised.

Exclusion follows ruff:
- `exclude` (default `DEFAULT_EXCLUDES`) and `extend-exclude` hold glob patterns. A pattern without
  a `/` (`.venv`, `build`, `*_pb2.py`) is matched with fnmatch against the name of every file and
  folder met in a walk, so it excludes that name at any depth. A pattern with a `/`
  (`tests/fixtures`, `scripts/*.py`, `**/generated`) is matched gitignore-style (`pathspec`) against
  the path relative to `settings.root`, the folder of the config file; a matched folder excludes
  everything below it. Excluded folders are not descended into.
- Paths named on the command line are linted even when excluded, unless `force-exclude` is set
  (pre-commit passes file names and needs the project's excludes applied to them): then the path's
  name, the names of its folders up to `settings.root`, and its path relative to the root are
  checked. Inside a named folder, the patterns (and `.gitignore` files) that exclude the folder
  itself are not applied; the others are.
- With `respect-gitignore`, walks skip what git ignores: `.git/info/exclude` and every `.gitignore`
  from the enclosing repository's top down to the file, each relative to its own folder, the deepest
  deciding (`!keep.py` re-includes). As in git, ruff and ripgrep (astral-sh/ruff#5930, #6335),
  `.gitignore` files outside a git repository are not consulted; a nested repository starts afresh. Explicit paths are never
  gitignored: git itself does not ignore tracked files, and pre-commit passes only those.
- Symbolic links to folders are followed; a link back to a folder of the current walk is not
  descended, and said once in a notice (as ruff warns): a loop is no error, the run goes on.
"""
from __future__ import annotations

import fnmatch
import os
import re
import stat
from typing import TYPE_CHECKING, Dict, List, Optional, Sequence, Set, Tuple

import pathspec

from rllint.diagnostic import FileError
from rllint.source import SourceError, read_source
from rllint.vendored import released, vendored_framework

if TYPE_CHECKING:  # settings name what to exclude; they import this module's defaults
    from rllint.settings import Settings

_KINDS = {".py": "python", ".pyi": "python", ".ipynb": "notebook", ".yaml": "yaml", ".yml": "yaml", ".sh": "shell",
          ".bash": "shell"}
KINDS = ("python", "yaml", "shell")  # the kinds rules judge; a notebook's code cells are judged as Python

# A .gitignore's patterns and the real path of the folder they are relative to.
_Ignore = Tuple[str, pathspec.GitIgnoreSpec]

# As ruff: folders that hold tools' and environments' files, never a project's sources.
DEFAULT_EXCLUDES: Tuple[str, ...] = (
    ".bzr", ".direnv", ".eggs", ".git", ".git-rewrite", ".hg", ".ipynb_checkpoints", ".mypy_cache",
    ".nox", ".pants.d", ".pyenv", ".pytest_cache", ".pytype", ".ruff_cache", ".svn", ".tox", ".venv",
    ".vscode", "__pypackages__", "__pycache__", "_build", "buck-out", "build", "dist", "node_modules",
    "site-packages", "venv",
)



def file_kind(path: str) -> Optional[str]:
    """"python" (.py, .pyi), "notebook" (.ipynb), "yaml" (.yaml, .yml), "shell" (.sh, .bash); None for
    files rllint never lints."""
    return _KINDS.get(os.path.splitext(path)[1])


def discover(paths: Sequence[str], settings: Settings,
             notices: Optional[List[str]] = None) -> Tuple[List[str], List[FileError]]:
    """Files to lint, in a stable sorted order, and errors for paths that cannot be walked.

    Paths are returned as given or joined onto what was given (`src/train.py`), never resolved.
    `notices` collects one line per folder skipped for a reason the user may want to know
    (a vendored copy of an RL framework, `rllint.vendored`; a symbolic link loop).
    """
    walk = _Walk(settings)
    for given in paths:
        walk.explicit(os.path.normpath(given))
    if notices is not None:
        notices.extend(walk.notices)
    return sorted(walk.files), walk.errors


def discover_bounded(folder: str, settings: Settings, limit: int, vendored: bool = False) -> Tuple[List[str], bool]:
    """The files under `folder` as `discover` finds them, meeting at most `limit` files and folders on the
    way, and whether the walk stopped there. For walks nobody asked for (the project index), which must
    end promptly even in a working folder of millions of files. With `vendored`, the files of a copied
    framework that a lint skips are kept too: they are code the project runs (what it reads, what it calls)."""
    walk = _Walk(settings, limit, vendored)
    walk.explicit(os.path.normpath(folder))
    return sorted(walk.files), walk.stopped


class _Walk:
    def __init__(self, settings: Settings, limit: Optional[int] = None, vendored: bool = False) -> None:
        patterns = [p[2:] if p.startswith("./") else p for p in [*settings.exclude, *settings.extend_exclude]]
        names = [p for p in patterns if "/" not in p]
        self._names = re.compile("|".join(fnmatch.translate(p) for p in names)) if names else None
        self._anchored_patterns = [p for p in patterns if "/" in p]
        self._anchored = _spec(self._anchored_patterns)
        self._root = os.path.realpath(settings.root)
        self._force_exclude = settings.force_exclude
        self._gitignore = settings.respect_gitignore
        self._kinds = settings.linted_kinds()
        self._vendored = not settings.lint_vendored and not vendored  # skip the framework's own files of a copy
        self.notices: List[str] = []
        self._specs: Dict[str, Optional[_Ignore]] = {}  # folder -> its .gitignore, read once
        self._loops: Set[Tuple[int, int]] = set()  # the links already in a notice
        self.files: Set[str] = set()
        self.errors: List[FileError] = []
        self._left = limit  # files and folders the walk may still meet (None: no bound)
        self.stopped = False  # the bound was reached: the walk saw part of the tree

    def explicit(self, path: str) -> None:
        try:
            status = os.stat(path)
        except OSError as error:
            self.errors.append(FileError(path, error.strerror or str(error)))
            return
        is_dir = stat.S_ISDIR(status.st_mode)
        if self._force_exclude and self._force_excluded(path, is_dir):
            return
        if is_dir:
            self._walk(path, (status.st_dev, status.st_ino))
        elif file_kind(path) in self._kinds:
            self.files.add(path)

    def _relative(self, real: str) -> Optional[str]:
        """`real` relative to the root, or None when it is outside."""
        if real == self._root:
            return ""
        prefix = self._root.rstrip(os.sep) + os.sep
        return real[len(prefix):].replace(os.sep, "/") if real.startswith(prefix) else None

    def _name_excluded(self, name: str) -> bool:
        return self._names is not None and self._names.match(name) is not None

    def _force_excluded(self, path: str, is_dir: bool) -> bool:
        """An explicit path under `force-exclude`: its names up to the root, and its relative path."""
        real = os.path.normpath(os.path.join(os.path.realpath(os.path.dirname(path) or "."), os.path.basename(path)))
        relative = self._relative(real)
        if relative is None:
            return self._name_excluded(os.path.basename(real))
        names = relative.split("/") if relative else []
        return any(map(self._name_excluded, names)) or _path_matches(self._anchored, relative, is_dir)

    def _walk(self, top: str, top_id: Tuple[int, int]) -> None:
        """Depth-first from an explicit folder; each pending folder carries its gitignore stack and
        its ancestors (id, shown path).

        An exclude pattern or a `.gitignore` that excludes the explicit folder itself would exclude
        everything in it; since the user named the folder, it is not applied inside.
        """
        top_real = os.path.realpath(top)
        top_relative = self._relative(top_real)
        anchored = self._anchored
        if _path_matches(anchored, top_relative, True):
            anchored = _spec([p for p in self._anchored_patterns if not _path_matches(_spec([p]), top_relative, True)])
        ignores = self._repo_ignores(top_real, top=True) if self._gitignore else None
        if ignores:
            ignores = tuple(i for i in ignores if i[0] == top_real or not _ignored((i,), top_real, True))
        pending = [(top, top_real, top_relative, ignores, ((top_id, top),), None)]
        while pending:
            shown, real, relative_folder, ignores, ancestors, framework = pending.pop()
            try:
                with os.scandir(shown) as listing:
                    entries = sorted(listing, key=lambda entry: entry.name)  # a bounded walk sees the same part
            except OSError as error:
                self.errors.append(FileError(shown, f"cannot list directory: {error.strerror or error}"))
                continue
            names = frozenset(entry.name for entry in entries)
            if shown != top and self._vendored and framework is None:
                framework = vendored_framework(shown, names)
                if framework is not None:
                    self.notices.append(f"{shown}: a copy of the {framework} framework: only its files that no "
                                        f"release of {framework} has are linted (all of them with --lint-vendored)")
            if self._gitignore and shown != top:
                ignores = self._folder_ignores(real, ignores, names)
            for entry in entries:
                if self._left is not None:
                    if self._left == 0:
                        self.stopped = True
                        return
                    self._left -= 1
                name = entry.name
                child_shown = name if shown == "." else os.path.join(shown, name)
                child_real = os.path.join(real, name)
                relative = None if relative_folder is None else (
                    f"{relative_folder}/{name}" if relative_folder else name)
                try:
                    is_dir = entry.is_dir()
                except OSError:
                    is_dir = False
                if not is_dir and not (file_kind(name) in self._kinds and (entry.is_file() or entry.is_symlink())):
                    continue  # a dangling `.py` link is kept: the runner reports that it cannot be read
                if (self._name_excluded(name) or _path_matches(anchored, relative, is_dir)
                        or _ignored(ignores, child_real, is_dir)):
                    continue
                if not is_dir:
                    if framework is None or not _released_file(framework, child_shown):
                        self.files.add(child_shown)
                    continue
                try:
                    status = entry.stat()
                except OSError as error:
                    self.errors.append(FileError(child_shown, error.strerror or str(error)))
                    continue
                identity = (status.st_dev, status.st_ino)
                looped = next((seen for known, seen in ancestors if known == identity), None)
                if looped is not None:
                    self._loop(entry, child_shown, looped)
                else:
                    pending.append((child_shown, child_real, relative, ignores, ancestors + ((identity, child_shown),),
                                    framework))

    def _loop(self, entry: os.DirEntry, shown: str, ancestor: str) -> None:
        link = entry.stat(follow_symlinks=False)
        if (link.st_dev, link.st_ino) not in self._loops:
            self._loops.add((link.st_dev, link.st_ino))
            self.notices.append(f"{shown}: a symbolic link loop (it leads back to {ancestor!r}); not descended")

    def _repo_ignores(self, real: str, top: bool) -> Optional[Tuple[_Ignore, ...]]:
        """The gitignore stack of folder `real`: from its repository's top (the first folder up that
        has `.git`) down to it. None outside a repository. `top`: look above `real` for the repository."""
        chain = []
        folder = real
        while not os.path.exists(os.path.join(folder, ".git")):
            parent = os.path.dirname(folder)
            if not top or parent == folder:
                return None
            chain.append(folder)
            folder = parent
        chain.append(folder)
        stack = [spec for spec in [_info_exclude(folder)] if spec is not None]
        stack.extend(spec for spec in map(self._folder_spec, reversed(chain)) if spec is not None)
        return tuple(stack)

    def _folder_ignores(self, real: str, ignores: Optional[Tuple[_Ignore, ...]], names: Set[str]
                        ) -> Optional[Tuple[_Ignore, ...]]:
        """The stack for a folder met in the walk: a nested repository starts a new one."""
        if ".git" in names:
            return self._repo_ignores(real, top=False)
        if ignores is None or ".gitignore" not in names:
            return ignores
        spec = self._folder_spec(real)
        return ignores if spec is None else ignores + (spec,)

    def _folder_spec(self, real: str) -> Optional[_Ignore]:
        if real not in self._specs:
            self._specs[real] = _read_spec(real, os.path.join(real, ".gitignore"))
        return self._specs[real]


def _spec(patterns: List[str]) -> Optional[pathspec.GitIgnoreSpec]:
    return pathspec.GitIgnoreSpec.from_lines(patterns) if patterns else None


def _path_matches(spec: Optional[pathspec.GitIgnoreSpec], relative: Optional[str], is_dir: bool) -> bool:
    """Whether an exclude pattern with a `/` matches a path relative to the root (None: outside it)."""
    if spec is None or not relative:
        return False
    return spec.match_file(relative + "/" if is_dir else relative)


def _ignored(ignores: Optional[Tuple[_Ignore, ...]], real: str, is_dir: bool) -> bool:
    """Whether git ignores `real`: the deepest .gitignore with a matching pattern decides."""
    if not ignores:
        return False
    for base, spec in reversed(ignores):
        relative = real[len(base.rstrip(os.sep)) + 1:].replace(os.sep, "/")
        result = spec.check_file(relative + "/" if is_dir else relative)
        if result.include is not None:
            return result.include
    return False


def _info_exclude(top: str) -> Optional[_Ignore]:
    """`info/exclude` of the repository at `top`; `.git` may be a file pointing elsewhere (worktrees)."""
    git = os.path.join(top, ".git")
    if os.path.isfile(git):
        pointer = _text(git)
        if pointer is None or not pointer.strip().startswith("gitdir:"):
            return None
        git = os.path.join(top, pointer.strip()[len("gitdir:"):].strip())
        common = _text(os.path.join(git, "commondir"))
        if common is not None:
            git = os.path.join(git, common.strip())
    return _read_spec(top, os.path.join(git, "info", "exclude"))


def _text(path: str) -> Optional[str]:
    """A small git file as text (any bytes decode); None when it is missing, unreadable or not a regular file."""
    try:
        return read_source(path).decode("utf-8", "surrogateescape")
    except (OSError, SourceError):
        return None


def _read_spec(base: str, path: str) -> Optional[_Ignore]:
    text = _text(path)
    if text is None:
        return None
    spec = _git_spec(text.splitlines())
    return (base, spec) if len(spec) else None


def _git_spec(lines: List[str]) -> pathspec.GitIgnoreSpec:
    """The patterns of a .gitignore. Lines that git accepts but pathspec rejects (`build\\` with a trailing
    backslash, `[z-a]`, a lone `!`) match nothing in git either: they are left out."""
    try:
        return pathspec.GitIgnoreSpec.from_lines(lines)
    except (ValueError, re.error):  # GitIgnorePatternError is a ValueError
        return pathspec.GitIgnoreSpec.from_lines([line for line in lines if _git_problem(line) is None])


def pattern_problem(patterns: Sequence[str]) -> Optional[str]:
    """Why one of these exclude patterns cannot be used (for a config error), or None when all can."""
    for pattern in patterns:
        problem = _pattern_problem(pattern[2:] if pattern.startswith("./") else pattern)
        if problem is not None:
            return f"invalid pattern {pattern!r}: {problem}"
    return None


def _pattern_problem(pattern: str) -> Optional[str]:
    """Patterns with a `/` are gitignore patterns (pathspec), the others name globs (fnmatch)."""
    if "/" in pattern:
        return _git_problem(pattern)
    try:
        re.compile(fnmatch.translate(pattern))
    except re.error as error:
        return str(error)
    return None


def _git_problem(pattern: str) -> Optional[str]:
    try:
        pathspec.GitIgnoreSpec.from_lines([pattern])
    except (ValueError, re.error) as error:
        return str(error)
    return None


def _released_file(framework: str, path: str) -> bool:
    """A file of a vendored copy that is the framework's: a Python file byte for byte a file of one of its
    releases, or a launch config (the framework's examples are not in its releases, so a copy's configs cannot
    be told from the project's: they are left alone)."""
    if file_kind(path) != "python":
        return True
    try:
        data = read_source(path)
    except (OSError, SourceError):
        return False  # the run reports that it cannot be read
    return released(framework, data)


_TEST_FOLDERS = frozenset({"test", "tests", "testing", "smoke", "debug", "unittests", "test_utils", "testing_utils"})
_TEST_STEM = re.compile(r"^(?:test_.*|.*_test|tests?|conftest|testing_utils)$|(?:^|[_\-.])(?:smoke|debug)(?:$|[_\-.])")


def is_test_path(path: str) -> bool:
    """Test, fixture, smoke-test and debug code, by its path: not a run's settings."""
    parts = re.split(r"[\\/]+", path)
    folders = {part.lower() for part in parts[:-1]}
    stem = parts[-1].rsplit(".", 1)[0].lower()
    return bool(folders & _TEST_FOLDERS) or bool(_TEST_STEM.search(stem))
