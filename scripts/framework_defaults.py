"""Write `rllint/analysis/domains/framework_defaults.py`: the defaults of the RL frameworks' configs, per release.

A run's effective value of a setting that nobody sets is the framework's own default, and those defaults
change across releases (TRL's GRPO sampling temperature was 0.9 in 0.14 and is 1.0 now). This script reads
the released wheels (`pip download --no-deps`, nothing installed or imported) and writes them as data:

- TRL: every dataclass `*Config` / `*Arguments` of the package, its bases and its fields' literal defaults;
- transformers: `TrainingArguments`, the base of TRL's configs (one release: its defaults have held);
- verl: the composed PPO trainer YAML (`_generated_ppo_trainer.yaml`, else `ppo_trainer.yaml`), flattened;
- OpenRLHF: the `--flag` defaults of its PPO entry point (`openrlhf.cli.train_ppo_ray`).

    python scripts/framework_defaults.py                  # download the releases below and write the table
    python scripts/framework_defaults.py --wheels DIR     # read the wheels already in DIR (no download)

The table is committed; running this again reproduces it.
"""
from __future__ import annotations

import argparse
import ast
import os
import pprint
import re
import subprocess
import sys
import tempfile
import zipfile
from typing import Dict, Iterable, List, Optional, Tuple

RELEASES = {
    "trl": ("0.14.0", "0.15.0", "0.16.0", "0.17.0", "0.18.0", "0.19.0", "0.20.0", "0.22.0", "0.24.0", "0.26.0",
            "0.29.0", "1.0.0", "1.16.0"),
    "transformers": ("4.48.0",),
    "verl": ("0.9.1",),
    "openrlhf": ("0.11.2",),
}
OUTPUT = os.path.join(os.path.dirname(__file__), "..", "rllint", "analysis", "domains", "framework_defaults.py")
ABSENT = "<absent>"  # the field does not exist in that release
NOT_LITERAL = "<not literal>"  # the field exists, its default is not a literal (`default_factory`, required)
_CLASS = re.compile(r"(?:Config|Arguments)$")

Fields = Dict[str, object]
Classes = Dict[str, Tuple[Tuple[str, ...], Fields]]


def literal(node: Optional[ast.AST]) -> Tuple[bool, object]:
    """(True, value) for a literal default, `field(default=literal)`, `-1e-6`; (False, None) otherwise."""
    if isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", "")) == "field":
        node = next((k.value for k in node.keywords if k.arg == "default"), None)
    if node is None:
        return False, None
    try:
        value = ast.literal_eval(node)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return False, None
    return (True, value) if isinstance(value, (int, float, str, bool, type(None))) else (False, None)


def config_classes(source: str) -> Classes:
    """The `*Config` / `*Arguments` classes of a module: their base names and their fields' literal defaults
    (`NOT_LITERAL` for the other fields)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return {}
    found: Classes = {}
    for node in tree.body:
        if not isinstance(node, ast.ClassDef) or not (_CLASS.search(node.name) or node.name.startswith("_Base")):
            continue
        bases = tuple(b.attr if isinstance(b, ast.Attribute) else b.id for b in node.bases
                      if isinstance(b, (ast.Name, ast.Attribute)))
        fields: Fields = {}
        for statement in node.body:
            if isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name):
                known, value = literal(statement.value)
                fields[statement.target.id] = value if known else NOT_LITERAL
        found[node.name] = (bases, fields)
    return found


def flag_defaults(source: str) -> Fields:
    """`--flag` defaults of `add_argument` calls (dest as argparse forms it)."""
    found: Fields = {}
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "add_argument":
            flags = [a.value for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
            long = [f for f in flags if f.startswith("--")]
            dest = next((k.value.value for k in node.keywords if k.arg == "dest" and isinstance(k.value, ast.Constant)),
                        long[0][2:] if long else None)
            default = next((k.value for k in node.keywords if k.arg == "default"), None)
            action = next((k.value.value for k in node.keywords if k.arg == "action"
                           and isinstance(k.value, ast.Constant)), None)
            if dest is None:
                continue
            if action in ("store_true", "store_false") and default is None:
                found[dest.replace("-", "_")] = action == "store_false"
                continue
            known, value = literal(default)
            if known:
                found[dest.replace("-", "_")] = value
    return found


def yaml_defaults(text: str) -> Fields:
    """A YAML file's scalar keys, flattened to dotted keys (lists left out)."""
    import yaml

    found: Fields = {}

    def walk(node: object, prefix: str) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                walk(value, f"{prefix}{key}.")
        elif isinstance(node, (int, float, str, bool, type(None))) and prefix:
            found[prefix[:-1]] = node

    walk(yaml.safe_load(text), "")
    return found


def read_release(package: str, wheel: str) -> Dict[str, Tuple[Tuple[str, ...], Fields]]:
    """What one released wheel of `package` says: table name -> (bases, defaults)."""
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()

        def text(name: str) -> str:
            return archive.read(name).decode("utf-8", "replace")

        if package == "trl":
            classes: Classes = {}
            for name in names:
                if name.endswith(".py") and "/tests/" not in name and ("config" in name or name.endswith("utils.py")):
                    classes.update(config_classes(text(name)))
            return classes
        if package == "transformers":
            module = next(n for n in names if n.endswith("transformers/training_args.py"))
            return {k: v for k, v in config_classes(text(module)).items() if k == "TrainingArguments"}
        if package == "verl":
            yaml_file = next((n for n in names if n.endswith("trainer/config/_generated_ppo_trainer.yaml")), None) or \
                next(n for n in names if n.endswith("trainer/config/ppo_trainer.yaml"))
            return {"ppo_trainer": ((), yaml_defaults(text(yaml_file)))}
        if package == "openrlhf":
            module = next(n for n in names if n.endswith("openrlhf/cli/train_ppo_ray.py"))
            return {"train_ppo_ray": ((), flag_defaults(text(module)))}
    raise ValueError(f"no reader for {package}")


def changes(per_release: Iterable[Tuple[str, object]]) -> Tuple[Tuple[str, object], ...]:
    """(release, value) pairs kept where the value changes from the previous release."""
    kept: List[Tuple[str, object]] = []
    for release, value in per_release:
        if not kept or kept[-1][1] != value or type(kept[-1][1]) is not type(value):
            kept.append((release, value))
    return tuple(kept)


def build(releases: Dict[str, Dict[str, Classes]]) -> Tuple[dict, dict]:
    """(CLASSES, FIELDS) from {package: {release: tables}}, releases in order."""
    classes: dict = {}
    fields: dict = {}
    for package, by_release in releases.items():
        order = list(by_release)
        names = sorted({name for tables in by_release.values() for name in tables})
        for name in names:
            bases = [(r, by_release[r][name][0] if name in by_release[r] else ABSENT) for r in order]
            classes[(package, name)] = changes(bases)
            keys = sorted({k for r in order if name in by_release[r] for k in by_release[r][name][1]})
            for key in keys:
                fields[(package, name, key)] = changes(
                    (r, by_release[r][name][1].get(key, ABSENT) if name in by_release[r] else ABSENT) for r in order)
    return classes, fields


def render(classes: dict, fields: dict) -> str:
    versions = {package: releases for package, releases in RELEASES.items()}
    return "\n".join([
        '"""The RL frameworks\' config defaults, per release. Generated by scripts/framework_defaults.py from the',
        "released wheels; do not edit (run the script again).",
        "",
        "CLASSES: (package, class or table) -> ((first release, base names), ...)",
        "FIELDS: (package, class or table, key) -> ((first release, default), ...)",
        f"Each pair holds from its release until the next pair's; {ABSENT!r}: not in that release;",
        f"{NOT_LITERAL!r}: in that release, with a default that is not a literal (a factory, or none).",
        '"""',
        f"ABSENT = {ABSENT!r}",
        f"NOT_LITERAL = {NOT_LITERAL!r}",
        f"RELEASES = {pprint.pformat(versions, width=116)}",
        f"CLASSES = {pprint.pformat(classes, width=116)}",
        f"FIELDS = {pprint.pformat(fields, width=116)}",
        "",
    ])


def download(package: str, release: str, folder: str) -> str:
    subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--quiet", "--dest", folder,
                    f"{package}=={release}"], check=True)
    return wheel_in(folder, package, release)


def wheel_in(folder: str, package: str, release: str) -> str:
    prefix = f"{package.replace('-', '_')}-{release}-"
    found = [n for n in os.listdir(folder) if n.lower().startswith(prefix.lower()) and n.endswith(".whl")]
    if not found:
        raise FileNotFoundError(f"no wheel of {package} {release} in {folder}")
    return os.path.join(folder, found[0])


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--wheels", help="a folder with the wheels already downloaded (else a temporary one)")
    parser.add_argument("--output", default=OUTPUT)
    options = parser.parse_args(argv)
    folder = options.wheels or tempfile.mkdtemp(prefix="rllint-wheels-")
    releases: Dict[str, Dict[str, Classes]] = {}
    for package, versions in RELEASES.items():
        releases[package] = {}
        for release in versions:
            try:
                wheel = wheel_in(folder, package, release)
            except FileNotFoundError:
                wheel = download(package, release, folder)
            releases[package][release] = read_release(package, wheel)
    classes, fields = build(releases)
    with open(options.output, "w", encoding="utf-8") as out:
        out.write(render(classes, fields))
    print(f"wrote {os.path.normpath(options.output)}: {len(classes)} classes, {len(fields)} settings")
    return 0


if __name__ == "__main__":
    sys.exit(main())
