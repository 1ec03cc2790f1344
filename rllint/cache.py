"""Results of earlier runs, keyed by file content, settings and rllint's own code.

An unchanged re-run then costs a read and a hash per file instead of a parse. The cache
lives outside the project (`--cache-dir`, else `$RLLINT_CACHE_DIR`, else the `cache-dir`
config key, else the user's cache folder), so rllint never writes into the tree it lints;
`--no-cache` turns it off and `rllint clean` removes it.

rllint owns only what it made (issue 26.2): a cache folder is rllint's when it holds rllint's
`CACHEDIR.TAG` (written, never through a link, into a folder rllint creates or finds empty).
rllint writes, prunes and cleans only in such a folder, and there only its own file names;
a `cache-dir` that points at a folder of other files is left alone and the run is not cached.

The cache is data, not code: JSON, every entry checked on load. Each file is signed with a
key that only this user can read (`cache-key` in rllint's config folder, or `$RLLINT_CACHE_KEY`,
made on first use with mode 0600), so that whoever can write the cache folder (a CI cache restored from another job, a
shared cluster folder) cannot forge a result that hides a finding (issue 26.9): a file whose
signature does not match is a miss and is rewritten. Without a usable key nothing is cached. A
result remembers the files it read (values imported from project modules) with their content
hashes, and the files an import was looked for in but not found (hash ""), so that a module
that appears later makes the result stale.

A cache file is one header line, `{"format": 2, "root": ..., "signature": ...}` (`root` is the
project the results are of, which `rllint clean` reads), and the entries as JSON. The folder is
pruned as it is written: entries of files that no longer exist are dropped, and cache files not
written for `_MAX_AGE_DAYS` days, or beyond the newest `_MAX_FILES`, are removed.
"""
from __future__ import annotations

import functools
import hashlib
import hmac
import json
import os
import re
import secrets
import stat
import time
from pathlib import Path
from typing import Any, Dict, List, Optional

import rllint
from rllint.settings import Settings
from rllint.source import SourceError, content_hash, read_source, write_beside

_FORMAT = 2
_PREFIX = "results-"
_MAX_FILES = 64
_MAX_AGE_DAYS = 30
_MAX_CACHE_BYTES = 512 * 1024 * 1024
_MAX_HEADER_BYTES = 64 * 1024
_TAG = "CACHEDIR.TAG"
_TAG_TEXT = ("Signature: 8a477f597d28d172789f06886806bc55\n"
             "# This file is a cache directory tag created by rllint; see https://bford.info/cachedir/\n")
_KEY_FILE = "cache-key"
_CODE = re.compile(r"RL\d{3}")
_LEGACY = re.compile(r"[0-9a-f]{32}\.pickle|tmp\w+\.tmp")
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)


def default_cache_dir(settings: Optional[Settings] = None) -> Path:
    """`$RLLINT_CACHE_DIR`, else the config's `cache-dir`, else `$XDG_CACHE_HOME/rllint` or `~/.cache/rllint`."""
    if os.environ.get("RLLINT_CACHE_DIR"):
        return Path(os.environ["RLLINT_CACHE_DIR"])
    if settings is not None and settings.cache_dir is not None:
        return Path(settings.cache_dir)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "rllint"


def key_path() -> Path:
    """Where the user's cache key is kept: `$RLLINT_CACHE_KEY`, else `$XDG_CONFIG_HOME/rllint/cache-key`, else
    `~/.config/rllint/cache-key` (never in a cache folder, which others may write)."""
    if os.environ.get("RLLINT_CACHE_KEY"):
        return Path(os.environ["RLLINT_CACHE_KEY"])
    base = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return Path(base) / "rllint" / _KEY_FILE


@functools.lru_cache(maxsize=4)
def _signing_key(path: Path) -> Optional[bytes]:
    """The key at `path`, made (random, mode 0600, in a folder of mode 0700) when there is none; None when
    it cannot be made or read, or when others could read or change it (not a regular file of this user's,
    or open to the group or others)."""
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        if not path.exists():
            write_beside(str(path), secrets.token_hex(32).encode(), ".cache-key.", "", mode=0o600)
        descriptor = os.open(path, os.O_RDONLY | _NOFOLLOW)
        with os.fdopen(descriptor, "rb") as handle:
            status = os.fstat(handle.fileno())
            key = handle.read(1024)
    except OSError:
        return None
    private = os.name != "posix" or (status.st_uid == os.getuid() and not status.st_mode & 0o077)
    return key if stat.S_ISREG(status.st_mode) and private and len(key) >= 32 else None


def _signature(key: bytes, root: str, entries: bytes) -> str:
    return hashlib.blake2b(root.encode("utf-8", "surrogatepass") + b"\0" + entries, key=key[:64],
                           digest_size=32).hexdigest()


def _code_fingerprint() -> str:
    """rllint's version and its source files' sizes and times: a changed rule invalidates old results."""
    package = Path(rllint.__file__).parent
    parts = [rllint.__version__]
    for path in sorted(package.rglob("*.py")):
        stat_result = path.stat()
        parts.append(f"{path.relative_to(package)}:{stat_result.st_size}:{stat_result.st_mtime_ns}")
    return "\n".join(parts)


def owned(directory: Path) -> bool:
    """Whether rllint made `directory` a cache folder: it holds rllint's CACHEDIR.TAG, a regular file."""
    try:
        descriptor = os.open(directory / _TAG, os.O_RDONLY | _NOFOLLOW | getattr(os, "O_NONBLOCK", 0))
        with os.fdopen(descriptor, "rb") as handle:
            return stat.S_ISREG(os.fstat(handle.fileno()).st_mode) and handle.read(len(_TAG_TEXT) + 1) == _TAG_TEXT.encode()
    except OSError:
        return False


def _claim(directory: Path) -> bool:
    """Make `directory` rllint's cache folder if it is new or empty (its tag written without following a
    link: a dangling `CACHEDIR.TAG` link must not make rllint create the file it points to); whether it
    is rllint's now."""
    try:
        directory.mkdir(parents=True, exist_ok=True)
        if owned(directory):
            return True
        if os.listdir(directory):
            return False
        descriptor = os.open(directory / _TAG, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW, 0o644)
        with os.fdopen(descriptor, "w") as handle:
            handle.write(_TAG_TEXT)
    except OSError:
        return False
    return owned(directory)


def clean(directory: Path, root: Optional[Path] = None) -> int:
    """Remove rllint's cache files from `directory` when rllint made it: those of the project at `root` (of
    files linted with a config at or below it), or with `root` None all of them and the leftovers of
    interrupted writes; then the tag and the folder when nothing else is left. The number of files removed.
    Other files, and folders that are not rllint's, are left alone."""
    if not owned(directory):
        return 0
    removed = 0
    for name in _names(directory):
        if root is not None and not _of_project(directory / name, root):
            continue
        try:
            os.unlink(directory / name)
            removed += 1
        except OSError:
            pass
    try:
        if os.listdir(directory) == [_TAG]:
            os.unlink(directory / _TAG)
            os.rmdir(directory)
    except OSError:
        pass
    return removed


def _names(directory: Path) -> List[str]:
    """rllint's cache files in `directory` (regular files of its own names: never a link)."""
    try:
        entries = list(os.scandir(directory))
    except OSError:
        return []
    return [entry.name for entry in entries if _ours(entry.name) and entry.is_file(follow_symlinks=False)]


def _ours(name: str) -> bool:
    """rllint's cache files, write leftovers, and the pickles of rllint 0.1 (never read: pickle runs code)."""
    return (name.startswith(_PREFIX) and name.endswith((".json", ".tmp"))) or _LEGACY.fullmatch(name) is not None


def _of_project(path: Path, root: Path) -> bool:
    """Whether the cache file `path` holds results of the project at `root` (its header says so)."""
    if path.suffix != ".json" or not path.name.startswith(_PREFIX):
        return False
    try:
        with open(path, "rb") as handle:
            header = json.loads(handle.readline(_MAX_HEADER_BYTES))
        project = Path(header["root"])
    except (OSError, ValueError, KeyError, TypeError, RecursionError):
        return False
    return project == root or root in project.parents


class ResultCache:
    """One JSON file per (settings, rllint code) pair: path -> (content hash, result). `problem` says why
    nothing is read or written (no usable key, a folder that is not rllint's), else it is None."""

    def __init__(self, settings: Settings, directory: Optional[Path] = None) -> None:
        fingerprint = repr((
            _code_fingerprint(), settings.select, settings.extend_select, settings.ignore,
            sorted(settings.per_file_ignores.items()), sorted(settings.options.items()), str(settings.root),
            settings.project_dirs, settings.target_python(), settings.fixable, settings.unfixable,
        ))
        key = hashlib.blake2b(fingerprint.encode(), digest_size=16).hexdigest()
        self.directory = Path(directory) if directory is not None else default_cache_dir(settings)
        self.path = self.directory / f"{_PREFIX}{key}.json"
        self.root = str(settings.root)
        self.entries: Dict[str, Any] = {}
        self.changed = False
        self._key = _signing_key(key_path())
        self.problem = None if self._key is not None else (
            f"the result cache is off: its key {key_path()} cannot be made or read, or is not private to you "
            "(it must be your regular file, mode 0600)")
        self._digests: Dict[str, str] = {}  # content hashes of dependencies, read once per run
        self._load()

    def _load(self) -> None:
        if self._key is None:
            return
        try:
            header_line, _, body = read_source(str(self.path), _MAX_CACHE_BYTES).partition(b"\n")
            header = json.loads(header_line)
            if not (isinstance(header, dict) and header.get("format") == _FORMAT and header.get("root") == self.root
                    and hmac.compare_digest(str(header.get("signature")), _signature(self._key, self.root, body))):
                return
            document = json.loads(body)
        except (OSError, SourceError, ValueError, TypeError, RecursionError, MemoryError):
            return
        if isinstance(document, dict):
            self.entries = document

    def get(self, path: str, digest: str) -> Optional[Any]:
        """The cached result of `path` at content `digest`; None (a miss) for anything not of the right shape."""
        entry = self.entries.get(path)
        if not isinstance(entry, dict) or entry.get("digest") != digest:
            return None
        result = _result(entry.get("result"))
        if result is None:
            self.entries.pop(path, None)
            self.changed = True
        return result

    def stale(self, dependencies: Dict[str, str]) -> bool:
        """Whether a file that a cached result depends on has changed, appeared (recorded as "") or gone."""
        for path, digest in dependencies.items():
            if path not in self._digests:
                try:
                    self._digests[path] = content_hash(read_source(path))
                except (OSError, SourceError):
                    self._digests[path] = ""
            if self._digests[path] != digest:
                return True
        return False

    def put(self, path: str, digest: str, result: Any) -> None:
        encoded = _encoded(result)
        if encoded is not None:
            self.entries[path] = {"digest": digest, "result": encoded}
            self.changed = True

    def save(self) -> None:
        """Write atomically, dropping entries of files that are gone, and prune the folder. A cache that
        cannot be written is skipped and leaves no temporary file behind; one in a folder that is not
        rllint's (`_claim`) is not written at all (`problem` says so)."""
        if not self.changed or self._key is None:
            return
        if not _claim(self.directory):
            self.problem = (f"the result cache is off: {self.directory} holds files rllint did not make (it has no "
                            "CACHEDIR.TAG of rllint's); give `cache-dir` a new or empty folder")
            return
        entries = {path: entry for path, entry in self.entries.items() if os.path.isfile(path)}
        try:
            body = json.dumps(entries, separators=(",", ":")).encode()
            header = json.dumps({"format": _FORMAT, "root": self.root,
                                 "signature": _signature(self._key, self.root, body)}).encode()
            write_beside(str(self.path), header + b"\n" + body, _PREFIX, ".tmp")
        except (OSError, TypeError, ValueError):
            pass
        self._prune()

    def _prune(self) -> None:
        """Remove cache files of other settings or rllint versions that are old, or too many."""
        files = []
        for name in _names(self.directory):
            try:
                files.append((os.stat(self.directory / name, follow_symlinks=False).st_mtime, name))
            except OSError:
                continue
        files.sort(reverse=True)
        cutoff = time.time() - _MAX_AGE_DAYS * 86400
        for rank, (modified, name) in enumerate(files):
            if name == self.path.name:
                continue
            stale_temporary = name.endswith(".tmp") and modified < time.time() - 3600
            if rank >= _MAX_FILES or modified < cutoff or stale_temporary:
                try:
                    os.unlink(self.directory / name)
                except OSError:
                    pass


def _encoded(result: Any) -> Optional[Dict[str, Any]]:
    """A FileResult as JSON data; None for one that is not cached (it has errors)."""
    if result.errors:
        return None
    return {
        "diagnostics": [d.to_dict() for d in result.diagnostics],
        "dependencies": dict(result.dependencies),
        "used_elsewhere": [list(item) for item in result.used_elsewhere],
    }


def _result(data: Any) -> Optional[Any]:
    """The FileResult that `data` describes, or None when any part of it is not what `_encoded` writes."""
    from rllint.diagnostic import Diagnostic, FileResult, Severity

    if not isinstance(data, dict) or set(data) != {"diagnostics", "dependencies", "used_elsewhere"}:
        return None
    diagnostics, dependencies, used = data["diagnostics"], data["dependencies"], data["used_elsewhere"]
    if not (isinstance(diagnostics, list) and isinstance(dependencies, dict) and isinstance(used, list)):
        return None
    if not all(isinstance(k, str) and isinstance(v, str) for k, v in dependencies.items()):
        return None
    if not all(isinstance(u, list) and len(u) == 3 and isinstance(u[0], str) and _count(u[1])
               and isinstance(u[2], str) for u in used):
        return None
    decoded: List[Diagnostic] = []
    for d in diagnostics:
        if not isinstance(d, dict) or not _DIAGNOSTIC_KEYS <= set(d) <= _DIAGNOSTIC_KEYS | {"step"}:
            return None
        if not (all(isinstance(d[k], str) for k in ("path", "name", "message")) and _CODE.fullmatch(str(d["code"]))
                and all(_count(d[k]) for k in ("line", "column", "end_line", "end_column"))
                and d["severity"] in _SEVERITIES and (d["cell"] is None or _count(d["cell"]))
                and _count(d.get("step", 0))):
            return None
        fix = None if d["fix"] is None else _fix(d["fix"])
        if d["fix"] is not None and fix is None:
            return None
        decoded.append(Diagnostic(d["path"], d["line"], d["column"], d["end_line"], d["end_column"], d["code"],
                                  d["name"], Severity(d["severity"]), d["message"], fix, d["cell"], d.get("step")))
    return FileResult(diagnostics=decoded, dependencies=dependencies,
                      used_elsewhere=[(u[0], u[1], u[2]) for u in used])


def _fix(data: Any) -> Optional[Any]:
    """The Fix that `data` (its `to_dict`) describes, or None when it is not of that shape."""
    from rllint.fix import Edit, Fix

    if not isinstance(data, dict) or set(data) != {"message", "applicability", "edits"}:
        return None
    if not (isinstance(data["message"], str) and data["applicability"] in ("safe", "unsafe")
            and isinstance(data["edits"], list)):
        return None
    edits = []
    for edit in data["edits"]:
        if not (isinstance(edit, dict) and set(edit) == {"content", "location", "end_location"}
                and isinstance(edit["content"], str)):
            return None
        start, end = edit["location"], edit["end_location"]
        if not all(isinstance(p, dict) and set(p) == {"row", "column"} and _count(p["row"]) and _count(p["column"])
                   for p in (start, end)):
            return None
        edits.append(Edit(start["row"], start["column"], end["row"], end["column"], edit["content"]))
    return Fix(data["message"], tuple(edits), data["applicability"] == "safe")


def _count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


_DIAGNOSTIC_KEYS = {"path", "line", "column", "end_line", "end_column", "code", "name", "severity", "message", "fix",
                    "cell"}
_SEVERITIES = {"error", "warning", "info"}
