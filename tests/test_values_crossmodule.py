"""Values across modules: names imported from the linted project resolve to where they are written,
and findings on them land in that file (suppressions there, once however many files import it)."""
import ast
import os
import subprocess
import sys
import textwrap

import libcst as cst
import pytest

from rllint.analysis import modules
from rllint.analysis.values import CROSS_MODULE_VALUES, RemoteNode, Values
from rllint.cache import ResultCache
from rllint.runner import FileContext, lint_files
from rllint.settings import Settings


def project(root, files):
    for relative, source in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(source))
    modules.clear_cache()


class _Uses(cst.CSTVisitor):
    def __init__(self):
        super().__init__()
        self.args = []

    def visit_Call(self, node):
        if isinstance(node.func, cst.Name) and node.func.value == "use":
            self.args.append(node.args[0].value)


def resolved(root, relative, settings=None):
    """For each `use(x)` in the file: (number, file relative to root or "." for itself, line, origin) or None."""
    path = os.path.join(str(root), relative)
    text = open(path).read()
    module = cst.parse_module(text)
    file = FileContext(path, text, module, ast.parse(text), settings or Settings())
    values = file.fact(Values)
    uses = _Uses()
    module.visit(uses)
    out = []
    for arg in uses.args:
        value = values.of(arg)
        if value is None:
            out.append(None)
            continue
        where = "." if value.path is None else os.path.relpath(value.path, str(root))
        out.append((value.number, where, values.line(value.node), value.origin))
    return out, file


HPARAMS = {
    "pkg/__init__.py": "",
    "pkg/hparams.py": """\
        import os
        LR = 3e-5
        KL = LR / 100
        CLIP = float(os.environ.get("CLIP", "0.2"))
    """,
    "pkg/configs/__init__.py": "",
    "pkg/configs/base.py": """\
        from dataclasses import dataclass, field

        @dataclass
        class BaseConfig:
            learning_rate: float = field(default=2e-5)
            beta: float = 0.04
    """,
}


def test_relative_absolute_and_module_attribute_imports(tmp_path):
    project(tmp_path, {**HPARAMS, "pkg/train.py": """\
        from .hparams import LR, KL as kl_coef
        from . import hparams
        from .configs.base import BaseConfig
        import pkg.hparams
        import pkg.hparams as hp
        use(LR)
        use(kl_coef)
        use(hparams.CLIP)
        use(pkg.hparams.LR)
        use(hp.KL * 2)
        use(BaseConfig.beta)
        use(hparams.MISSING)
        use(BaseConfig)
    """})
    found, file = resolved(tmp_path, "pkg/train.py")
    assert found == [
        (3e-5, "pkg/hparams.py", 2, "constant LR"),
        (3e-7, "pkg/hparams.py", 3, "constant LR"),
        (0.2, "pkg/hparams.py", 4, "default of environment variable CLIP"),
        (3e-5, "pkg/hparams.py", 2, "constant LR"),
        (6e-7, ".", 10, "constant LR"),  # the arithmetic is written here
        (0.04, "pkg/configs/base.py", 6, "default of BaseConfig.beta"),
        None,
        None,
    ]
    assert sorted(os.path.relpath(p, str(tmp_path)) for p, digest in file.dependencies.items() if digest) == [
        "pkg/__init__.py", "pkg/configs/base.py", "pkg/hparams.py"]  # `import pkg.hparams` reads the package


def read(dependencies):
    """The modules a result read (files looked for and not found are recorded with the hash "")."""
    return {path: digest for path, digest in dependencies.items() if digest}


def test_inherited_dataclass_defaults_and_config_objects(tmp_path):
    project(tmp_path, {**HPARAMS, "pkg/train.py": """\
        from dataclasses import dataclass
        from pkg.configs.base import BaseConfig

        @dataclass
        class GRPOConfig(BaseConfig):
            beta: float = 0.0

        class Trainer:
            def __init__(self, config: GRPOConfig):
                self.lr = config.learning_rate

            def step(self):
                use(self.lr)
                use(self.learning_rate)

        def main(cfg: BaseConfig):
            use(cfg.learning_rate)
            local = GRPOConfig()
            use(local.learning_rate)
            use(local.beta)
    """})
    found, _ = resolved(tmp_path, "pkg/train.py")
    base = (2e-5, "pkg/configs/base.py", 5, "default of BaseConfig.learning_rate")
    # `self.learning_rate` in a method: as within one file, the one class that has the field answers.
    assert found == [base, base, base, base, (0.0, ".", 6, "default of GRPOConfig.beta")]


def test_local_names_win_over_imports_and_unknown_modules_are_silent(tmp_path):
    project(tmp_path, {**HPARAMS, "pkg/train.py": """\
        from .hparams import LR, KL
        from torch.optim import lr_scheduler
        import numpy as np
        KL = 0.5
        def f(LR=1e-6):
            use(LR)
        use(KL)
        use(np.pi)
        use(lr_scheduler.X)
    """})
    found, file = resolved(tmp_path, "pkg/train.py")
    assert found == [(1e-6, ".", 5, "default of parameter `LR` of f()"), (0.5, ".", 4, "constant KL"), None, None]
    assert read(file.dependencies) == {}


def test_names_imported_from_outside_the_project_keep_the_single_file_behaviour(tmp_path):
    project(tmp_path, {"train.py": """\
        import argparse
        from trl import GRPOConfig
        from torch import zeros
        parser = argparse.ArgumentParser()
        parser.add_argument("--learning_rate", type=float, default=2e-5)
        def main():
            cfg = GRPOConfig()
            use(cfg.learning_rate)
            x = zeros(3)
            use(x)
    """})
    found, file = resolved(tmp_path, "train.py")
    assert found == [(2e-5, ".", 5, "default of --learning_rate"), None]
    assert read(file.dependencies) == {}
    uses = _Uses()
    file.module.visit(uses)
    assert isinstance(file.fact(Values).assigned(uses.args[1]), cst.Call)  # `zeros` is not taken for a class


def test_the_option_turns_cross_module_values_off(tmp_path):
    project(tmp_path, {**HPARAMS, "pkg/train.py": "from .hparams import LR\nuse(LR)\n"})
    found, file = resolved(tmp_path, "pkg/train.py", Settings(options={CROSS_MODULE_VALUES.key: False}))
    assert found == [None] and read(file.dependencies) == {}


def test_remote_nodes_are_one_object_per_place(tmp_path):
    project(tmp_path, {**HPARAMS, "pkg/train.py": "from .hparams import LR\nfrom . import hparams\nuse(LR)\nuse(hparams.LR)\n"})
    path = str(tmp_path / "pkg/train.py")
    text = open(path).read()
    module = cst.parse_module(text)
    values = FileContext(path, text, module, ast.parse(text), Settings()).fact(Values)
    uses = _Uses()
    module.visit(uses)
    first, second = (values.of(arg) for arg in uses.args)
    assert isinstance(first.node, RemoteNode) and first.node is second.node
    assert (first.node.line, first.node.column, first.node.end_line, first.node.end_column) == (2, 6, 2, 10)


# ---- through the runner (RL601 reports learning rates where they are written) ----------------

TRAIN = """\
    from trl import GRPOConfig, GRPOTrainer
    from configs.hparams import LR

    args = GRPOConfig(output_dir="out", learning_rate=LR)
    trainer = GRPOTrainer(model=model, args=args, reward_funcs=[reward])
"""


def rl601(paths, **settings):
    result = lint_files([str(p) for p in paths], Settings(select=["RL601"], **settings), jobs=1)
    return [(os.path.basename(d.path), d.line, d.code) for d in result.diagnostics], result


def test_a_finding_lands_where_the_value_is_written_once_for_all_importers(tmp_path):
    project(tmp_path, {"configs/hparams.py": "LR = 3e-5\n", "a.py": TRAIN, "b.py": TRAIN})
    found, result = rl601([tmp_path / "a.py", tmp_path / "b.py", tmp_path / "configs/hparams.py"])
    assert found == [("hparams.py", 1, "RL601")]
    # The message says where the value is used, once: RL601's wording names the importing file.
    message = result.diagnostics[0].message
    assert "on line 4 of {}".format(tmp_path / "a.py") in message and "(used in" not in message
    off, _ = rl601([tmp_path / "a.py"], options={CROSS_MODULE_VALUES.key: False})
    assert off == []


def test_suppressions_and_per_file_ignores_of_the_file_where_it_is_written_apply(tmp_path):
    project(tmp_path, {"configs/hparams.py": "LR = 3e-5  # noqa: RL601\n", "a.py": TRAIN})
    assert rl601([tmp_path / "a.py"])[0] == []
    project(tmp_path, {"configs/hparams.py": "LR = 3e-5\n"})
    assert rl601([tmp_path / "a.py"], per_file_ignores={"configs/*": ["RL601"]}, root=tmp_path)[0] == []
    assert rl601([tmp_path / "a.py"], root=tmp_path)[0] == [("hparams.py", 1, "RL601")]


def test_a_comment_used_by_an_importer_is_not_stale(tmp_path):
    project(tmp_path, {"configs/hparams.py": "LR = 3e-5  # noqa: RL601\n", "a.py": TRAIN})
    hparams = tmp_path / "configs/hparams.py"
    assert rl601([tmp_path / "a.py", hparams], extend_select=["RL001"])[0] == []
    assert rl601([hparams], extend_select=["RL001"])[0] == [("hparams.py", 1, "RL001")]


def test_a_cached_result_is_dropped_when_a_module_it_read_changes(tmp_path):
    project(tmp_path, {"configs/hparams.py": "LR = 3e-5\n", "a.py": TRAIN})
    settings = Settings(select=["RL601"])
    cache_dir = tmp_path / "cache"

    def run():
        cache = ResultCache(settings, cache_dir)
        result = lint_files([str(tmp_path / "a.py")], settings, jobs=1, cache=cache)
        return [(os.path.basename(d.path), d.line) for d in result.diagnostics]

    assert run() == [("hparams.py", 1)]
    assert run() == [("hparams.py", 1)]  # from the cache
    (tmp_path / "configs/hparams.py").write_text("# now below the limit\nLR = 1e-6\n")
    assert run() == []
    (tmp_path / "configs/hparams.py").write_text("\n\nLR = 5e-5\n")
    assert run() == [("hparams.py", 3)]


@pytest.mark.slow
def test_astroid_is_imported_only_when_a_project_module_is_read(tmp_path):
    project(tmp_path, {"configs/hparams.py": "LR = 3e-5\n", "a.py": TRAIN,
                       "plain.py": TRAIN.replace("from configs.hparams import LR", "import torch\nLR = 3e-5")})
    script = textwrap.dedent("""\
        import sys
        import rllint.cli
        from rllint.runner import lint_files
        from rllint.settings import Settings
        assert "astroid" not in sys.modules
        lint_files([sys.argv[1]], Settings(select=["RL"]), isolated=False)
        print("astroid" in sys.modules)
    """)
    outputs = [subprocess.run([sys.executable, "-c", script, str(tmp_path / name)], capture_output=True, text=True,
                              check=True).stdout.strip() for name in ("plain.py", "a.py")]
    assert outputs == ["False", "True"]


def test_report_value_places_a_remote_value_in_its_file_and_names_the_use(tmp_path):
    from rllint.analysis.values import Value
    from rllint.registry import CSTRule

    class Probe(CSTRule):  # no code: never registered
        message = "value {value}"

    text = "x = 1\nuse(LR)\n"
    module = cst.parse_module(text)
    probe = Probe(FileContext("train.py", text, module, ast.parse(text), Settings()))
    use = module.body[1].body[0].value
    remote = Value(3e-5, RemoteNode("/p/hp.py", 2, 6, 2, 10))
    probe.report_value(remote, used_at=use, value="3e-05")
    probe.report(remote.node, value="3e-05")
    probe.report_value(Value(1, module.body[0].body[0].value), value="1")
    placed = [(f.path, f.span, f.node is not None, f.message) for f in probe.findings]
    assert placed == [("/p/hp.py", (2, 6, 2, 10), False, "value 3e-05 (used in train.py:2)"),
                      ("/p/hp.py", (2, 6, 2, 10), False, "value 3e-05 (used in train.py)"),
                      (None, None, True, "value 1")]


def test_lines_of_nodes_are_those_of_libcst_positions():
    """`Values.line` counts newlines in one code generation instead of libcst's full position pass."""
    from libcst.metadata import MetadataWrapper, PositionProvider

    text = ('# header\r\n\r\n@decorator(\r\n    1)\r\nclass A(  # comment\r\n    B):\r\n    """doc\r\n    string"""\r\n'
            '\r\n    def f(self, x=(1,\r\n               2)):\r\n        return [\r\n            x,  # c\r\n'
            '        ]\r\nif a:\r\n    pass\r\nelse:\r\n    y = \\\r\n        3\r\n')
    module = cst.parse_module(text)
    values = FileContext("x.py", text, module, ast.parse(text), Settings()).fact(Values)
    positions = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    assert len(positions) > 50
    assert {node: values.line(node) for node in positions} == {node: p.start.line for node, p in positions.items()}


def test_a_rule_that_does_not_name_the_importer_gets_it_appended(tmp_path):
    project(tmp_path, {"configs/hparams.py": "ADV_EPS = 1e4\n", "a.py": """\
        from configs.hparams import ADV_EPS


        def whiten(advantages):
            return (advantages - advantages.mean()) / (advantages.std() + ADV_EPS)
    """})
    result = lint_files([str(tmp_path / "a.py")], Settings(select=["RL201"]), jobs=1)
    assert [(os.path.basename(d.path), d.line, d.code) for d in result.diagnostics] == [("hparams.py", 1, "RL201")]
    assert result.diagnostics[0].message.endswith("(used in {})".format(tmp_path / "a.py"))
