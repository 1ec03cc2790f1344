"""Settings from the closest config file and the command line; any unknown or ill-typed key is an error.

Config files, closest first in each folder as ruff looks for them: `.rllint.toml`, `rllint.toml`
(keys at top level, like ruff.toml), then a `pyproject.toml` that has a `[tool.rllint]` table.
Keys are kebab-case: the selection and file keys below, plus every rule option registered in
`rllint.options.OPTIONS` (the module of an option that a file sets is imported then). A typo must
not silently fall back to a default, so unknown keys, wrong types and unknown rule selectors raise
`ConfigError` naming the file and the key.

As in ruff, `extend = "../pyproject.toml"` makes a file inherit another's settings (its own keys
win; `extend-select`, `ignore`, `extend-ignore` and `extend-exclude` add to the inherited ones, and
a `select` starts the selection afresh), and `--config KEY=VALUE` sets one key over every file.
A run reads and parses each config file once (`ConfigFiles`), however many files it lints.
"""
from __future__ import annotations

import difflib
import math
import os
import re
from dataclasses import replace
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

from rllint.catalogue import UnknownSelector, import_option, option_keys, validate_selectors
from rllint.files import pattern_problem
from rllint.registry import OPTIONS, Option, load_rules
from rllint.settings import Settings
from rllint.source import SourceError, read_source
from rllint.toml_text import TomlError, parse_toml

CONFIG_NAMES = (".rllint.toml", "rllint.toml")
PYPROJECT = "pyproject.toml"
MAX_CONFIG_BYTES = 1024 * 1024

# Keys of the selection and the file walk: config key -> (Settings field, kind of value).
_CORE: Dict[str, Tuple[str, str]] = {
    "select": ("select", "selectors"),
    "extend-select": ("extend_select", "selectors"),
    "ignore": ("ignore", "selectors"),
    "per-file-ignores": ("per_file_ignores", "per-file-ignores"),
    "exclude": ("exclude", "strings"),
    "extend-exclude": ("extend_exclude", "strings"),
    "respect-gitignore": ("respect_gitignore", "bool"),
    "force-exclude": ("force_exclude", "bool"),
    "lint-vendored": ("lint_vendored", "bool"),
    "cache-dir": ("cache_dir", "path"),
    "docs-url": ("docs_url", "url"),
    "extend-ignore": ("ignore", "selectors"),  # ruff's older name for adding to `ignore`
    "fixable": ("fixable", "selectors"),
    "unfixable": ("unfixable", "selectors"),
    "target-version": ("target_version_name", "target-version"),
}
_TARGET_VERSION = re.compile(r"py3(\d{1,2})")
# Keys whose values add to what an extended file (or the file, for the command line) gave.
_ADDED = {"extend-select", "ignore", "extend-ignore", "extend-exclude", "unfixable"}
EXTEND = "extend"
# The keys of `overrides`: a Settings field each, and the tables of `--config KEY=VALUE`.
_FLAGS = {attr for attr, _ in _CORE.values()} | {"config_values"}


class ConfigError(Exception):
    """A config file or flag that cannot be used; `str(error)` is the whole one-line message."""

    def __init__(self, message: str, path: Optional[Path] = None, key: Optional[str] = None) -> None:
        super().__init__(message)
        self.path = path
        self.key = key


class ConfigFiles:
    """The config documents of a run, each file read and parsed once: a tree of 2,041 `.rllint.toml`
    files (and the `pyproject.toml` files met while looking for them) costs one read of each."""

    def __init__(self) -> None:
        self._documents: Dict[Path, Dict[str, Any]] = {}

    def document(self, path: Path) -> Dict[str, Any]:
        """The parsed TOML of `path`. Raises ConfigError."""
        if path not in self._documents:
            self._documents[path] = _read(path)
        return self._documents[path]


def find_config(start: Path, files: Optional[ConfigFiles] = None) -> Optional[Path]:
    """Closest config file walking up from `start`: in each folder, `.rllint.toml`, then `rllint.toml`,
    then a `pyproject.toml` that has a [tool.rllint] table (ruff's precedence); None when there is none.

    A `pyproject.toml` that is not valid TOML raises ConfigError: whether it configures rllint is unknown.
    """
    files = files or ConfigFiles()
    folder = Path(os.path.abspath(start))
    if not folder.is_dir():
        folder = folder.parent
    for candidate in (folder, *folder.parents):
        found = _own_config(candidate, files)
        if found is not None:
            return found
    return None


def _own_config(folder: Path, files: ConfigFiles) -> Optional[Path]:
    """The config file of this folder itself, if it has one."""
    for name in CONFIG_NAMES:
        if (folder / name).is_file():
            return folder / name
    pyproject = folder / PYPROJECT
    if pyproject.is_file() and _table(pyproject, files.document(pyproject)) is not None:
        return pyproject
    return None


def load_settings(config_file: Optional[Path] = None, start: Optional[Path] = None,
                  overrides: Optional[dict] = None, isolated: bool = False,
                  files: Optional[ConfigFiles] = None) -> Settings:
    """Settings from `config_file` (or the closest config found from `start`, default cwd; none at all when
    `isolated`, as ruff's `--isolated`), then command-line `overrides`, a dict with any of: config_values
    (a table of `--config KEY=VALUE` keys), select (list, replaces), extend_select (list, added), ignore
    (list, added), per_file_ignores (dict, added), exclude (list, replaces), extend_exclude (list, added),
    respect_gitignore (bool), force_exclude (bool), lint_vendored (bool), fixable (list, replaces), unfixable
    (list, added), target_version_name (`py39`, replaces). A None value means the flag was not given.

    As in ruff, a `select` override starts the selection afresh: the config's `extend-select` and
    `ignore` are dropped with its `select` (`--select RL105` runs RL105 even if the config ignores it).
    Raises ConfigError.
    """
    files = files or ConfigFiles()
    if config_file is not None:
        path: Optional[Path] = Path(os.path.abspath(config_file))
        if not path.is_file():
            raise ConfigError(f"{_shown(path)}: no such configuration file", path=path)
    elif isolated:
        path = None
    else:
        path = find_config(Path(start) if start is not None else Path.cwd(), files)

    if path is None:
        folder = Path(os.path.abspath(start)) if start is not None else Path.cwd()
        settings = Settings(root=(folder if folder.is_dir() else folder.parent).resolve())
    else:
        settings = Settings(root=path.parent.resolve(), config_path=path)
        _apply_file(settings, path, files)
    if not isolated:
        settings.target_version = _requires_python(settings.root, files)
    if overrides:
        _apply_overrides(settings, overrides)
    return settings


def parse_config_value(text: str) -> Dict[str, Any]:
    """`--config KEY=VALUE`: one TOML `key = value` line (`select = ["RL6"]`, `max-epsilon = 1e-3`) as a
    table. Raises ConfigError."""
    if "=" not in text:
        raise ConfigError(f"--config {text!r}: neither a configuration file nor a TOML `KEY = VALUE` pair",
                          key="config")
    try:
        table = _parsed(text)
    except ConfigError as error:
        raise ConfigError(f"--config {text!r}: {error}", key="config") from None
    if EXTEND in table:
        raise ConfigError(f"--config {text!r}: 'extend' names a file: give the file itself with --config FILE",
                          key=EXTEND)
    return table


class ConfigTree:
    """The settings of each file: the closest config file above it, as in ruff, with the same
    command-line overrides, and the target Python from the nearest `pyproject.toml` above it that
    states `requires-python`. With `--config`, every file gets that file's settings (`fixed`);
    with `--isolated`, every file gets `run`, the settings of no file.

    `run` is the run's own settings (from the folder the paths share, or the working folder): those
    of files that no config file covers. Lookups are cached per folder and per config file, and
    each config file is read once (`files`).
    """

    def __init__(self, run: Settings, overrides: Optional[dict] = None, fixed: bool = False,
                 isolated: bool = False, files: Optional[ConfigFiles] = None) -> None:
        self.run = run
        self._overrides = overrides
        self._fixed = fixed
        self._isolated = isolated
        self._files = files or ConfigFiles()
        self._configs: Dict[Path, Optional[Path]] = {}
        self._targets: Dict[Path, Optional[Tuple[int, int]]] = {}
        self._settings: Dict[tuple, Settings] = {}

    def for_path(self, path: str) -> Settings:
        """Settings for a file or folder (a folder's own config counts). Raises ConfigError."""
        if self._isolated:
            return self.run
        absolute = Path(os.path.abspath(path))
        folder = absolute if absolute.is_dir() else absolute.parent
        config = self.run.config_path if self._fixed else self._closest(folder)
        target = self._target(folder)
        key = (config, target)
        if key not in self._settings:
            base = (self.run if config == self.run.config_path
                    else load_settings(config, None, self._overrides, files=self._files))
            self._settings[key] = base if base.target_version == target else replace(base, target_version=target)
        return self._settings[key]

    def _closest(self, folder: Path) -> Optional[Path]:
        if folder not in self._configs:
            own = _own_config(folder, self._files)
            self._configs[folder] = own if own is not None or folder.parent == folder else self._closest(folder.parent)
        return self._configs[folder]

    def _target(self, folder: Path) -> Optional[Tuple[int, int]]:
        if folder not in self._targets:
            own = _requires_python(folder, self._files)
            self._targets[folder] = own if own is not None or folder.parent == folder else self._target(folder.parent)
        return self._targets[folder]


def settings_table(settings: Settings) -> Dict[str, Any]:
    """Every config key with the value `settings` hold (options at their defaults included), for
    `--show-settings`; keys without a value (no `select` given) are left out."""
    load_rules()  # family modules register their options on import
    table = {key: getattr(settings, attr) for key, (attr, _) in _CORE.items() if key != "extend-ignore"}
    table.update({key: settings.option(option) for key, option in sorted(OPTIONS.items())})
    return {key: value for key, value in table.items() if value is not None}


_LOWER_BOUND = re.compile(r"(?:>=|~=|==|>|\^|~)\s*(\d+)\.(\d+)")


def _requires_python(root: Path, files: ConfigFiles) -> Optional[Tuple[int, int]]:
    """The oldest Python of `[project] requires-python` (or Poetry's `python` dependency) in the root's
    pyproject.toml (`>=3.9`, `^3.9` -> (3, 9)), as ruff infers its target version; None when there is no such bound."""
    pyproject = root / PYPROJECT
    if not pyproject.is_file():
        return None
    document = files.document(pyproject)
    project = document.get("project")
    spec = project.get("requires-python") if isinstance(project, dict) else None
    if spec is None:  # Poetry: `[tool.poetry.dependencies] python = "^3.8"`
        poetry = document.get("tool", {}).get("poetry", {}) if isinstance(document.get("tool"), dict) else {}
        dependencies = poetry.get("dependencies") if isinstance(poetry, dict) else None
        spec = dependencies.get("python") if isinstance(dependencies, dict) else None
    if not isinstance(spec, str):
        return None
    bounds = [(int(major), int(minor)) for major, minor in _LOWER_BOUND.findall(spec)]
    return min(bounds) if bounds else None


def _read(path: Path) -> Dict[str, Any]:
    """A config file's TOML, from a regular file of at most `MAX_CONFIG_BYTES`. Raises ConfigError."""
    try:
        text = read_source(str(path), MAX_CONFIG_BYTES).decode("utf-8")
    except OSError as error:
        raise ConfigError(f"{_shown(path)}: cannot be read: {error.strerror or error}", path=path) from None
    except SourceError as error:
        raise ConfigError(f"{_shown(path)}: {error}", path=path) from None
    except UnicodeDecodeError as error:
        raise ConfigError(f"{_shown(path)}: not UTF-8 text: {error.reason} at byte {error.start}", path=path) from None
    try:
        return _parsed(text)
    except ConfigError as error:
        raise ConfigError(f"{_shown(path)}: {error}", path=path) from None


def _parsed(text: str) -> Dict[str, Any]:
    """TOML text as a table; ConfigError (without a file name) for what tomllib refuses or cannot bear."""
    try:
        return parse_toml(text)
    except TomlError as error:
        raise ConfigError(str(error)) from None


def _table(path: Path, document: Dict[str, Any]) -> Optional[Dict[str, Any]]:
    """The rllint table of a config document; None for a pyproject.toml without one."""
    if path.name != PYPROJECT:
        return document
    tool = document.get("tool")
    table = tool.get("rllint") if isinstance(tool, dict) else None
    if table is not None and not isinstance(table, dict):
        raise ConfigError(f"{_shown(path)}: 'tool.rllint' must be a table, not {_toml_type(table)}",
                          path=path, key="tool.rllint")
    return table


def _apply_file(settings: Settings, path: Path, files: ConfigFiles, extending: Tuple[Path, ...] = ()) -> None:
    """The keys of the config file at `path` onto `settings`, after those of the file it extends."""
    table = _table(path, files.document(path)) or {}
    where = f"{_shown(path)}: " + ("[tool.rllint] " if path.name == PYPROJECT else "")
    if EXTEND in table:
        parent = table[EXTEND]
        if not isinstance(parent, str) or not parent:
            raise ConfigError(f"{where}'extend' must be the name of a config file, not {_toml_type(parent)}",
                              path=path, key=EXTEND)
        parent_path = Path(os.path.abspath(path.parent / os.path.expanduser(parent)))
        if parent_path in (path, *extending):
            raise ConfigError(f"{where}'extend': {parent!r} extends this file again (a cycle)", path=path, key=EXTEND)
        if not parent_path.is_file():
            raise ConfigError(f"{where}'extend': no such configuration file {_shown(parent_path)}",
                              path=path, key=EXTEND)
        _apply_file(settings, parent_path, files, (*extending, path))
    _apply_table(settings, {k: v for k, v in table.items() if k != EXTEND}, where, path)


def _apply_table(settings: Settings, table: Dict[str, Any], where: str, path: Optional[Path]) -> None:
    """A config table onto `settings`, over what is there: the keys of `_ADDED` add to it, the others replace
    it, and a `select` starts the selection afresh. `path` is the file (None: the command line); paths and
    path patterns are relative to its folder."""
    folder = path.parent if path is not None else Path.cwd()
    if "select" in table:
        settings.extend_select, settings.ignore = [], []
    for key, value in table.items():
        if key in _CORE:
            attr, kind = _CORE[key]
            value = _checked(value, kind, f"{where}'{key}'", path, key)
            if kind == "path":
                value = str(folder / os.path.expanduser(value))
            elif key in ("exclude", "extend-exclude"):
                value = [_rebased(pattern, folder, settings.root, anchor="/") for pattern in value]
            elif key == "per-file-ignores":
                value = {_rebased(pattern, folder, settings.root): codes for pattern, codes in value.items()}
            setattr(settings, attr, getattr(settings, attr) + value if key in _ADDED else value)
        elif _known_option(key):
            settings.options[key] = _option_value(OPTIONS[key], value, f"{where}'{key}'", path)
        else:
            raise ConfigError(f"{where}unknown key {key!r}{_did_you_mean(key)}", path=path, key=key)


def _rebased(pattern: str, folder: Path, root: Path, anchor: str = "") -> str:
    """A path pattern of a file in `folder` as a pattern relative to `root`, the folder patterns are matched
    from (they differ in an extended file, or on the command line). A name pattern (no `/`) and one that
    starts with `**/` match at any depth and stay as they are. `anchor` goes before a rebased pattern left
    without a `/` (`/` keeps an exclude pattern a path, not a name)."""
    bare = pattern[2:] if pattern.startswith("./") else pattern
    if "/" not in bare or bare.startswith("**/") or os.path.abspath(folder) == os.path.abspath(root):
        return pattern
    relative = os.path.relpath(os.path.join(folder, bare.lstrip("/")), root).replace(os.sep, "/")
    return ("" if "/" in relative else anchor) + relative + ("/" if bare.endswith("/") else "")


def _known_option(key: str) -> bool:
    """Whether `key` is a rule option; the module that defines it is imported (and registers it) first."""
    if key not in OPTIONS:
        import_option(key)
    return key in OPTIONS


def _apply_overrides(settings: Settings, overrides: dict) -> None:
    unknown = set(overrides) - _FLAGS
    if unknown:
        raise ValueError(f"unknown settings overrides: {sorted(unknown)}")
    given = {key: value for key, value in overrides.items() if value is not None}

    def flag(key: str, kind: str) -> Any:
        name = "--" + key.replace("_", "-")
        return _checked(given[key], kind, name, None, key.replace("_", "-"))

    for table in given.get("config_values", ()):
        _apply_table(settings, table, "--config ", None)
    if "select" in given:
        settings.select, settings.extend_select, settings.ignore = flag("select", "selectors"), [], []
    if "extend_select" in given:
        settings.extend_select = settings.extend_select + flag("extend_select", "selectors")
    if "ignore" in given:
        settings.ignore = settings.ignore + flag("ignore", "selectors")
    if "per_file_ignores" in given:
        merged = {pattern: list(codes) for pattern, codes in settings.per_file_ignores.items()}
        for pattern, codes in flag("per_file_ignores", "per-file-ignores").items():
            pattern = _rebased(pattern, Path.cwd(), settings.root)
            merged[pattern] = merged.get(pattern, []) + codes
        settings.per_file_ignores = merged
    if "exclude" in given:
        settings.exclude = flag("exclude", "strings")
    if "extend_exclude" in given:
        settings.extend_exclude = settings.extend_exclude + flag("extend_exclude", "strings")
    for key in ("respect_gitignore", "force_exclude", "lint_vendored"):
        if key in given:
            setattr(settings, key, flag(key, "bool"))
    if "fixable" in given:
        settings.fixable = flag("fixable", "selectors")
    if "unfixable" in given:
        settings.unfixable = settings.unfixable + flag("unfixable", "selectors")
    if "target_version_name" in given:
        settings.target_version_name = _checked(given["target_version_name"], "target-version", "--target-version",
                                                None, "target-version")


def _checked(value: Any, kind: str, where: str, path: Optional[Path], key: str) -> Any:
    """`value` of a selection or file key, type-checked; selectors must name rules."""
    if kind == "bool":
        if not isinstance(value, bool):
            raise ConfigError(f"{where} must be true or false, not {_toml_type(value)}", path=path, key=key)
        return value
    if kind == "target-version":
        if not isinstance(value, str) or not _TARGET_VERSION.fullmatch(value):
            raise ConfigError(f"{where} must be a Python version such as \"py39\" or \"py312\", not {value!r}",
                              path=path, key=key)
        return value
    if kind == "path":
        if not isinstance(value, str) or not value:
            raise ConfigError(f"{where} must be a folder name, not {_toml_type(value)}", path=path, key=key)
        return value
    if kind == "url":
        if not isinstance(value, str) or "://" not in value:
            shown = f" ({value!r})" if isinstance(value, str) else ""
            raise ConfigError(f"{where} must be a URL such as https://... or file:///..., not {_toml_type(value)}"
                              f"{shown}", path=path, key=key)
        return value
    if kind == "per-file-ignores":
        if not isinstance(value, dict):
            raise ConfigError(f"{where} must be a table of glob = [selectors], not {_toml_type(value)}",
                              path=path, key=key)
        if "" in value:
            raise ConfigError(f"{where} has an empty pattern; a pattern names the files its rules are ignored in",
                              path=path, key=key)
        return {pattern: _checked(selectors, "selectors", f"{where} {pattern!r}", path, key)
                for pattern, selectors in value.items()}
    strings = _strings(value, where, path, key)
    if key in ("exclude", "extend-exclude"):
        problem = pattern_problem(strings)
        if problem is not None:
            raise ConfigError(f"{where}: {problem}", path=path, key=key)
    if kind == "selectors":
        try:
            validate_selectors(strings)
        except UnknownSelector as error:
            raise ConfigError(f"{where}: {error}", path=path, key=key) from None
    return strings


def _strings(value: Any, where: str, path: Optional[Path], key: str) -> List[str]:
    if isinstance(value, (list, tuple)):
        wrong = [item for item in value if not isinstance(item, str)]
        if not wrong:
            return list(value)
        raise ConfigError(f"{where} must be a list of strings; {wrong[0]!r} is {_toml_type(wrong[0])}",
                          path=path, key=key)
    raise ConfigError(f"{where} must be a list of strings, not {_toml_type(value)}", path=path, key=key)


def _option_value(option: Option, value: Any, where: str, path: Path) -> Any:
    """A rule option's value: floats accept integers; booleans are never numbers."""
    kind = option.kind

    def wrong(expected: str) -> ConfigError:
        return ConfigError(f"{where} must be {expected}, not {_toml_type(value)} ({value!r})", path=path, key=option.key)

    if kind in (list, tuple):
        checked: Any = kind(_strings(value, where, path, option.key))
        items = list(checked)
    else:
        if kind is float:
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise wrong("a number")
            checked = float(value)
            if not math.isfinite(checked) or checked <= 0:  # nan, inf or <= 0 would turn the rule off unseen
                raise ConfigError(f"{where} must be a finite number above 0, not {value!r}", path=path, key=option.key)
        elif kind is int:
            if isinstance(value, bool) or not isinstance(value, int):
                raise wrong("an integer")
            if value <= 0:
                raise ConfigError(f"{where} must be an integer above 0, not {value!r}", path=path, key=option.key)
            checked = value
        elif kind is bool and not isinstance(value, bool):
            raise wrong("true or false")
        elif not isinstance(value, kind):
            raise wrong("a string" if kind is str else f"of type {kind.__name__}")
        else:
            checked = value
        items = [checked]
    if option.choices:
        bad = [item for item in items if item not in option.choices]
        if bad:
            allowed = ", ".join(repr(choice) for choice in option.choices)
            raise ConfigError(f"{where} must be one of {allowed}, not {bad[0]!r}", path=path, key=option.key)
    problem = option.check(checked) if option.check is not None else None
    if problem:
        raise ConfigError(f"{where}: {problem}", path=path, key=option.key)
    return checked


def _did_you_mean(key: str) -> str:
    known = sorted(set(_CORE) | set(OPTIONS) | set(option_keys()))
    kebab = key.replace("_", "-").lower()
    close = [kebab] if kebab in known else difflib.get_close_matches(key, known, n=1)
    return f"; did you mean {close[0]!r}?" if close else ""


def _toml_type(value: Any) -> str:
    """What a value is called in TOML, for messages."""
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a float"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, (list, tuple)):
        return "an array"
    if isinstance(value, dict):
        return "a table"
    return f"a {type(value).__name__}"


def _shown(path: Path) -> str:
    """The path as users see it: relative when under the working folder."""
    try:
        return str(Path(path).relative_to(Path.cwd()))
    except ValueError:
        return str(path)
