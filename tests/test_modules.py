"""rllint.analysis.modules: which project file an import names, and the numbers written there."""
import os
import textwrap

import pytest

from rllint.analysis import modules
from rllint.analysis.modules import Resolver, Written, find_module


def project(root, files):
    """Write `files` (relative path -> source) under `root`; return root as a string."""
    for relative, source in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(source))
    modules.clear_cache()
    return str(root)


def at(root, relative):
    return os.path.join(root, relative)


def resolve(root, importer, module, level, *names):
    """(number, file relative to root, line, column, origin) of what `names` stands for; None if unknown."""
    found = Resolver(at(root, importer)).resolve(module, level, names)
    if found is None:
        return None
    return found.number, os.path.relpath(found.path, root), found.line, found.column, found.origin


# ---- finding the file ---------------------------------------------------------------------


def test_relative_imports_from_the_importers_package(tmp_path):
    root = project(tmp_path, {"pkg/__init__.py": "", "pkg/hp.py": "", "pkg/sub/__init__.py": "",
                              "pkg/sub/train.py": "", "pkg/conf/__init__.py": ""})
    train = at(root, "pkg/sub/train.py")
    assert find_module(train, "hp", 2) == at(root, "pkg/hp.py")
    assert find_module(train, "", 1) == at(root, "pkg/sub/__init__.py")
    assert find_module(train, "conf", 2) == at(root, "pkg/conf/__init__.py")
    assert find_module(train, "hp", 1) is None


def test_absolute_imports_from_the_script_folder_the_package_root_and_src(tmp_path):
    root = project(tmp_path, {"pyproject.toml": "", "config.py": "", "src/lib/__init__.py": "",
                              "src/lib/values.py": "", "scripts/train.py": "", "scripts/local.py": "",
                              "src/lib/deep/__init__.py": "", "src/lib/deep/run.py": ""})
    script = at(root, "scripts/train.py")
    assert find_module(script, "local") == at(root, "scripts/local.py")
    assert find_module(script, "config") == at(root, "config.py")
    assert find_module(script, "lib.values") == at(root, "src/lib/values.py")
    assert find_module(at(root, "src/lib/deep/run.py"), "lib.values") == at(root, "src/lib/values.py")
    assert find_module(script, "torch") is None


def test_installed_packages_are_never_the_project(tmp_path):
    root = project(tmp_path, {"venv/lib/site-packages/torch/__init__.py": "X = 1\n",
                              "venv/lib/site-packages/train.py": ""})
    assert find_module(at(root, "venv/lib/site-packages/train.py"), "torch") is None


# ---- reading numbers --------------------------------------------------------------------


def test_constants_arithmetic_and_environment_defaults(tmp_path):
    root = project(tmp_path, {"hp.py": """\
        import os
        BASE = 1e-5
        LR = BASE * 3
        NEG = -2
        ENV = float(os.environ.get("LR", "2e-5"))
        STEPS = int(os.getenv("STEPS", 100))
        TWICE = 1
        TWICE = 2
        NAME = "run"
        UNKNOWN = compute()
    """, "train.py": ""})
    assert resolve(root, "train.py", "hp", 0, "BASE") == (1e-5, "hp.py", 2, 8, "constant BASE")
    assert resolve(root, "train.py", "hp", 0, "LR") == (pytest.approx(3e-5), "hp.py", 3, 6, "constant BASE")
    assert resolve(root, "train.py", "hp", 0, "NEG") == (-2, "hp.py", 4, 7, "constant NEG")
    assert resolve(root, "train.py", "hp", 0, "ENV") == (2e-5, "hp.py", 5, 34, "default of environment variable LR")
    assert resolve(root, "train.py", "hp", 0, "STEPS") == (100, "hp.py", 6, 32,
                                                          "default of environment variable STEPS")
    for name in ("TWICE", "NAME", "UNKNOWN", "MISSING"):
        assert resolve(root, "train.py", "hp", 0, name) is None


def test_re_exports_and_module_attributes_across_packages(tmp_path):
    root = project(tmp_path, {
        "pkg/__init__.py": "from .hp import LR as RATE\n",
        "pkg/hp.py": "LR = 3e-5\n",
        "pkg/conf/__init__.py": "",
        "pkg/conf/defaults.py": "from .. import hp\nKL = hp.LR / 10\n",
        "run.py": "",
    })
    assert resolve(root, "run.py", "pkg", 0, "RATE") == (3e-5, "pkg/hp.py", 1, 6, "constant LR")
    assert resolve(root, "run.py", "pkg", 0, "hp", "LR") == (3e-5, "pkg/hp.py", 1, 6, "constant LR")
    assert resolve(root, "run.py", "pkg.conf.defaults", 0, "KL") == (
        pytest.approx(3e-6), "pkg/conf/defaults.py", 2, 6, "constant LR")
    assert resolve(root, "run.py", "pkg", 0, "conf", "defaults", "KL")[:2] == (pytest.approx(3e-6),
                                                                           "pkg/conf/defaults.py")


def test_namespace_packages_without_init(tmp_path):
    root = project(tmp_path, {"configs/hp.py": "LR = 5e-6\n", "train.py": ""})
    assert resolve(root, "train.py", "configs", 0, "hp", "LR") == (5e-6, "configs/hp.py", 1, 6, "constant LR")


def test_dataclass_defaults_inherited_from_a_base_in_another_module(tmp_path):
    root = project(tmp_path, {
        "cfg/__init__.py": "",
        "cfg/base.py": """\
            from dataclasses import dataclass, field
            from ..hp import SHARED

            @dataclass
            class Base:
                learning_rate: float = field(default=2e-5)
                beta: float = SHARED
                required: float
                method = 1.0
                def method(self):
                    pass
        """,
        "cfg/grpo.py": """\
            from dataclasses import dataclass
            from .base import Base

            @dataclass
            class GRPO(Base):
                beta: float = 0.1

            class Child(GRPO):
                pass
        """,
        "hp.py": "SHARED = 0.04\n",
        "train.py": "",
    })
    assert resolve(root, "train.py", "cfg.grpo", 0, "GRPO", "learning_rate") == (
        2e-5, "cfg/base.py", 6, 42, "default of Base.learning_rate")
    assert resolve(root, "train.py", "cfg.grpo", 0, "Child", "learning_rate")[:2] == (2e-5, "cfg/base.py")
    assert resolve(root, "train.py", "cfg.grpo", 0, "Child", "beta") == (
        0.1, "cfg/grpo.py", 6, 19, "default of GRPO.beta")
    assert resolve(root, "train.py", "cfg.base", 0, "Base", "beta") == (0.04, "hp.py", 1, 10, "constant SHARED")
    for name in ("required", "method", "missing"):
        assert resolve(root, "train.py", "cfg.grpo", 0, "GRPO", name) is None


def test_attributes_set_on_self_from_parameters_and_config_objects(tmp_path):
    root = project(tmp_path, {
        "conf.py": """\
            class TrainConfig:
                lr = 1e-6

            class Trainer:
                def __init__(self, config: TrainConfig, clip=0.2):
                    self.lr = config.lr
                    self.clip = clip
                    self.twice = 1
                    self.twice = 2
        """,
        "train.py": "",
    })
    assert resolve(root, "train.py", "conf", 0, "Trainer", "lr") == (1e-6, "conf.py", 2, 10,
                                                                    "default of TrainConfig.lr")
    assert resolve(root, "train.py", "conf", 0, "Trainer", "clip") == (
        0.2, "conf.py", 5, 50, "default of parameter `clip` of __init__()")
    assert resolve(root, "train.py", "conf", 0, "Trainer", "twice") is None


def test_cycles_between_modules_end_in_silence(tmp_path):
    root = project(tmp_path, {
        "a.py": "from b import X\nfrom b import Y as Z\nW = 1e-5\n",
        "b.py": "from a import X\nfrom a import W as Y\n",
        "c.py": "from c import SELF\n",
        "cls.py": "from cls2 import B\nclass A(B):\n    pass\n",
        "cls2.py": "from cls import A\nclass B(A):\n    pass\n",
        "train.py": "",
    })
    assert resolve(root, "train.py", "a", 0, "X") is None
    assert resolve(root, "train.py", "a", 0, "Z") == (1e-5, "a.py", 3, 5, "constant W")
    assert resolve(root, "train.py", "c", 0, "SELF") is None
    assert resolve(root, "train.py", "cls", 0, "A", "lr") is None


def test_missing_and_broken_modules_are_silent(tmp_path):
    root = project(tmp_path, {"broken.py": "LR = (\n", "binary.py": "", "train.py": "",
                              "hp.py": "from missing import LR\nfrom .nowhere import KL\n"})
    (tmp_path / "binary.py").write_bytes(b"LR = 1\n\xff\xfe\n")
    modules.clear_cache()
    assert resolve(root, "train.py", "nowhere", 0, "LR") is None
    assert resolve(root, "train.py", "broken", 0, "LR") is None
    assert resolve(root, "train.py", "binary", 0, "LR") is None
    assert resolve(root, "train.py", "hp", 0, "LR") is None
    assert resolve(root, "train.py", "hp", 0, "KL") is None


def test_columns_count_characters_not_bytes(tmp_path):
    root = project(tmp_path, {"hp.py": "NAME = 'é'; LR = 3e-5\n", "train.py": ""})
    assert resolve(root, "train.py", "hp", 0, "LR") == (3e-5, "hp.py", 1, 18, "constant LR")


def test_dependencies_record_every_module_read_and_a_changed_file_is_read_again(tmp_path):
    root = project(tmp_path, {"pkg/__init__.py": "", "pkg/a.py": "from .b import LR\n", "pkg/b.py": "LR = 1e-5\n",
                              "train.py": ""})
    resolver = Resolver(at(root, "train.py"))
    assert resolver.resolve("pkg.a", 0, ("LR",)).number == 1e-5
    assert sorted(os.path.relpath(p, root) for p in resolver.dependencies) == ["pkg/a.py", "pkg/b.py"]
    again = Resolver(at(root, "train.py"))  # from the per-process memo: the same dependencies
    assert again.resolve("pkg.a", 0, ("LR",)).number == 1e-5
    assert again.dependencies == resolver.dependencies
    (tmp_path / "pkg/b.py").write_text("LR = 2e-6  # changed\n")
    assert Resolver(at(root, "train.py")).resolve("pkg.a", 0, ("LR",)).number == 2e-6


def test_written_is_what_the_runner_needs():
    written = Written(1e-5, "/p/hp.py", 3, 6, 3, 10)
    assert (written.names, written.origin) == ((), "literal")
