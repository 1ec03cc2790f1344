"""Results of earlier runs, keyed by file content, settings and rllint's own code.

An unchanged re-run then costs a read and a hash per file instead of a parse. The cache
lives outside the project (`--cache-dir`, else `$RLLINT_CACHE_DIR`, else the `cache-dir`
config key, else the user's cache folder), so rllint never writes into the tree it lints;
`--no-cache` turns it off and `rllint clean` removes it.

The cache is data, not code: JSON, every entry checked on load. Whoever can write the
folder (a CI cache restored from another job, a shared cluster folder) can make a file
a miss, never run code; anything unreadable or of another shape is a miss and is
rewritten. A result remembers the files it read (values imported from project modules)
with their content hashes, and the files an import was looked for in but not found
(hash ""), so that a module that appears later makes the result stale.

The folder is pruned as it is written: entries of files that no longer exist are dropped,
and cache files not written for `_MAX_AGE_DAYS` days, or beyond the newest `_MAX_FILES`, are
removed.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import tempfile
import time
from pathlib import Path
from typing import Any, Dict, List, Optional

import rllint
from rllint.settings import Settings

_FORMAT = 1
_PREFIX = "results-"
_MAX_FILES = 64
_MAX_AGE_DAYS = 30
_MAX_CACHE_BYTES = 512 * 1024 * 1024
_TAG = "CACHEDIR.TAG"
_TAG_TEXT = ("Signature: 8a477f597d28d172789f06886806bc55\n"
             "# This file is a cache directory tag created by rllint; see https://bford.info/cachedir/\n")
_CODE = re.compile(r"RL\d{3}")
_LEGACY = re.compile(r"[0-9a-f]{32}\.pickle|tmp\w+\.tmp")


def default_cache_dir(settings: Optional[Settings] = None) -> Path:
    """`$RLLINT_CACHE_DIR`, else the config's `cache-dir`, else `$XDG_CACHE_HOME/rllint` or `~/.cache/rllint`."""
    if os.environ.get("RLLINT_CACHE_DIR"):
        return Path(os.environ["RLLINT_CACHE_DIR"])
    if settings is not None and settings.cache_dir is not None:
        return Path(settings.cache_dir)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "rllint"


def content_hash(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=16).hexdigest()


def _code_fingerprint() -> str:
    """rllint's version and its source files' sizes and times: a changed rule invalidates old results."""
    package = Path(rllint.__file__).parent
    parts = [rllint.__version__]
    for path in sorted(package.rglob("*.py")):
        stat = path.stat()
        parts.append(f"{path.relative_to(package)}:{stat.st_size}:{stat.st_mtime_ns}")
    return "\n".join(parts)


def clean(directory: Path) -> int:
    """Remove rllint's cache files (and leftovers of interrupted writes) from `directory`, then the
    folder itself when nothing else is in it; the number of files removed. Other files are left alone."""
    removed = 0
    try:
        names = os.listdir(directory)
    except OSError:
        return 0
    for name in names:
        if _ours(name) or name == _TAG:
            try:
                os.unlink(directory / name)
                removed += 1
            except OSError:
                pass
    try:
        os.rmdir(directory)
    except OSError:
        pass
    return removed


def _ours(name: str) -> bool:
    """rllint's cache files, write leftovers, and the pickles of rllint 0.1 (never read: pickle runs code)."""
    return (name.startswith(_PREFIX) and name.endswith((".json", ".tmp"))) or _LEGACY.fullmatch(name) is not None


class ResultCache:
    """One JSON file per (settings, rllint code) pair: path -> (content hash, result)."""

    def __init__(self, settings: Settings, directory: Optional[Path] = None) -> None:
        fingerprint = repr((
            _code_fingerprint(), settings.select, settings.extend_select, settings.ignore,
            sorted(settings.per_file_ignores.items()), sorted(settings.options.items()), str(settings.root),
            settings.target_version,
        ))
        key = hashlib.blake2b(fingerprint.encode(), digest_size=16).hexdigest()
        self.directory = Path(directory) if directory is not None else default_cache_dir(settings)
        self.path = self.directory / f"{_PREFIX}{key}.json"
        self.entries: Dict[str, Any] = {}
        self.changed = False
        self._digests: Dict[str, str] = {}  # content hashes of dependencies, read once per run
        self._load()

    def _load(self) -> None:
        from rllint.source import SourceError, read_source

        try:
            document = json.loads(read_source(str(self.path), _MAX_CACHE_BYTES))
        except (OSError, SourceError, ValueError, RecursionError, MemoryError):
            return
        if isinstance(document, dict) and document.get("format") == _FORMAT and isinstance(document.get("entries"), dict):
            self.entries = document["entries"]

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
        from rllint.source import SourceError, read_source

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
        """Write atomically, dropping entries of files that are gone, and prune the folder; a cache that
        cannot be written is silently skipped and leaves no temporary file behind."""
        if not self.changed:
            return
        entries = {path: entry for path, entry in self.entries.items() if os.path.isfile(path)}
        temporary = None
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            tag = self.directory / _TAG
            if not tag.exists():
                tag.write_text(_TAG_TEXT)
            handle, temporary = tempfile.mkstemp(dir=self.directory, prefix=_PREFIX, suffix=".tmp")
            with os.fdopen(handle, "w", encoding="utf-8") as stream:
                json.dump({"format": _FORMAT, "entries": entries}, stream, separators=(",", ":"))
            os.replace(temporary, self.path)
            temporary = None
        except (OSError, TypeError, ValueError):
            pass
        finally:
            if temporary is not None:
                try:
                    os.unlink(temporary)
                except OSError:
                    pass
        self._prune()

    def _prune(self) -> None:
        """Remove cache files of other settings or rllint versions that are old, or too many."""
        try:
            names = [name for name in os.listdir(self.directory) if _ours(name)]
        except OSError:
            return
        files = []
        for name in names:
            try:
                files.append((os.stat(self.directory / name).st_mtime, name))
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
    from rllint.diagnostic import Diagnostic, Severity
    from rllint.runner import FileResult

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
