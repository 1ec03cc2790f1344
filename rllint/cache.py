"""Results of earlier runs, keyed by file content, settings and rllint's own code.

An unchanged re-run then costs a read and a hash per file instead of a parse. The
cache lives outside the project (`$RLLINT_CACHE_DIR`, else the user's cache folder),
so rllint never writes into the tree it lints; `--no-cache` turns it off.
"""
from __future__ import annotations

import hashlib
import os
import pickle
import tempfile
from pathlib import Path
from typing import Dict, Optional, Tuple

import rllint
from rllint.settings import Settings


def default_cache_dir() -> Path:
    if os.environ.get("RLLINT_CACHE_DIR"):
        return Path(os.environ["RLLINT_CACHE_DIR"])
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


class ResultCache:
    """One pickle per (settings, rllint code) pair: path -> (content hash, result)."""

    def __init__(self, settings: Settings, directory: Optional[Path] = None) -> None:
        fingerprint = repr((
            _code_fingerprint(), settings.select, settings.extend_select, settings.ignore,
            sorted(settings.per_file_ignores.items()), sorted(settings.options.items()), str(settings.root), settings.target_version,
        ))
        key = hashlib.blake2b(fingerprint.encode(), digest_size=16).hexdigest()
        self.path = (directory or default_cache_dir()) / f"{key}.pickle"
        self.entries: Dict[str, Tuple[str, object]] = {}
        self.changed = False
        self._digests: Dict[str, Optional[str]] = {}  # content hashes of dependencies, read once per run
        try:
            with open(self.path, "rb") as handle:
                self.entries = pickle.load(handle)
        except (OSError, pickle.PickleError, EOFError, AttributeError, ImportError, ValueError):
            self.entries = {}

    def get(self, path: str, digest: str) -> Optional[object]:
        entry = self.entries.get(path)
        return entry[1] if entry is not None and entry[0] == digest else None

    def stale(self, dependencies: Dict[str, str]) -> bool:
        """Whether a file that a cached result depends on (a module its values came from) has changed."""
        for path, digest in dependencies.items():
            if path not in self._digests:
                try:
                    with open(path, "rb") as handle:
                        self._digests[path] = content_hash(handle.read())
                except OSError:
                    self._digests[path] = None
            if self._digests[path] != digest:
                return True
        return False

    def put(self, path: str, digest: str, result: object) -> None:
        self.entries[path] = (digest, result)
        self.changed = True

    def save(self) -> None:
        """Write atomically; a cache that cannot be written is silently skipped."""
        if not self.changed:
            return
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            handle, temporary = tempfile.mkstemp(dir=self.path.parent, suffix=".tmp")
            with os.fdopen(handle, "wb") as stream:
                pickle.dump(self.entries, stream, protocol=pickle.HIGHEST_PROTOCOL)
            os.replace(temporary, self.path)
        except OSError:
            pass
