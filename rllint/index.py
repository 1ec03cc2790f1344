"""The project index: small per-module summaries for the facts that cross files (DESIGN.md, "A project index").

A rule that needs to know what another module of the project does asks here instead of guessing:
whether a helper imported from `utils.py` runs the model it is given under `no_grad`, whether it
returns log-probs, what its `temperature` defaults to and whether it divides by it; at which
temperatures the modules around a file sample; which attributes any module reads.

- Files are the project's Python files as a run discovers them (`rllint.files.discover`: excludes,
  `.gitignore`), the project being the working folder when the file is under it (as `rllint .` is
  run), else the folder of the nearest project marker above the file.
- A summary is computed with CPython's `ast` (ten times cheaper than libcst) only when a rule asks a
  question that crosses files, once per content per process (keyed by content hash, like results);
  the linted file's own summary comes from the `ast` tree the run already has. No text is kept.
- Every file whose summary an answer used is recorded in the linted file's `dependencies` with its
  content hash, and every file an import was looked for in but not found as "" (`rllint.cache`):
  a cached result is stale when one of them changes or appears.
- `cross-module-values = false` turns the index off: only the linted file is seen.
"""
from __future__ import annotations

import ast
import os
import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Dict, FrozenSet, Iterator, List, Optional, Sequence, Set, Tuple

from rllint.analysis.nodes import AstNodes
from rllint.files import is_test_path
from rllint.options import CROSS_MODULE_VALUES
from rllint.source import SourceError, content_hash, decode_source, read_source

_MARKERS = ("pyproject.toml", "setup.py", "setup.cfg", ".git")
# Folders whose modules are installed packages, not the project's.
_NOT_PROJECT = {"site-packages", "dist-packages", "__pypackages__", ".venv", "venv"}
_MARKER_LEVELS = 8  # folders above a file searched for a marker
_NAMED: Tuple[str, ...] = ()  # the folders the command line names (`name_folders`)
_MAX_FILES = 5000  # Python files of a project that the index reads
_MAX_WALKED = 100_000  # files and folders met while looking for them
_MAX_IMPORTERS = 8  # importers linted for a file of a run that they import
_NO_GRAD = ("no_grad", "inference_mode")
_LOG_SOFTMAX = ("log_softmax", "selective_log_softmax")
_TOKEN_KEYWORDS = {"input_ids", "attention_mask", "inputs_embeds", "position_ids", "labels", "logits_to_keep",
                   "num_logits_to_keep", "past_key_values"}
# Calls that sample with a `temperature` keyword (as RL309 reads them in one file).
SAMPLER_CALLS = frozenset({"generate", "GenerationConfig", "SamplingParams", "sample", "sample_async",
                           "generate_sequences", "GRPOConfig", "RLOOConfig", "OnlineDPOConfig", "PPOConfig",
                           "PPOv2Config", "XPOConfig", "NashMDConfig", "GKDConfig"})
# Libraries whose samplers, sampling settings and RL trainer configs draw the policy's rollouts.
SAMPLING_LIBRARIES = frozenset({"transformers", "vllm", "trl", "tinker", "sglang", "mlx_lm", "openrlhf", "verl"})
_DRAW_HOPS = 3  # imports followed to find a module that draws by hand (MAX_DEPTH - 1 calls away)
# Calls that draw a token by hand (from tempered weights, or as a Gumbel-max argmax).
_DRAWS = frozenset({"multinomial", "argmax"})
# Samplers whose temperature is their first argument, under a keyword of another name: (package, call) -> keyword.
_FIRST_ARGUMENT_TEMPERATURE = {("mlx_lm", "make_sampler"): "temp"}


def temperature_keyword(qualified: Optional[str]) -> Optional[str]:
    """The keyword of a sampler that takes its temperature first (mlx_lm's `make_sampler(temp, top_p, ...)`), by
    the dotted name its call resolves to through the imports; None for any other call."""
    parts = (qualified or "").split(".")
    return _FIRST_ARGUMENT_TEMPERATURE.get((parts[0], parts[-1])) if len(parts) > 1 else None


# Calls that hand a configuration object over as a whole: its fields are read by whoever receives it.
_WHOLE = frozenset({"vars", "asdict", "astuple", "fields", "to_dict", "model_dump", "dict", "to_container",
                    "replace", "to_yaml", "save", "update"})


@dataclass(frozen=True)
class Function:
    """What a module-level function does with its parameters."""

    params: Tuple[str, ...]  # positional parameters in order, then keyword-only ones
    runs: Tuple[str, ...]  # parameters it calls as a model (`model(ids)`, `model.forward(...)`)
    no_grad: bool  # it runs them, and every run is under `no_grad` / `inference_mode` (or it is decorated so)
    on_tokens: bool  # a run is given token tensors (`input_ids=`) or its `.logits` are read
    # it computes log-probs (`log_softmax`, `-cross_entropy(reduction="none")`) and returns a value or takes a backward
    # step (a loss helper that backpropagates what it computes)
    logprobs: bool
    temperature: Optional[float]  # the default of its `temperature` parameter, when a number is written
    divides: bool  # it divides by its `temperature` parameter


@dataclass(frozen=True)
class Summary:
    """One module's facts; small, and no text."""

    functions: Dict[str, Function]
    imports: Tuple[Tuple[str, str, int, str], ...]  # (local name, module, level, imported name or "")
    reads: FrozenSet[str]  # attribute names read and short string constants (`cfg["lr"]`, getattr)
    whole: FrozenSet[str]  # objects handed over whole (`**vars(args)`, `asdict(cfg)`, `Config(**cfg)`), not `**kwargs`
    samples: Tuple[Optional[float], ...]  # temperatures passed to samplers (None: not a written number)
    called: FrozenSet[str]  # names called as functions (`f(...)`, `mod.f(...)`: "f")
    draws: bool  # it calls `multinomial` or `argmax`: a token may be drawn by hand here (the engine says)
    classes: FrozenSet[str] = frozenset()  # the classes defined at its top level


def summarize(tree: ast.Module, nodes: Optional[AstNodes] = None) -> Summary:
    """The summary of a module's `ast` tree; `nodes`, the tree's nodes by type when a run has them, saves a walk."""
    nodes = nodes or AstNodes.walked(tree)
    functions: Dict[str, Function] = {}
    imports: List[Tuple[str, str, int, str]] = []
    reads: Set[str] = set()
    whole: Set[str] = set()
    samples: List[Optional[float]] = []
    called: Set[str] = set()
    passed_on: Set[str] = {""}  # `**kwargs` parameters: a function passing them on hands over no configuration
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            functions[node.name] = _function(node)
    # A function of this module named like a sampler (`def generate(...)`) samples where its body does.
    own = set(functions)
    for node in nodes.in_source_order(ast.Import, ast.ImportFrom):
        imports.extend(_import_entries(node))
    aliases = {local: f"{module}.{imported}" if imported else module for local, module, level, imported in imports
               if not level}
    for node in nodes.of(ast.FunctionDef, ast.AsyncFunctionDef):
        if node.args.kwarg is not None:
            passed_on.add(node.args.kwarg.arg)
    for node in nodes.of(ast.Attribute):
        if isinstance(node.ctx, ast.Load):
            reads.add(node.attr)
            if node.attr == "__dict__":
                whole.add(_tail(node.value))
    reads.update(node.value for node in nodes.of(ast.Constant) if isinstance(node.value, str)
                 and node.value.isidentifier())
    for node in nodes.of(ast.Call):
        tail = _tail(node.func)
        called.add(tail)
        if tail in _WHOLE and node.args:
            whole.add(_tail(node.args[0]))
        whole.update(_tail(k.value) for k in node.keywords if k.arg is None)
        if tail in SAMPLER_CALLS and not (isinstance(node.func, ast.Name) and node.func.id in own):
            # a sampling library's, or a call that turns sampling on (`do_sample=True`); else the engine tells
            known = _library_call(node.func, aliases) or any(k.arg == "do_sample" and isinstance(k.value, ast.Constant)
                                                             and k.value.value is True for k in node.keywords)
            samples.extend(_number(k.value) if known else None for k in node.keywords if k.arg == "temperature")
        first = temperature_keyword(_dotted(node.func, aliases))
        if first is not None:
            given = [k.value for k in node.keywords if k.arg == first] or node.args[:1]
            samples.extend(_number(v) for v in given)  # none given: greedy (0), no draw
    classes = frozenset(node.name for node in tree.body if isinstance(node, ast.ClassDef))
    return Summary(functions, tuple(imports), frozenset(reads), frozenset(whole - passed_on), tuple(samples),
                   frozenset(called), bool(called & _DRAWS), classes)


def defines(path: str, name: str) -> bool:
    """Whether the module at `path` defines a function or class `name` at its top level (read from its summary:
    a cheap question, for the names a `from module import *` may bind)."""
    summary = _summary_of(path)[1]
    return summary is not None and (name in summary.functions or name in summary.classes)


def _import_entries(node: ast.stmt) -> List[Tuple[str, str, int, str]]:
    """(local name, module, level, imported name or "") of each name an import statement binds."""
    if isinstance(node, ast.Import):
        return [(a.asname or a.name.split(".")[0], a.name, 0, "") for a in node.names]
    if isinstance(node, ast.ImportFrom):
        return [(a.asname or a.name, node.module or "", node.level, a.name) for a in node.names if a.name != "*"]
    return []


def _function(node: ast.FunctionDef) -> Function:
    arguments = node.args
    positional = [a.arg for a in arguments.posonlyargs + arguments.args]
    defaults = dict(zip(positional[len(positional) - len(arguments.defaults):], arguments.defaults))
    defaults.update((a.arg, d) for a, d in zip(arguments.kwonlyargs, arguments.kw_defaults) if d is not None)
    params = tuple(positional + [a.arg for a in arguments.kwonlyargs])
    candidates = {p for p in params if p not in ("self", "cls")}
    decorated = any(_tail(d.func if isinstance(d, ast.Call) else d) in _NO_GRAD for d in node.decorator_list)
    runs: Dict[str, bool] = {}  # parameter -> every run of it is under no_grad
    on_tokens = logprobs = divides = used = False  # used: it returns a value or takes a backward step
    for inner, no_grad in _walk(node.body, decorated):
        if isinstance(inner, ast.Call):
            model = _run(inner, candidates)
            if model is not None:
                runs[model] = runs.get(model, True) and no_grad
                on_tokens |= any(k.arg in _TOKEN_KEYWORDS for k in inner.keywords)
            logprobs |= _tail(inner.func) in _LOG_SOFTMAX
            used |= _tail(inner.func) == "backward"
            divides |= _tail(inner.func) in ("div", "div_", "true_divide") and any(
                _is_name(a, "temperature") for a in inner.args)
        elif isinstance(inner, ast.UnaryOp) and isinstance(inner.op, ast.USub):
            logprobs |= _token_cross_entropy(inner.operand)
        elif isinstance(inner, ast.BinOp) and isinstance(inner.op, ast.Div):
            divides |= _is_name(inner.right, "temperature")
        elif isinstance(inner, ast.AugAssign) and isinstance(inner.op, ast.Div):
            divides |= _is_name(inner.value, "temperature")
        elif isinstance(inner, ast.Attribute) and inner.attr == "logits":
            on_tokens = True
        elif isinstance(inner, ast.Return) and inner.value is not None:
            used = True
    temperature = _number(defaults["temperature"]) if "temperature" in defaults else None
    return Function(params, tuple(p for p in params if p in runs), bool(runs) and all(runs.values()),
                    on_tokens and bool(runs), logprobs and used, temperature,
                    divides and "temperature" in params)


def _walk(body: List[ast.stmt], no_grad: bool) -> Iterator[Tuple[ast.AST, bool]]:
    """The nodes of a function body with whether gradient is off there; nested functions are their own."""
    pending = [(statement, no_grad) for statement in body]
    while pending:
        node, off = pending.pop()
        yield node, off
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue
        if isinstance(node, (ast.With, ast.AsyncWith)):
            inner = off or any(_tail(i.context_expr.func if isinstance(i.context_expr, ast.Call) else i.context_expr)
                               in _NO_GRAD for i in node.items)
            pending.extend((child, off) for child in node.items)
            pending.extend((child, inner) for child in node.body)
            continue
        pending.extend((child, off) for child in ast.iter_child_nodes(node))


def _run(call: ast.Call, candidates: Set[str]) -> Optional[str]:
    """The parameter a call runs as a model: `model(...)`, `model.forward(...)`, `model.module(...)`."""
    func = call.func
    if isinstance(func, ast.Attribute) and func.attr in ("forward", "module"):
        func = func.value
    return func.id if isinstance(func, ast.Name) and func.id in candidates else None


def _token_cross_entropy(node: ast.AST) -> bool:
    """`cross_entropy(logits, ids, reduction="none")`: per-token negative log-likelihood."""
    return isinstance(node, ast.Call) and _tail(node.func) == "cross_entropy" and any(
        k.arg == "reduction" and isinstance(k.value, ast.Constant) and k.value.value == "none" for k in node.keywords)


def _tail(node: ast.AST) -> str:
    if isinstance(node, ast.Attribute):
        return node.attr
    return node.id if isinstance(node, ast.Name) else ""


def _library_call(func: ast.AST, aliases: Dict[str, str]) -> bool:
    """A callee reached through the imports of a sampling library (`vllm.SamplingParams`, `trl.GRPOConfig`)."""
    root = func
    while isinstance(root, ast.Attribute):
        root = root.value
    return isinstance(root, ast.Name) and root.id in aliases and \
        (_dotted(func, aliases) or "").split(".")[0] in SAMPLING_LIBRARIES


def _dotted(node: ast.AST, aliases: Dict[str, str]) -> Optional[str]:
    """The dotted name a callee stands for through the module's imports (`make_sampler` ->
    `mlx_lm.sample_utils.make_sampler`); None for what is not a dotted name."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    return ".".join([aliases.get(node.id, node.id)] + parts[::-1])


def _is_name(node: ast.AST, name: str) -> bool:
    return _tail(node) == name and isinstance(node, (ast.Name, ast.Attribute))


def _number(node: ast.AST) -> Optional[float]:
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        value = _number(node.operand)
        return None if value is None else -value
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
        return float(node.value)
    return None


# ---- the project, per process ---------------------------------------------------------------------------

# (project root, id of the run's settings) -> (those settings, kept so that the id stays theirs, and the
# project's Python files): one discovery per run and worker, a fresh one for a run with other settings.
_FILES: Dict[Tuple[str, int], Tuple[object, Tuple[str, ...]]] = {}
_SUMMARIES: Dict[str, Optional[Summary]] = {}  # content hash -> summary (None: not Python this interpreter parses)
_READ: Dict[str, Tuple[Tuple[int, int], str]] = {}  # path -> (size and time, content hash) of summarised files
_STOPPED: Set[str] = set()  # project roots whose walk a bound cut short


def clear_cache() -> None:
    """Forget the files and summaries of this process (tests that change a project between runs)."""
    _FILES.clear()
    _STOPPED.clear()
    _SUMMARIES.clear()
    _READ.clear()
    _WORDS.clear()


def _summary_of(path: str, needles: Tuple[bytes, ...] = ()) -> Tuple[str, Optional[Summary]]:
    """A file's content hash ("" when it cannot be read) and summary (None when it does not parse, or
    when its text holds none of `needles`, a cheap test before a parse). A file is read again only when
    its size or time changed."""
    try:
        stat = os.stat(path)
    except OSError:
        return "", None
    stamp = (stat.st_size, stat.st_mtime_ns)
    known = _READ.get(path)
    if known is None or known[0] != stamp:
        try:
            data = read_source(path)
        except (OSError, SourceError):
            return "", None
        digest = content_hash(data)
        if needles and not any(n in data for n in needles):
            return digest, None
        if digest not in _SUMMARIES:
            try:
                _SUMMARIES[digest] = summarize(ast.parse(decode_source(data)))
            except (SourceError, SyntaxError, ValueError, RecursionError, MemoryError):
                _SUMMARIES[digest] = None
        known = _READ[path] = (stamp, digest)
    return known[1], _SUMMARIES[known[1]]


def project_files(root: str, settings) -> Tuple[str, ...]:
    """The Python files of the project at `root` (absolute), as a run with `settings` discovers them (with the
    files of a copied framework that the run does not lint: the project runs them too): at most
    `_MAX_FILES` of them, met within `_MAX_WALKED` files and folders (`project_note` says when a bound cut
    the walk short); none for a folder too broad to be a project (`_too_broad`)."""
    key = (root, id(settings))
    if key not in _FILES:
        from rllint.files import discover_bounded, file_kind

        found, stopped = discover_bounded(root, settings, _MAX_WALKED, vendored=True) if not _too_broad(root) \
            else ([], False)
        python = [os.path.abspath(p) for p in found if file_kind(p) == "python"]
        stopped = stopped or len(python) > _MAX_FILES
        _FILES[key] = (settings, tuple(python[:_MAX_FILES]))
        if stopped:
            _STOPPED.add(root)
    return _FILES[key][1]


def project_note(root: str) -> Optional[str]:
    """One line for the user when the index saw only part of the project at `root`; None when it saw all."""
    if root not in _STOPPED:
        return None
    return (f"project index: {root} holds more than {_MAX_WALKED:,} files and folders or {_MAX_FILES:,} Python "
            "files; modules beyond them were not consulted (run rllint from the project's own folder, or mark it "
            "with a pyproject.toml or .git)")


def importers_outside(paths: Sequence[str], settings) -> List[str]:
    """Project files that import a Python file of the run but are not in it (a pre-commit of `hparams.py`
    alone), at most `_MAX_IMPORTERS` per imported file: linting them places the findings on values written
    in the run's files, as linting the whole project would. None without `cross-module-values`."""
    run = {os.path.abspath(p) for p in paths if p.endswith((".py", ".pyi"))}
    if not run or not settings.option(CROSS_MODULE_VALUES):
        return []
    found: Dict[str, List[str]] = {}
    holders = {p for p in run if _writes_settings(p)}
    for project in sorted({project_root(p) for p in holders}):
        targets = [p for p in holders if project_root(p) == project]
        for candidate in project_files(project, settings):
            for target in targets if candidate not in run else ():
                importers = found.setdefault(target, [])
                if len(importers) < _MAX_IMPORTERS and _imports(candidate, target):
                    importers.append(candidate)
    return sorted({p for importers in found.values() for p in importers})


def importers_of(path: str, settings, limit: int = _MAX_IMPORTERS, runs_only: bool = False) -> List[str]:
    """Project files that import the module at `path` (or a name from it), at most `limit`, in a stable order:
    where the functions of `path` are called from. `runs_only` leaves out test code (pytest's files, smoke and
    debug scripts) unless `path` is test code itself: tests call with toy values and mocks, not what a run
    passes."""
    target = os.path.abspath(path)
    root = project_root(target)
    runs_only = runs_only and not is_test_path(os.path.relpath(target, root))
    found = []
    for candidate in project_files(root, settings):
        if runs_only and is_test_path(os.path.relpath(candidate, root)):
            continue
        if candidate != target and _imports(candidate, target):
            found.append(candidate)
            if len(found) >= limit:
                break
    return found


# A number written as a setting: a module-level name bound to a number, or a float bound one indent deep
# (a config class's field, `field(default=...)` too).
_SETTING = re.compile(rb"^(?:[A-Za-z_]\w*[ \t]*(?::[^=\n]+)?=[ \t]*[-+]?\d"
                      rb"|(?: {4}|\t)[A-Za-z_]\w*[ \t]*(?::[^=\n]+)?=[ \t]*(?:field\(\s*default\s*=\s*)?"
                      rb"[-+]?(?:\d*\.\d|\d+[eE]))", re.M)


_FUNCTION = re.compile(rb"^(?:async[ \t]+)?def[ \t]", re.M)


def _writes_settings(path: str) -> bool:
    """Whether a file is a settings module: it writes numbers that its importers could use as settings,
    and defines no module-level function (constants and config classes only). Only such a file of a run
    has its importers linted, so that a pre-commit of a module of code does not lint its users."""
    try:
        data = read_source(path)
    except (OSError, SourceError):
        return False
    return _FUNCTION.search(data) is None and _SETTING.search(data) is not None  # the cheaper test first


def _imported_files(path: str, imports: Sequence[Tuple[str, str, int, str]]) -> Set[str]:
    """The project files that the imports of the module at `path` name (`from pkg import sub` names
    `pkg/sub.py` and `pkg/__init__.py`)."""

    found = set()
    for _, module, level, imported in imports:
        for name in (module, f"{module}.{imported}" if module and imported else imported):
            target = search_module(path, name, level)[0] if name else None
            if target is not None:
                found.add(target)
    return found


_IMPORT = re.compile(rb"^[ \t]*(?:from[ \t]+[\w.]+[ \t]+import[ \t]+(?:\([^)]*\)|[^\n]*)|import[ \t]+[^\n]*)", re.M)
# path -> (size and time, the words of its import statements, those statements)
_WORDS: Dict[str, Tuple[Tuple[int, int], FrozenSet[bytes], Tuple[bytes, ...]]] = {}


def _import_statements(path: str) -> Tuple[FrozenSet[bytes], Tuple[bytes, ...]]:
    """A file's import statements and their words, read from its text without a parse (once per change)."""
    try:
        stat = os.stat(path)
    except OSError:
        return frozenset(), ()
    stamp = (stat.st_size, stat.st_mtime_ns)
    if path not in _WORDS or _WORDS[path][0] != stamp:
        try:
            data = read_source(path)
        except (OSError, SourceError):
            data = b""
        statements = tuple(m.group().strip() for m in _IMPORT.finditer(data))
        _WORDS[path] = (stamp, frozenset(w for s in statements for w in re.findall(rb"\w+", s)), statements)
    return _WORDS[path][1:]


def _import_words(path: str) -> FrozenSet[bytes]:
    """The words of a file's import statements: a file whose imports lack a module's name does not import it."""
    return _import_statements(path)[0]


def _imports(candidate: str, target: str) -> bool:
    """Whether the module at `candidate` imports the one at `target` (or a name from it)."""
    return _may_import(candidate, target) and \
        target in _imported_files(candidate, _imports_naming(candidate, _module_name(target)))


def _may_import(candidate: str, target: str) -> bool:
    """Whether the import statements of `candidate` can name the module at `target`, from their words: its
    name, and for a module of a package, the package's name too unless `candidate` is inside that package
    (where a relative import needs no name). Most files are settled here without any parse."""
    words = _import_words(candidate)
    if _module_name(target).encode() not in words:
        return False
    package = os.path.dirname(target)
    if target.endswith("__init__.py"):
        package = os.path.dirname(package)
    if not os.path.isfile(os.path.join(package, "__init__.py")):
        return True  # a top-level module: `import hparams`
    return candidate.startswith(package + os.sep) or os.path.basename(package).encode() in words


def _imports_naming(path: str, name: str) -> List[Tuple[str, str, int, str]]:
    """The imports of the file at `path` (as `Summary.imports`) that spell `name`, read from its import
    statements alone: finding who imports a module parses a few lines of each candidate, not all of it."""
    found: List[Tuple[str, str, int, str]] = []
    for statement in _import_statements(path)[1]:
        if name.encode() not in statement:
            continue
        try:
            body = ast.parse(statement.decode("utf-8", "replace")).body
        except (SyntaxError, ValueError):
            continue  # a continued line, or the word "import" in a docstring
        for node in body:
            found.extend(e for e in _import_entries(node) if name in e[1].split(".") or name == e[3])
            if isinstance(node, ast.ImportFrom) and any(a.name == "*" for a in node.names) and \
                    name in (node.module or "").split("."):
                found.append(("*", node.module or "", node.level, ""))  # `from module import *`: all its names
    return found


def _module_name(path: str) -> str:
    """The name an import spells a file with: its stem, or its package's for an `__init__.py`."""
    stem = os.path.splitext(os.path.basename(path))[0]
    return os.path.basename(os.path.dirname(path)) if stem == "__init__" else stem


def find_module(importer: str, module: str, level: int = 0) -> Optional[str]:
    """The project file that `from <level dots><module> import ...` in `importer` names; None when there is none."""
    return search_module(importer, module, level)[0]


def search_module(importer: str, module: str, level: int = 0) -> Tuple[Optional[str], Tuple[str, ...]]:
    """The project file an import names (or None), and the files looked for before it that do not exist:
    should one appear, the import would name it (a cached result that read nothing there is stale)."""
    parts = tuple(p for p in module.split(".") if p) if module else ()
    directory = os.path.dirname(os.path.abspath(importer))
    if level:
        for _ in range(level - 1):
            directory = os.path.dirname(directory)
        # Files under site-packages or a venv are never project files, so nothing there is a dependency:
        # recorded as absent, an existing one would make every cached result of the importer stale.
        roots: Tuple[str, ...] = () if _NOT_PROJECT & set(directory.split(os.sep)) else (directory,)
    else:
        roots = _roots(directory, os.getcwd())
    absent = []
    for root in roots:
        found = file_in(root, parts)
        if found is not None:
            return found, tuple(absent)
        stem = os.path.join(root, *parts)
        absent.extend(([stem + ".py"] if parts else []) + [os.path.join(stem, "__init__.py")])
    return None, tuple(absent)


@lru_cache(maxsize=4096)
def file_in(directory: str, parts: Tuple[str, ...]) -> Optional[str]:
    stem = os.path.join(directory, *parts)
    for candidate in ((stem + ".py") if parts else None, os.path.join(stem, "__init__.py")):
        if candidate and os.path.isfile(candidate) and not _NOT_PROJECT & set(candidate.split(os.sep)):
            return candidate
    return None


@lru_cache(maxsize=1024)
def _roots(directory: str, cwd: str) -> Tuple[str, ...]:
    """Where absolute imports of `directory`'s files start: the folder itself, each package above it, the
    folder above the top package, and the project root (pyproject.toml, setup.py, .git; or the working
    folder the run starts in, as `project_root` says) with its `src/`."""
    roots = [directory]
    top = directory
    while os.path.isfile(os.path.join(top, "__init__.py")) and os.path.dirname(top) != top:
        top = os.path.dirname(top)
        roots.append(top)
    candidate = top
    for _ in range(8):
        if any(os.path.exists(os.path.join(candidate, marker)) for marker in _MARKERS):
            roots += [candidate, os.path.join(candidate, "src")]
            break
        parent = os.path.dirname(candidate)
        if parent == candidate:
            break
        candidate = parent
    if directory.startswith(cwd.rstrip(os.sep) + os.sep) and not _too_broad(cwd):
        roots += [cwd, os.path.join(cwd, "src")]
    else:
        for named in _named_holding(directory + os.sep):
            roots += [named, os.path.join(named, "src")]
    unique = []
    for root in roots:
        if root not in unique and not _NOT_PROJECT & set(root.split(os.sep)):
            unique.append(root)
    return tuple(unique)


def clear_lookups() -> None:
    """Forget which files imports name (tests that create and remove modules)."""
    file_in.cache_clear()
    _roots.cache_clear()


def project_root(path: str) -> str:
    """The folder whose Python files make the project of the file at `path` (absolute): the working folder
    when the file is under it (as `rllint .` is run), else the nearest folder above the file (up to
    `_MARKER_LEVELS`) with a project marker, else the outermost folder named on the command line that holds
    the file (`rllint /elsewhere/repo`: the repository, marker or not; `name_folders`), else the file's own
    folder. Never the filesystem's root, the home folder or one above it, whose walk would not end: a file
    there has no project (`project_files`)."""
    cwd = os.getcwd()
    if _under(path, cwd) and not _too_broad(cwd):
        return cwd
    folder = candidate = os.path.dirname(path)
    for _ in range(_MARKER_LEVELS):
        if _too_broad(candidate):
            break
        if any(os.path.exists(os.path.join(candidate, marker)) for marker in _MARKERS):
            return candidate
        candidate = os.path.dirname(candidate)
    holders = _named_holding(path)
    return holders[0] if holders else folder


def name_folders(folders: Sequence[str]) -> None:
    """The folders the command line names (absolute), for the file linted next in this process: one holds the
    project of a file under it that has no marker of its own, and its modules are imported from there."""
    global _NAMED
    if folders != _NAMED:
        _NAMED = tuple(folders)
        clear_lookups()


def _named_holding(path: str) -> List[str]:
    """The folders named on the command line that hold `path`, the outermost first."""
    return sorted((d for d in _NAMED if _under(path, d) and not _too_broad(d)), key=len)


def _under(path: str, folder: str) -> bool:
    return path.startswith(folder.rstrip(os.sep) + os.sep)


def _too_broad(folder: str) -> bool:
    """The filesystem's root, the home folder and the folders above it: a `.git` there holds dotfiles, and
    their walk meets every project of the machine."""
    folder = os.path.normcase(os.path.abspath(folder))
    home = os.path.normcase(os.path.abspath(os.path.expanduser("~")))
    return os.path.dirname(folder) == folder or home == folder or home.startswith(folder.rstrip(os.sep) + os.sep)


class ProjectIndex:
    """The index as one linted file sees it (`file.fact(ProjectIndex)`); answers record dependencies."""

    def __init__(self, file) -> None:
        self._file = file
        self.path = os.path.abspath(file.path)
        self.enabled = file.settings.option(CROSS_MODULE_VALUES) and os.path.isfile(self.path)
        self._own: Optional[Summary] = None
        self._importers: Optional[List[Tuple[str, Summary]]] = None
        self._functions: Dict[str, Optional[Tuple[str, Function]]] = {}

    @property
    def own(self) -> Summary:
        """This file's summary, from the tree the run parsed."""
        if self._own is None:
            self._own = summarize(self._file.tree, self._file.fact(AstNodes))
        return self._own

    def files(self) -> Tuple[str, ...]:
        """The project's other Python files."""
        if not self.enabled:
            return ()
        root = project_root(self.path)
        files = project_files(root, self._file.settings)
        note = project_note(root)
        if note is not None and note not in self._file.notes:
            self._file.notes.append(note)
        return tuple(p for p in files if p != self.path)

    def summary(self, path: str) -> Optional[Summary]:
        """Another project file's summary (None when it cannot be read or parsed), recorded as a dependency."""
        digest, summary = _summary_of(path)
        self._file.dependencies[path] = digest
        return summary

    def module_of(self, name: str) -> Optional[Tuple[str, str]]:
        """For a local name bound by an import of a project module: (that module's file, the name imported
        from it, "" for the module itself). Files an import was looked for in are dependencies."""
        if not self.enabled:
            return None

        for local, module, level, imported in self.own.imports:
            if local != name:
                continue
            if imported:
                submodule, absent = search_module(self.path, f"{module}.{imported}" if module else imported, level)
                self._file.dependencies.update((p, "") for p in absent)
                if submodule is not None:
                    return submodule, ""
            if not imported and not level and local == module.split(".")[0]:
                module = local  # `import pkg.sub` binds `pkg`
            path, absent = search_module(self.path, module, level)
            self._file.dependencies.update((p, "") for p in absent)
            return (path, imported) if path is not None else None
        return None

    def function(self, dotted: str) -> Optional[Tuple[str, Function]]:
        """The project function a call's dotted callee names (`helper` imported from a project module,
        `utils.helper`) and the file it is in; None for anything else. Once per callee and file: rules
        ask it for every call."""
        if dotted not in self._functions:
            self._functions[dotted] = self._function(dotted)
        return self._functions[dotted]

    def _function(self, dotted: str) -> Optional[Tuple[str, Function]]:
        parts = dotted.split(".")
        if len(parts) > 2 or parts[0] in self.own.functions:
            return None
        found = self.module_of(parts[0])
        if found is None:
            return None
        path, imported = found
        name = imported if len(parts) == 1 else (parts[1] if not imported else "")
        summary = self.summary(path) if name else None
        function = summary.functions.get(name) if summary is not None else None
        return (path, function) if function is not None else None

    def importers(self) -> List[Tuple[str, Summary]]:
        """The project files that import this one, with their summaries. Only files whose import statements
        name this module are parsed (`_import_words`), so that asking costs no parse of the whole project."""
        if self._importers is None:
            importing = [p for p in self.files() if _imports(p, self.path)]
            self._importers = [(path, summary) for path, summary in self._summaries(importing)
                               if self.consulted(path)]
        return self._importers

    def neighbours(self) -> Iterator[Tuple[str, Summary]]:
        """The project files this one imports, then those that import it."""
        seen = {self.path}
        for local, *_ in self.own.imports:
            found = self.module_of(local)
            if found is not None and found[0] not in seen:
                seen.add(found[0])
                summary = self.summary(found[0])
                if summary is not None:
                    yield found[0], summary
        for path, summary in self.importers():
            if path not in seen:
                seen.add(path)
                yield path, summary

    def may_draw(self, path: str, summary: Summary) -> bool:
        """Whether the module at `path` (with `summary`) or a project module it imports (`_DRAW_HOPS` deep, as the
        engine follows calls) draws a token by hand: worth asking the engine at which temperature."""
        layer, seen = [(path, summary)], {path}
        for hop in range(_DRAW_HOPS + 1):
            if any(found.draws for _, found in layer):
                return True
            if not self.enabled or hop == _DRAW_HOPS:
                return False
            following = []
            for holder, found in layer:
                for imported in _imported_files(holder, found.imports) - seen:
                    seen.add(imported)
                    held = self.summary(imported) if imported != self.path else self.own
                    if held is not None:
                        following.append((imported, held))
            layer = following[:_MAX_IMPORTERS * 8]
        return False

    def others(self, names: Set[str]) -> Iterator[Tuple[str, Summary]]:
        """The other Python files of the project whose text mentions one of `names`, with their summaries
        (the others are not parsed). Not recorded as dependencies: a caller records the files its answer
        came from (`consulted`), so that a result does not depend on every file of a large project (a file
        that starts reading a setting later is not seen by a cached result until one of those changes)."""
        needles = tuple(name.encode() for name in names)
        return self._summaries(self.files(), needles) if needles else iter(())

    @staticmethod
    def _summaries(paths, needles: Tuple[bytes, ...] = ()) -> Iterator[Tuple[str, Summary]]:
        for path in paths:
            summary = _summary_of(path, needles)[1]
            if summary is not None:
                yield path, summary

    def consulted(self, path: str) -> bool:
        """Record that an answer depends on the file at `path` (True, for use in filters)."""
        self._file.dependencies[path] = _summary_of(path)[0]
        return True

    def read_elsewhere(self, names: Set[str]) -> Set[str]:
        """The `names` that another Python file of the project reads (`.name`, `"name"`)."""
        return {name for path, summary in self.others(names) if names & summary.reads and self.consulted(path)
                for name in names & summary.reads}

    def called_elsewhere(self, name: str) -> bool:
        """Whether a project file that imports this one calls a function named `name`."""
        return any(name in summary.called for _, summary in self.importers())
