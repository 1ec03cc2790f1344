"""The layers of rllint, read from its import statements: the fact engine and the project index know nothing
of settings, caching, the runner or the rules (issue 22), so that they can be tested and reused alone."""
import ast
from pathlib import Path
from typing import Dict, Set

import rllint

PACKAGE = Path(rllint.__file__).parent
OUTER_LAYERS = ("rllint.settings", "rllint.cache", "rllint.runner", "rllint.config", "rllint.cli", "rllint.workers",
                "rllint.registry", "rllint.rules")


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports_at_run_time(tree: ast.Module, module: str, is_package: bool, known: Set[str]) -> Set[str]:
    """The rllint modules a module imports when it runs (an import under `if TYPE_CHECKING:` never runs)."""
    found: Set[str] = set()
    package = module if is_package else module.rpartition(".")[0]

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for child in node.orelse:
                visit(child)
            return
        names = []
        if isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[:len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([node.module] if node.module else []))
            names = [base] + [f"{base}.{alias.name}" for alias in node.names]
        elif isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        found.update(name for name in names if name in known and name != module)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return found


def _import_graph() -> Dict[str, Set[str]]:
    paths = {_module_name(path): path for path in PACKAGE.rglob("*.py")}
    return {name: _imports_at_run_time(ast.parse(path.read_text(encoding="utf-8")), name,
                                       path.name == "__init__.py", set(paths))
            for name, path in paths.items()}


def _reached(graph: Dict[str, Set[str]], start: str) -> Set[str]:
    seen, todo = set(), [start]
    while todo:
        for imported in graph[todo.pop()] - seen:
            seen.add(imported)
            todo.append(imported)
    return seen


def test_the_engine_and_the_index_import_no_outer_layer():
    graph = _import_graph()
    inner = [name for name in graph if name.startswith("rllint.analysis") or name == "rllint.index"]
    assert len(inner) > 20  # the walk found the engine's modules
    for module in inner:
        outer = sorted(name for name in _reached(graph, module) if name.startswith(OUTER_LAYERS))
        assert not outer, f"{module} reaches {outer}"


def test_the_import_graph_sees_run_time_imports_and_skips_type_checking_ones():
    tree = ast.parse("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from rllint.settings import Settings\n"
                     "def f():\n    from rllint.cache import ResultCache\nfrom . import files\n")
    known = {"rllint.settings", "rllint.cache", "rllint.files"}
    assert _imports_at_run_time(tree, "rllint.runner", False, known) == {"rllint.cache", "rllint.files"}


def _circles(graph: Dict[str, Set[str]]) -> Set[frozenset]:
    """The import circles of `graph`: each module set that reaches itself through the others, once."""
    found = set()
    for module in graph:
        if module in _reached(graph, module):
            found.add(frozenset(name for name in _reached(graph, module) if module in _reached(graph, name)))
    return found


def test_no_module_imports_itself_through_others():
    circles = _circles(_import_graph())
    assert not circles, [sorted(circle) for circle in circles]


def test_a_circle_is_seen():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}
    assert _circles(graph) == {frozenset({"a", "b", "c"})}
