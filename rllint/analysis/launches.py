"""The project's launch scripts that run a Python file, and its requirement files: the layers of a run's
configuration that live outside the file (the configuration domain asks, `rllint.analysis.domains.config`).

A shell script runs `python train.py --learning_rate 1e-6` (or `torchrun ... train.py`, `accelerate launch
train.py`): its flags replace the file's `argparse` defaults for that run. Scripts are found under the
project's root (`rllint.index.project_root`), read with the launch-config reader (`rllint.analysis.configs`),
and matched to the Python file by the path the command names. Every file read is a dependency of the
linted file's cached result. Nothing is executed.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Dict, Iterator, List, Optional, Tuple

from rllint.files import DEFAULT_EXCLUDES
from rllint.source import content_hash

MAX_SCRIPTS = 400  # launch scripts read per project
MAX_BYTES = 256 * 1024
_SKIP = frozenset(DEFAULT_EXCLUDES)
_SCRIPTS: Dict[str, Tuple[Tuple[str, str], ...]] = {}  # root -> (path, text) of its shell scripts
_READ: Dict[str, Optional[list]] = {}  # path of a shell script -> its entries (None: it does not parse)


@dataclass(frozen=True)
class LaunchEntry:
    """One `--flag value` a launch script passes to the file: where it is written (`place`, a RemoteNode)."""

    key: str
    value: object
    source: str
    path: str
    place: object
    folders: Tuple[str, ...] = ()  # where a relative path it gives may be found: the run's folder first


# A leading folder that only running the script would know: `$SCRIPT_DIR/`, `${ROOT}/`.
_RUNTIME_FOLDER = re.compile(r"\$(?:[A-Za-z_]\w*|\{[A-Za-z_]\w*\})/+")


def _below_runtime_folder(named: str) -> Optional[str]:
    """The path under a folder the script computes (`$SCRIPT_DIR/train.py` -> `train.py`), else None. Launch
    scripts set such a folder to their own or the project's (`$(cd "$(dirname "$0")" && pwd)`): the rest of the
    path is looked for from there."""
    match = _RUNTIME_FOLDER.match(named)
    return named[match.end():] if match and "$" not in named[match.end():] else None


def named_file(entry: LaunchEntry, suffixes: Tuple[str, ...]) -> Optional[str]:
    """The file a launch flag names (`--config configs/run.yaml`, `--config "$ROOT/configs/run.yaml"`), looked
    for from the folders the run may start in; None when the value is no such name or no such file exists."""
    named = entry.value if isinstance(entry.value, str) else ""
    if not named.endswith(suffixes):
        return None
    named = _below_runtime_folder(named) or named
    for base in entry.folders:
        path = os.path.normpath(os.path.join(base, named))
        if os.path.isfile(path):
            return path
    return None


def runs_of(file, entry: Optional[str] = None) -> List[List[LaunchEntry]]:
    """The commands of the project's shell scripts that run `file` (or the Python file at `entry`) (by its path
    relative to the script's folder or the project root, or its file name), each as its entries."""
    from rllint.analysis.configs import ConfigSyntaxError, read_shell
    from rllint.analysis.values import RemoteNode
    from rllint.index import project_root

    path = os.path.abspath(entry or file.path) if entry or file.path else ""
    if not path:
        return []
    root = project_root(path)
    runs: List[List[LaunchEntry]] = []
    for script, text in _scripts(root):
        if os.path.splitext(os.path.basename(path))[0] not in text:  # `train.py`, or `-m package.train`
            continue
        file.dependencies[script] = content_hash(text.encode("utf-8", "replace"))
        if script not in _READ:  # read once per process, as its text is (`_scripts`)
            try:
                _READ[script] = read_shell(text)
            except ConfigSyntaxError:
                _READ[script] = None
        entries = _READ[script]
        if entries is None:
            continue
        by_command: Dict[int, List[LaunchEntry]] = {}
        for entry in entries:
            if entry.invocation is None or not entry.command or not _names(entry.command, path, script, root):
                continue
            place = RemoteNode(script, entry.line, entry.column, entry.line, entry.column + max(len(entry.text), 1))
            folders = (_module_folder(entry.command, path), os.path.dirname(script), root)
            by_command.setdefault(entry.invocation, []).append(
                LaunchEntry(entry.key.lstrip("-"), entry.value, entry.source, os.path.relpath(script, root), place,
                            tuple(f for f in folders if f)))
        runs.extend(by_command.values())
        seen = {e.invocation for e in entries if e.command and _names(e.command, path, script, root)}
        runs.extend([] for _ in seen - set(by_command))  # a run of the file that passes no flag
    return runs


def launched_runs(file) -> List[List[LaunchEntry]]:
    """The runs whose command line reaches this file: its own launches, and those of each project entry file
    that imports a function of this module and calls it (`python main.py --config run.yaml`, where `main.py`
    runs `from train.pipeline import main; main()`: the pipeline's parser reads main.py's command line)."""
    from rllint.index import ProjectIndex, find_module, importers_of

    runs = runs_of(file)
    index = file.fact(ProjectIndex)
    mine = index.summary(index.path) if index.enabled else None  # also for a module read for its functions
    if mine is None:
        return runs
    own = set(mine.functions)

    def calls_this(path: str, summary) -> bool:
        for local, module, level, imported in summary.imports:
            if imported in own and local in summary.called and find_module(path, module, level) == index.path:
                return True  # `from train.pipeline import main` ... `main()`
            whole = f"{module}.{imported}" if imported and module else (imported or module)
            if own & summary.called and find_module(path, whole, level) == index.path:
                return True  # `import train.pipeline as pipeline` ... `pipeline.main()`
        return False

    for path in importers_of(index.path, file.settings):
        summary = index.summary(path)
        if summary is not None and calls_this(path, summary):
            runs.extend(runs_of(file, path))
    return runs


CONFIG_FILES = (".yaml", ".yml", ".json")
SETTINGS_FILES = CONFIG_FILES + (".toml",)  # what the code itself may read settings from (`tomllib.load`)


def config_file_entries(file, entry: LaunchEntry) -> Optional[List[LaunchEntry]]:
    """The top-level settings of the config file a launch flag names (TRL's `--config recipes/run.yaml`);
    None when there is no such file or it does not parse."""
    path = named_file(entry, CONFIG_FILES)
    return None if path is None else settings_file(file, path)


def written_settings_file(file, written: str) -> Optional[str]:
    """The project's settings file a string in the code names (`"configs/grpo.yaml"`): from the file's folder
    or the project root; an absolute path of the author's machine names the project file its longest tail
    names (`/root/work/repo/configs/grpo.yaml`). None when no such file exists."""
    from rllint.index import project_root

    if not written.endswith(SETTINGS_FILES) or not file.path or "\n" in written:
        return None
    here = os.path.dirname(os.path.abspath(file.path))
    root = project_root(os.path.abspath(file.path))
    if os.path.isabs(written):
        if os.path.isfile(written) and os.path.commonpath([written, root]) == root:
            return written
        parts = written.strip("/").split("/")
        tails = ["/".join(parts[start:]) for start in range(len(parts) - 1)]  # longest first, a folder at least
    else:
        tails = [written]
    for tail in tails:
        for base in (here, root):
            path = os.path.normpath(os.path.join(base, tail))
            if os.path.isfile(path):
                return path
    return None


def settings_file(file, path: str, nested: bool = False) -> Optional[List[LaunchEntry]]:
    """The top-level settings of a YAML (JSON, TOML) file of settings, each where it is written (a nested mapping
    or a list is one setting of no known value; with `nested`, each scalar under its dotted key instead);
    None when it cannot be read, does not parse, or holds several documents (which one is read is not
    known). A dependency of the linted file."""
    from rllint.analysis.configs import ConfigSyntaxError, ConfigTooLarge, read_toml, read_yaml
    from rllint.analysis.values import RemoteNode
    from rllint.index import project_root

    text = _read(path)
    file.dependencies[path] = content_hash(text.encode("utf-8", "replace")) if text is not None else ""
    if text is None or not file.path:
        return None
    try:
        found = read_toml(text) if path.endswith(".toml") else read_yaml(text)
    except (ConfigSyntaxError, ConfigTooLarge):
        return None
    relative = os.path.relpath(path, project_root(os.path.abspath(file.path)))
    settings: Dict[str, LaunchEntry] = {}
    for item in found:
        if item.invocation not in (None, 0):
            return None
        key, _, rest = (item.key, "", "") if nested else item.key.partition(".")
        place = RemoteNode(path, item.line, item.column, item.line, item.column + max(len(item.text), 1))
        settings.setdefault(key, LaunchEntry(key, None if rest else item.value, "yaml", relative, place))
    return list(settings.values())


def _module_folder(command: str, path: str) -> str:
    """The folder `python -m package.module` runs from when it runs the file at `path` ("" otherwise)."""
    if command.endswith(".py") or not command.replace(".", "").replace("_", "").isalnum():
        return ""
    tail = os.path.join(*command.split(".")) + ".py"
    return path[:-len(tail)].rstrip(os.sep) if path.endswith(os.sep + tail) else ""


def _names(command: str, path: str, script: str, root: str) -> bool:
    """Whether a command's entry point is the Python file at `path` (or, `python -m package.module`, the module
    of a project package that path is), from the script's folder or the project root (`$SCRIPT_DIR/train.py`
    too)."""
    if _module_folder(command, path):
        return True
    if not command.endswith(".py"):
        return False
    below = _below_runtime_folder(command)
    for base in (os.path.dirname(script), root):
        if os.path.normpath(os.path.join(base, below or command)) == path:
            return True
    return os.path.basename(command) == os.path.basename(path) and "/" not in command


def _scripts(root: str) -> Tuple[Tuple[str, str], ...]:
    if root not in _SCRIPTS:
        found: List[Tuple[str, str]] = []
        for path in _walk(root, (".sh", ".bash")):
            if len(found) >= MAX_SCRIPTS:
                break
            text = _read(path)
            if text is not None:
                found.append((path, text))
        _SCRIPTS[root] = tuple(found)
    return _SCRIPTS[root]


def project_text_files(file, names: Tuple[str, ...]) -> Iterator[Tuple[str, str]]:
    """The files of those names at the project's root, read (a dependency each, "" when absent)."""
    from rllint.index import project_root

    if not file.path:
        return
    root = project_root(os.path.abspath(file.path))
    for name in names:
        path = os.path.join(root, name)
        text = _read(path)
        file.dependencies[path] = content_hash(text.encode("utf-8", "replace")) if text is not None else ""
        if text is not None:
            yield path, text


def _walk(root: str, suffixes: Tuple[str, ...]) -> Iterator[str]:
    for folder, subfolders, files in os.walk(root):
        subfolders[:] = sorted(d for d in subfolders if d not in _SKIP and not d.startswith("."))
        for name in sorted(files):
            if name.endswith(suffixes):
                yield os.path.join(folder, name)


def _read(path: str):
    try:
        if not os.path.isfile(path) or os.path.getsize(path) > MAX_BYTES:
            return None
        with open(path, "rb") as handle:
            return handle.read().decode("utf-8", "replace")
    except OSError:
        return None


def clear_cache() -> None:
    _SCRIPTS.clear()
    _READ.clear()
