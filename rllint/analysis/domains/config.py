"""The configuration domain: the value a setting holds after the layers a run applies, with where it is written.

Scripts rarely write a hyperparameter where it is used. `args.lr` is an `argparse` default, `cfg.lr` a
dataclass field (maybe inherited, maybe `field(default=...)`), `os.environ.get("LR", "2e-5")` an
environment default, `training_args.temperature` the framework's own default when nobody sets it. This
domain gives those reads a `number` (or `text`) fact and an `origin` that says which layer wrote it
("default of --lr", "default of Config.lr", "TRL's default for GRPOConfig.temperature in 0.14.0-0.17.0").

- `argparse.ArgumentParser().parse_args()` (and `parse_known_args()`) is a namespace; its attribute is the
  default of the `add_argument` of that dest in the file (argparse applies `type=` to a string default).
  A launch script of the project that runs this file with `--flag value` overrides it (`launch_overrides`).
- `HfArgumentParser((A, B)).parse_args_into_dataclasses()` (TRL's `TrlParser` too) is a tuple of instances
  of those classes, project dataclasses or the frameworks' configs.
- A framework config built in the code (`GRPOConfig(learning_rate=...)`) holds what its keywords give and,
  for the rest, the framework's default (`framework_defaults`, generated from the released wheels); when
  the default changed across releases and the project does not pin the release, the default is not known.
- `float(x)` / `int(x)` of a value that holds a number keep it and its origin.
"""
from __future__ import annotations

import re
from typing import Any, Dict, List, Optional, Tuple

import libcst as cst

from rllint.analysis.domains.base import Domain
from rllint.analysis.domains.trainers import is_trainer
from rllint.analysis.facts import BOOL, CLASS, DICT, INSTANCE, NUMBER, REF, TEXT, TUPLE, UNKNOWN, Value, join_all

PARSER, NAMESPACE, CONFIG, FILE = "parser", "namespace", "config", "file"
# Reads of a whole file of settings into a dict.
_SETTINGS_LOADS = frozenset({"yaml.safe_load", "yaml.load", "yaml.full_load", "json.load", "tomllib.load", "tomli.load",
                             "toml.load"})

# Tests that a path names a file (`if os.path.exists(args.config): load it, else keep the defaults`).
_FILE_TESTS = frozenset({"os.path.exists", "os.path.isfile"})
_ENV_GETTERS = frozenset({"os.environ.get", "os.getenv", "os.environ.setdefault"})
_FIELD_CALLS = frozenset({"dataclasses.field", "field", "pydantic.Field", "Field", "attr.ib", "attrs.field"})
_DATACLASS_PARSERS = frozenset({"HfArgumentParser", "TrlParser"})
_DATACLASS_PARSES = frozenset({"parse_args_into_dataclasses", "parse_args_and_config", "parse_yaml_file",
                               "parse_json_file", "parse_dict"})
# The parses that read the command line (TRL's also the YAML file its `--config` names).
_COMMAND_LINE_PARSES = frozenset({"parse_args_into_dataclasses", "parse_args_and_config"})
# Where each framework's config classes are imported from.
_PACKAGES = {"trl": "trl", "transformers": "transformers"}
_FRAMEWORK_NAMES = {"trl": "TRL", "transformers": "transformers", "verl": "verl", "openrlhf": "OpenRLHF"}
_PIN = re.compile(r"^\s*([A-Za-z0-9_.\-]+)\s*(?:\[[^\]]*\])?\s*(==|~=|>=|<=|>|<)?\s*([0-9][0-9A-Za-z.\-]*)?")


class ConfigDomain(Domain):
    def call(self, frame, qual, node, args, kwargs):
        tail = qual.rsplit(".", 1)[-1]
        if qual in ("argparse.ArgumentParser",):
            return Value({"type": PARSER, "parser": node})
        if tail in _DATACLASS_PARSERS and qual.split(".", 1)[0] in ("transformers", "trl"):
            classes = args[0] if args else kwargs.get("dataclass_types", UNKNOWN)
            return Value({"type": PARSER, "classes": classes})
        if qual in _ENV_GETTERS:
            return _environment(node, args, kwargs)
        if qual in _FILE_TESTS and args and args[0].facts.get("files"):  # the project's file of settings is there
            return Value({"type": BOOL, "number": 1, "shipped": True})
        if qual in _SETTINGS_LOADS and args and args[0].facts.get("type") == FILE:
            return _loaded(frame.flow, args[0].facts["files"])
        if qual in _FIELD_CALLS or tail in ("field", "Field") and qual.split(".", 1)[0] in ("dataclasses", "pydantic"):
            default = kwargs.get("default")
            if default is None and tail == "Field" and args:
                default = args[0]
            if default is None and "default_factory" in kwargs:
                return _built_by(frame.flow, kwargs["default_factory"])
            return default if default is not None else UNKNOWN
        if qual.endswith(".__init__") and is_trainer(qual[:-len(".__init__")]) and node.args and \
                isinstance(node.args[0].value, cst.Name) and node.args[0].value.value == "self":
            _keeps_args(frame, kwargs)  # `Trainer.__init__(self, args=args)` in a subclass's constructor
            return None
        framework = framework_class(qual)
        if framework is not None:  # a keyword the release lacks is refused: the keywords narrow the releases
            config = Value({"type": CONFIG, "framework": framework, "items": tuple(kwargs.items())}, {"type": (node,)})
            narrowed = _releases(config, sorted(kwargs)) if not any(a.star for a in node.args) else None
            return config.but(releases=narrowed) if narrowed else config
        return None

    def method(self, frame, receiver, name, node, args, kwargs):
        kind = receiver.facts.get("type")
        if kind == DICT and name == "get":
            return _got(receiver, node, args)
        if kind != PARSER:
            return None
        if name in ("parse_args", "parse_known_args") and "parser" in receiver.facts:
            namespace = Value({"type": NAMESPACE, "parser": receiver.facts["parser"]})
            if name == "parse_known_args":
                return Value({"type": TUPLE, "items": ((0, namespace), (1, UNKNOWN))})
            return namespace
        if name in _DATACLASS_PARSES and "classes" in receiver.facts:
            classes = receiver.facts["classes"]
            members = classes.facts.get("items") or ((0, classes),)
            instances = [instance_of(frame.flow, c) for _, c in members]
            if name in _COMMAND_LINE_PARSES and not node.args:  # `args=` would replace the command line
                instances = _launched(frame.flow, instances, config_files=name == "parse_args_and_config")
            return Value({"type": TUPLE, "items": tuple((i, v) for (i, _), v in zip(members, instances))})
        return None

    def attribute(self, frame, base, attr, node):
        found = self.read(frame.flow, base, attr)
        if found is UNKNOWN and not base.facts.get("releases") and base.facts.get("type") in (INSTANCE, CONFIG):
            narrowed = _read_releases(frame, base, node)
            if narrowed:
                found = self.read(frame.flow, base.but(releases=narrowed), attr)
        return found

    def call_value(self, frame, callee, node, args, kwargs):
        if _super_init(node) and frame.function.cls is not None and \
                any(is_trainer(base) for base in frame.flow._bases(frame.function.cls)):
            _keeps_args(frame, kwargs)  # `super().__init__(args=args)` of a transformers / TRL trainer's subclass
            return None
        return self._number_call(node, args)

    def read(self, flow, base: Value, attr: str) -> Optional[Value]:
        """`base.<attr>` of a configuration value (None: not one)."""
        kind = base.facts.get("type")
        if base.facts.get("fields_set") and attr not in dict(base.facts.get("items") or base.facts.get("fields") or ()):
            return UNKNOWN  # set by a name out of sight (`setattr(cfg, k, v)`)
        if kind == NAMESPACE:
            return flag_default(flow, attr)
        if kind == CONFIG:
            given = dict(base.facts.get("items") or ())
            if attr in given:
                return given[attr]
            if base.facts.get("framework") is None:  # configs of two classes joined (`A() if x else B()`)
                return UNKNOWN
            package, name = base.facts["framework"]
            return framework_default(flow, package, name, attr, base.facts.get("releases"))
        if kind == INSTANCE and base.facts.get("cls") is not None:
            inherited = _framework_base(base.facts["cls"].module.flow, base.facts["cls"])
            if inherited is not None:
                return framework_default(flow, inherited[0], inherited[1], attr, base.facts.get("releases"))
        return None

    @staticmethod
    def _number_call(node, args):
        if isinstance(node.func, cst.Name) and node.func.value == "open" and args and args[0].facts.get("files"):
            return Value({"type": FILE, "files": args[0].facts["files"]})
        if isinstance(node.func, cst.Name) and node.func.value in ("float", "int") and len(node.args) == 1:
            given = node.args[0].value
            if isinstance(given, cst.SimpleString):
                return _number_text(given, "literal")
            if args and "number" in args[0].facts and args[0].facts.get("type") in (NUMBER, TEXT):
                number = args[0].facts["number"]
                if node.func.value == "int":
                    number = float(int(number))
                return args[0].but(type=NUMBER, number=number)
            if args and args[0].facts.get("type") == NUMBER and node.func.value == "float":
                return args[0]  # a number of unknown value is still a number (`max(0.7, float(cfg.t))` is one)
        return None


def _got(held: Value, node: cst.Call, args: List[Value]) -> Optional[Value]:
    """`settings.get("lr", 1e-5)`: what the dict holds under a key it has; the default (else None) for a key a
    dict whose every key is known lacks."""
    key = node.args[0].value if node.args and node.args[0].keyword is None and not node.args[0].star else None
    if not isinstance(key, cst.SimpleString) or not isinstance(key.evaluated_value, str):
        return None
    for name, item in held.facts.get("items") or ():
        if name == key.evaluated_value:
            return item
    if not held.facts.get("complete"):
        return None
    return args[1] if len(args) > 1 else Value({"type": "none"})


def setting(flow, holder: Value, key: str) -> Value:
    """`holder.<key>` where `holder` is a configuration (a framework config, a dataclass instance, a parsed
    namespace), without an expression to read it from: what a trainer reads of the config it is handed."""
    kind = holder.facts.get("type")
    if kind == INSTANCE and holder.facts.get("cls") is not None:
        given = dict(holder.facts.get("fields") or ())
        if key in given:
            return given[key]
        if holder.facts.get("fields_set"):
            return UNKNOWN
        cls = holder.facts["cls"]
        stored = cls.module.flow.class_attribute(cls, key)
        if stored is not None:
            return stored
    found = CONFIG_DOMAIN.read(flow, holder, key)
    return UNKNOWN if found is None else found


def instance_of(flow, cls: Value) -> Value:
    """An instance of a project class (of this module or imported) or of a framework config class named in a
    parser's list."""
    from rllint.analysis.ir import ClassIR

    if cls.facts.get("cls") is not None:
        return Value({"type": INSTANCE, "cls": cls.facts["cls"]})
    qual = cls.facts.get("qual")
    imported = flow.imported(qual, cls.facts.get("level", 0)) if qual and cls.facts.get("type") == REF else None
    if isinstance(imported, ClassIR):
        return Value({"type": INSTANCE, "cls": imported})
    framework = framework_class(qual) if qual else None
    if framework is not None:
        return Value({"type": CONFIG, "framework": framework, "items": ()})
    return UNKNOWN


def _built_by(flow, factory: Value) -> Value:
    """What `field(default_factory=Cls)` holds: an instance of that config class, at its defaults (a factory
    that is not a class is not followed)."""
    if factory.facts.get("type") not in (CLASS, REF):
        return UNKNOWN
    return instance_of(flow, factory)


def _loaded(flow, files: Tuple[str, ...]) -> Value:
    """The dict a settings file holds, read from each file the run may name: a key every file gives holds
    what they give (joined), a key only some give is unknown; nested mappings are dicts of their own. The
    dict's keys are `complete`, so that `Config(**loaded)` leaves the other fields at their defaults."""
    from rllint.analysis.launches import settings_file

    per_file = [settings_file(flow.file, path, nested=True) for path in files]
    if not per_file or any(found is None for found in per_file):
        return Value({"type": DICT})
    return _settings_dict([{entry.key: entry for entry in found} for found in per_file], "", tuple(files))


def _settings_dict(per_file: List[Dict[str, Any]], prefix: str, files: Tuple[str, ...]) -> Value:
    """The mapping under the dotted key `prefix` of each file's settings (scalars by their dotted keys); its
    `settings` fact says which files and which mapping it is (`rllint.analysis.settings_use`)."""
    level = [{key[len(prefix):].split(".", 1)[0] for key in found if key.startswith(prefix)} for found in per_file]
    items = []
    for key in sorted(set().union(*level)):
        if not all(key in keys for keys in level):
            items.append((key, UNKNOWN))
            continue
        leaves = [found.get(prefix + key) for found in per_file]
        if all(leaf is not None for leaf in leaves):
            items.append((key, join_all([_setting_value(leaf) for leaf in leaves])))
        elif not any(leaves):
            items.append((key, _settings_dict(per_file, prefix + key + ".", files)))
        else:
            items.append((key, UNKNOWN))  # a scalar in one file, a mapping in another
    return Value({"type": DICT, "items": tuple(items), "complete": True, "settings": (files, prefix)})


def _setting_value(entry) -> Value:
    """A number where the file writes one; text that spells a number (YAML reads `2e-5` as a string) keeps it
    for the `float()` that the code applies; other text and booleans are what they are, of no number."""
    kind, number = NUMBER, entry.value
    if isinstance(number, str):
        try:
            kind, number = TEXT, float(number)
        except ValueError:
            return _text(number, f"{entry.key} in {entry.path}", entry.place)
    if isinstance(number, bool):
        return Value({"type": "bool"})
    if not isinstance(number, (int, float)):
        return UNKNOWN
    return Value({"type": kind, "number": float(number), "origin": f"{entry.key} in {entry.path}"},
                 {"number": (entry.place,)})


def _environment(node: cst.Call, args: List[Value], kwargs: Dict[str, Value]) -> Value:
    """`os.environ.get("LR", "2e-5")`: the default, as text that holds a number when it spells one, or that names
    the project's file of settings (`os.environ.get("CONFIG", "configs/run.toml")`)."""
    positional = [a.value for a in node.args if a.keyword is None and not a.star]
    default = positional[1] if len(positional) > 1 else next(
        (a.value for a in node.args if a.keyword is not None and a.keyword.value == "default"), None)
    variable = positional[0].evaluated_value if positional and isinstance(positional[0], cst.SimpleString) else "?"
    if isinstance(default, cst.SimpleString):
        given = args[1] if len(args) > 1 else kwargs.get("default", UNKNOWN)
        found = _number_text(default, f"default of environment variable {variable}", TEXT)
        return found.but(files=given.facts["files"]) if given.facts.get("files") else found
    return UNKNOWN


def _text(written: Any, origin: str, place: Any = None) -> Value:
    """A setting that holds text: the string it writes (`literal`) and where, when it is a string."""
    if not isinstance(written, str):
        return Value({"type": TEXT})
    return Value({"type": TEXT, "literal": written, "origin": origin},
                 {"literal": (place,)} if place is not None else {})


def _number_text(node: cst.SimpleString, origin: str, kind: str = NUMBER) -> Value:
    """A string literal that spells a number: that number, written there."""
    try:
        text = node.evaluated_value
        number = float(text.strip()) if isinstance(text, str) else None
    except (ValueError, TypeError, SyntaxError):
        number = None
    if number is None or number != number or number in (float("inf"), float("-inf")):
        return Value({"type": kind}) if kind == TEXT else UNKNOWN
    return Value({"type": kind, "number": number, "origin": origin}, {"number": (node,), "origin": (node,)})


# ---------------------------------------------------------------- argparse

def flag_default(flow, dest: str) -> Value:
    """`args.<dest>` of `parser.parse_args()`: the default of every `add_argument` of that dest in the file
    (joined), or what the project's launch scripts that run this file pass instead."""
    declarations = [site for site in flow.ir.calls_named.get("add_argument", ()) if _dest(site.node) == dest]
    if not declarations:
        return UNKNOWN
    override = launch_overrides(flow).get(dest)
    if override is not None:
        return override
    return join_all(_declared_default(flow, site.node, dest) for site in declarations)


def _declared_default(flow, call: cst.Call, dest: str) -> Value:
    keywords = {a.keyword.value: a.value for a in call.args if a.keyword is not None}
    default = keywords.get("default")
    origin = f"default of --{dest}"
    if default is None:
        action = keywords.get("action")
        if isinstance(action, cst.SimpleString) and action.evaluated_value in ("store_true", "store_false"):
            return Value({"type": "bool", "number": float(action.evaluated_value == "store_false")})
        return Value({"type": "none"})
    if isinstance(default, cst.SimpleString):
        converts = keywords.get("type")
        if isinstance(converts, cst.Name) and converts.value in ("float", "int"):
            return _number_text(default, origin)
        return _text(default.evaluated_value, origin, default)
    # evaluated in the module's globals, as a constant: interpreting the declaring function from here would
    # re-enter it while a caller that reads the flag is still being interpreted
    found = flow.values.get(default) or flow.evaluate(default)
    if found.facts.get("type") == NUMBER and found.facts.get("origin") in (None, "literal"):
        return found.but(origin=origin, why={"origin": (default,)})
    return found


# typer's declarations of a command's options and arguments, written as the parameters' defaults
CLI_OPTIONS = frozenset({"typer.Option", "typer.Argument", "typer.params.Option", "typer.params.Argument"})


def cli_option(flow, call: cst.Call) -> Value:
    """What typer passes the parameter declared `= typer.Option(default, "--flag", ...)`: what every launch script
    of the project that runs the file passes as `--flag`, else the declared default (`...`: required, unknown)."""
    flags = [a.value.evaluated_value for a in call.args if a.keyword is None and isinstance(a.value, cst.SimpleString)]
    long = next((f for f in flags if isinstance(f, str) and f.startswith("--")), None)
    if long is not None:
        override = launch_overrides(flow).get(long[2:].replace("-", "_"))
        if override is not None:
            return override
    keywords = {a.keyword.value: a.value for a in call.args if a.keyword is not None}
    declared = keywords.get("default") or next((a.value for a in call.args if a.keyword is None), None)
    if declared is None or isinstance(declared, cst.SimpleString):
        return UNKNOWN
    found = flow.evaluate(declared)
    if found.facts.get("type") == NUMBER and found.facts.get("origin") in (None, "literal"):
        return found.but(origin=f"default of {long or 'the option'}", why={"origin": (declared,)})
    return found


def _dest(call: cst.Call) -> Optional[str]:
    """The attribute `add_argument` stores to: `dest=`, else the first long flag, else the first flag."""
    flags: List[str] = []
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == "dest" and isinstance(arg.value, cst.SimpleString):
            value = arg.value.evaluated_value
            return value if isinstance(value, str) else None
        if arg.keyword is None and isinstance(arg.value, cst.SimpleString):
            value = arg.value.evaluated_value
            if isinstance(value, str):
                flags.append(value)
    long = [f for f in flags if f.startswith("--")]
    chosen = long[0][2:] if long else (flags[0].lstrip("-") if flags else None)
    return chosen.replace("-", "_") if chosen else None


def launch_overrides(flow) -> Dict[str, Value]:
    """`--flag value` that every launch script of the project which runs this file passes, by dest; a flag
    that the scripts set to different values, or that some scripts leave at its default, is unknown, unless
    each names a config file: then it is a path to one of those `files`, one per launch."""
    cached = getattr(flow, "_launch_overrides", None)
    if cached is not None:
        return cached
    from rllint.analysis.launches import CONFIG_FILES, launched_runs, named_file

    per_flag: Dict[str, List[Value]] = {}
    runs = launched_runs(flow.file)
    for run in runs:
        for entry in run:
            if entry.source != "shell-flag":
                continue
            dest = entry.key.replace("-", "_")
            number = entry.value if isinstance(entry.value, (int, float)) and not isinstance(entry.value, bool) \
                else None
            facts = {"type": NUMBER, "number": float(number), "origin": f"--{entry.key} in {entry.path}"} \
                if number is not None else dict(_text(entry.value, f"--{entry.key} in {entry.path}").facts)
            named = named_file(entry, CONFIG_FILES)
            if named is not None:
                facts["files"] = (named,)
            per_flag.setdefault(dest, []).append(Value(facts, {"number": (entry.place,)} if number is not None
                                                       else {}))
    overrides: Dict[str, Value] = {}
    for dest, values in per_flag.items():
        if len(values) == len(runs) and all(v.facts.get("files") for v in values):
            overrides[dest] = Value({"type": TEXT, "files": tuple(v.facts["files"][0] for v in values)})
        elif len(values) == len(runs):
            overrides[dest] = join_all(values)
        else:
            overrides[dest] = UNKNOWN  # some launches leave the default, others change it: which run is it?
    flow._launch_overrides = overrides
    return overrides


# ---------------------------------------------------------------- framework configs

def framework_class(qual: str) -> Optional[Tuple[str, str]]:
    """(package, class) of a framework config class the defaults table knows: `trl.GRPOConfig`,
    `trl.trainer.grpo_config.GRPOConfig`, `transformers.TrainingArguments`."""
    from rllint.analysis.domains.framework_defaults import CLASSES

    head, _, _ = qual.partition(".")
    name = qual.rsplit(".", 1)[-1]
    package = _PACKAGES.get(head)
    if package is None or (package, name) not in CLASSES:
        return None
    return package, name


def _framework_base(flow, cls) -> Optional[Tuple[str, str]]:
    """The framework config class a project class extends (`class Args(GRPOConfig)`), through its bases."""
    for owner in flow._class_chain(cls):
        for base in owner.bases:
            found = framework_class(base)
            if found is not None:
                return found
    return None


def _super_init(node: cst.Call) -> bool:
    """`super().__init__(...)`."""
    func = node.func
    return isinstance(func, cst.Attribute) and func.attr.value == "__init__" and isinstance(func.value, cst.Call) \
        and isinstance(func.value.func, cst.Name) and func.value.func.value == "super"


def _keeps_args(frame, kwargs: Dict[str, Value]) -> None:
    """A trainer's constructor given a known config as `args=` keeps it: `self.args` holds it from here on."""
    given = kwargs.get("args")
    if given is not None and given.facts.get("type") in (INSTANCE, CONFIG):
        frame.store("self.args", given)


def _read_releases(frame, base: Value, node: cst.Attribute) -> Optional[Tuple[Tuple[str, ...], str]]:
    """The releases of a framework config that have every field this function reads from it (through any
    place that holds it here: `args.x`, `self.args.y`): code written against the config reads fields its
    release has. None when the reads do not narrow the releases."""
    keys = frame.attributes_read(base, node.value)
    return _releases(base, sorted(keys)) if keys else None


def framework_default(flow, package: str, name: str, key: str, releases: Optional[Tuple] = None) -> Value:
    """The framework's default of `key` in config `name`, with the releases it holds in; unknown when it changed
    across releases and the project pins none (or the pin is not in the table). `releases`, when the launches
    show which releases can run the project (`_releases`), narrows an unpinned project's to those."""
    from rllint.analysis.domains.framework_defaults import ABSENT, NOT_LITERAL

    history = _history(package, name, key)
    if not history:
        return UNKNOWN
    pinned = pinned_release(flow.file, package) if flow is not None else None
    if pinned is not None:
        chosen = [value for release, value in _holding(history, package) if release == pinned]
        if not chosen or chosen[0] == ABSENT:
            return UNKNOWN
        values, where = [chosen[0]], f"in {pinned}"
    elif releases:
        held = [value for release, value in _holding(history, package) if release in releases[0]]
        values = list({repr(v): v for v in held}.values())
        where = f"in {releases[0][0]}-{releases[0][-1]}, the releases with {releases[1]}"
    else:
        values = list({repr(v): v for _, v in history if v != ABSENT}.values())
        where = ""
    if len(values) != 1 or values[0] in (ABSENT, NOT_LITERAL):
        return UNKNOWN
    default = values[0]
    framework = _FRAMEWORK_NAMES.get(package, package)
    origin = f"{framework}'s default of {name}.{key}" + (f" {where}" if where else "")
    if isinstance(default, bool):
        return Value({"type": "bool", "number": float(default), "origin": origin})
    if isinstance(default, (int, float)):
        return Value({"type": NUMBER, "number": float(default), "origin": origin})
    if isinstance(default, str):
        return Value({"type": TEXT, "literal": default, "origin": origin})
    return UNKNOWN


def _launched(flow, instances: List[Value], config_files: bool) -> List[Value]:
    """The dataclass instances a parser of the command line fills, with what the project's launches of this
    file give: a setting every launch gives holds that (joined), one that only some give is unknown, the rest
    keep their defaults. Each setting goes to the one instance that declares it; a framework config also learns
    which of its releases declare every flag the launches give it (`_releases`: the parser refuses a flag no
    dataclass declares, while TRL ignores a key of its `--config` file that none declares)."""
    launches = _runs(flow)
    runs = [_settings(flow, run, config_files) for run in launches]
    if not runs:
        return instances
    flags = {e.key.replace("-", "_") for run in launches for e in run if e.source == "shell-flag"} - {"config"}
    given = [dict(v.facts.get("fields" if v.facts.get("type") == INSTANCE else "items") or ()) for v in instances]
    keys = {key for run in runs for key in run}
    owners: Dict[str, List[int]] = {key: [i for i, v in enumerate(instances) if _declares(v, key)] for key in keys}
    for key, found in owners.items():
        if len(found) == 1:
            values = [run[key] for run in runs if key in run]
            given[found[0]][key] = join_all(values) if len(values) == len(runs) else UNKNOWN
    result = []
    for index, instance in enumerate(instances):
        kind = instance.facts.get("type")
        if kind not in (INSTANCE, CONFIG):
            result.append(instance)
            continue
        instance = instance.but(**{"fields" if kind == INSTANCE else "items": tuple(given[index].items())})
        mine = sorted(key for key, found in owners.items() if found == [index] and key in flags)
        known = all(v.facts.get("type") in (INSTANCE, CONFIG) for v in instances)
        narrowed = _releases(instance, mine) if known and all(owners[k] for k in flags) else None
        result.append(instance.but(releases=narrowed) if narrowed else instance)
    return result


def _runs(flow) -> List[list]:
    from rllint.analysis.launches import launched_runs

    return launched_runs(flow.file)


def _settings(flow, run, config_files: bool) -> Dict[str, Value]:
    """A launch's settings by name: its flags, over the keys of the YAML file its `--config` names."""
    from rllint.analysis.launches import config_file_entries

    entries = [e for e in run if e.source == "shell-flag"]
    named = [e for e in entries if e.key == "config"] if config_files else []
    if named:
        entries = (config_file_entries(flow.file, named[0]) or []) + [e for e in entries if e.key != "config"]
    settings: Dict[str, Value] = {}
    for entry in entries:
        number = entry.value if isinstance(entry.value, (int, float)) and not isinstance(entry.value, bool) \
            else None
        where = f"--{entry.key} in {entry.path}" if entry.source == "shell-flag" else f"{entry.key} in {entry.path}"
        settings[entry.key.replace("-", "_")] = Value(
            {"type": NUMBER, "number": float(number), "origin": where}, {"number": (entry.place,)}) \
            if number is not None else _text(entry.value, where, entry.place)
    return settings


def _declares(instance: Value, key: str) -> bool:
    """Whether a parsed dataclass has the setting `key`: a field of the project class (or of its bases in
    the project), or of the framework config it is or extends, in some release."""
    kind = instance.facts.get("type")
    framework = instance.facts.get("framework")
    if kind == INSTANCE:
        cls = instance.facts["cls"]
        flow = cls.module.flow
        if any(key in owner.fields for owner in flow._class_chain(cls)):
            return True
        framework = _framework_base(flow, cls)
    return framework is not None and bool(_declaring(framework[0], framework[1], key))


def _declaring(package: str, name: str, key: str) -> Tuple[str, ...]:
    """The releases of the table in which config `name` (or a base) has the field `key`."""
    from rllint.analysis.domains.framework_defaults import ABSENT, RELEASES

    return tuple(r for r in RELEASES.get(package, ()) if _default_in(package, name, key, r, 0) != ABSENT)


def _releases(instance: Value, keys: List[str]) -> Optional[Tuple[Tuple[str, ...], str]]:
    """The releases of a framework config that declare every setting the launches give it (the parser of
    the others refuses an unknown flag), with the settings that narrow them; None when none narrows them."""
    from rllint.analysis.domains.framework_defaults import RELEASES

    framework = instance.facts.get("framework")
    if instance.facts.get("type") == INSTANCE:
        cls = instance.facts.get("cls")
        if cls is None:  # an instance of one of several classes (joined paths): which one is not known
            return None
        flow = cls.module.flow
        keys = [k for k in keys if not any(k in owner.fields for owner in flow._class_chain(cls))]
        framework = _framework_base(flow, cls)
    if framework is None:
        return None
    every = RELEASES.get(framework[0], ())
    chosen, reasons = set(every), []
    for key in keys:
        declaring = set(_declaring(framework[0], framework[1], key))
        if declaring and declaring != chosen and chosen - declaring:
            reasons.append(f"{framework[1]}.{key}")
            chosen &= declaring
    if not reasons or not chosen:
        return None
    return tuple(r for r in every if r in chosen), " and ".join(reasons)


def _history(package: str, name: str, key: str) -> Tuple[Tuple[str, object], ...]:
    """The changes of a field's default across releases, looking through the class's bases per release."""
    from rllint.analysis.domains.framework_defaults import ABSENT, RELEASES

    per_release = []
    for release in RELEASES.get(package, ()):
        per_release.append((release, _default_in(package, name, key, release, 0)))
    kept = []
    for release, value in per_release:
        if not kept or kept[-1][1] != value:
            kept.append((release, value))
    return tuple(kept) if any(v != ABSENT for _, v in kept) else ()


def _default_in(package: str, name: str, key: str, release: str, depth: int) -> object:
    """The default of field `key` of config `name` (or of a base) in `release`; ABSENT when it has no such
    field (a default of None is a default)."""
    from rllint.analysis.domains.framework_defaults import ABSENT, CLASSES, FIELDS, RELEASES

    order = RELEASES.get(package, ())
    changes = FIELDS.get((package, name, key), ())
    own = changes[0][1] if changes and release not in order else ABSENT
    for start, value in changes if release in order else ():
        if start in order and order.index(start) <= order.index(release):
            own = value
    if own != ABSENT:
        return own
    if depth > 6:
        return ABSENT
    bases = _at(CLASSES.get((package, name), ()), package, release)
    if not bases or bases == ABSENT:
        return ABSENT
    for base in bases:
        for base_package in (package, "transformers"):
            if (base_package, base) in CLASSES:
                inherited = _default_in(base_package, base, key, _release_of(base_package, release), depth + 1)
                if inherited != ABSENT:
                    return inherited
                break
    return ABSENT


def _at(changes, package: str, release: str) -> object:
    """The value of a change list at a release (None when the list is empty)."""
    from rllint.analysis.domains.framework_defaults import RELEASES

    order = RELEASES.get(package, ())
    if release not in order:
        return changes[0][1] if changes else None
    found = None
    for start, value in changes:
        if start in order and order.index(start) <= order.index(release):
            found = value
    return found


def _release_of(package: str, release: str) -> str:
    from rllint.analysis.domains.framework_defaults import RELEASES

    order = RELEASES.get(package, ())
    return release if release in order else (order[-1] if order else release)


def _holding(history, package: str):
    """(release, value) for every release of the table, from a change list."""
    from rllint.analysis.domains.framework_defaults import RELEASES

    return [(release, _at(history, package, release)) for release in RELEASES.get(package, ())]


def pinned_release(file, package: str) -> Optional[str]:
    """The release of `package` the project pins (`trl==0.14.0` in a requirements file or pyproject), when it
    is one of the table's."""
    from rllint.analysis.domains.framework_defaults import RELEASES
    from rllint.analysis.launches import project_text_files

    for path, text in project_text_files(file, ("requirements.txt", "requirements-dev.txt", "pyproject.toml",
                                                "setup.py", "environment.yml")):
        for line in text.splitlines():
            line = line.strip().strip("\"',")
            match = _PIN.match(line)
            if match and match.group(1).lower() == package and match.group(2) == "==" and match.group(3):
                release = match.group(3)
                return release if release in RELEASES.get(package, ()) else None
    return None


CONFIG_DOMAIN = ConfigDomain()
