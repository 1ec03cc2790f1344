"""The configuration domain: a setting's value after every layer of a run, and where that value is written."""
import textwrap

from rllint.analysis.domains.config import framework_default
from rllint.analysis.facts import NUMBER
from rllint.runner import lint_files
from rllint.settings import Settings

from engine import Engine


def number(engine, code):
    found = engine.value(code)
    return found.facts.get("number"), found.facts.get("origin"), [engine.code(n) for n in found.reason("number")]


def test_argparse_defaults_are_numbers_written_at_the_default_and_strings_go_through_type():
    engine = Engine("""
    import argparse
    parser = argparse.ArgumentParser()
    parser.add_argument("--learning-rate", type=float, default=5e-5)
    parser.add_argument("--temp", dest="temperature", type=float, default="0.7")
    args = parser.parse_args()
    lr = args.learning_rate
    t = args.temperature
    known, rest = parser.parse_known_args()
    again = known.learning_rate
    """)
    assert number(engine, "lr") == (5e-5, "default of --learning_rate", ["5e-5"])
    assert number(engine, "t") == (0.7, "default of --temperature", ['"0.7"'])
    assert number(engine, "again")[0] == 5e-5


def test_two_declarations_of_one_flag_that_disagree_leave_it_unknown():
    engine = Engine("""
    import argparse
    def train_parser():
        parser = argparse.ArgumentParser()
        parser.add_argument("--lr", type=float, default=1e-6)
        return parser.parse_args()
    def sft_parser():
        parser = argparse.ArgumentParser()
        parser.add_argument("--lr", type=float, default=2e-5)
        return parser.parse_args()
    lr = train_parser().lr
    """)
    assert engine.facts("lr", "number") == {"number": None}


def test_dataclass_fields_inherited_field_defaults_and_constructor_arguments():
    engine = Engine("""
    from dataclasses import dataclass, field
    @dataclass
    class Base:
        lr: float = 2e-5
        beta: float = field(default=0.04)
    @dataclass
    class Child(Base):
        group: int = 8
    def main():
        c = Child()
        d = Child(1e-6, beta=0.1)
        a, b, g = c.lr, c.beta, c.group
        x, y = d.lr, d.beta
    """)
    assert number(engine, "a") == (2e-5, "default of Base.lr", ["2e-5"])
    assert number(engine, "b") == (0.04, "default of Base.beta", ["0.04"])
    assert number(engine, "g")[:2] == (8.0, "default of Child.group")
    assert number(engine, "x")[:2] == (1e-6, "literal")
    assert number(engine, "y")[:2] == (0.1, "literal")


def test_environment_defaults_and_module_constants():
    engine = Engine("""
    import os
    LR = 3e-5
    def main():
        env = float(os.environ.get("LR", "2e-5"))
        const = LR
    """)
    assert number(engine, "env") == (2e-5, "default of environment variable LR", ['"2e-5"'])
    assert number(engine, "const") == (3e-5, "constant LR", ["3e-5"])


def test_framework_configs_hold_their_keywords_and_the_framework_default_for_the_rest():
    engine = Engine("""
    from trl import GRPOConfig
    from transformers import HfArgumentParser
    from dataclasses import dataclass
    @dataclass
    class Script:
        lr: float = 4e-5
    config = GRPOConfig(output_dir="out", beta=0.5)
    given = config.beta
    default = config.learning_rate
    changed = config.temperature
    script, grpo = HfArgumentParser((Script, GRPOConfig)).parse_args_into_dataclasses()
    s = script.lr
    g = grpo.learning_rate
    """)
    assert number(engine, "given")[:2] == (0.5, "literal")
    assert number(engine, "default")[:2] == (1e-6, "TRL's default of GRPOConfig.learning_rate")
    assert engine.facts("changed", "number") == {"number": None}  # 0.9 in TRL 0.14-0.17, 1.0 since: no pin
    assert number(engine, "s")[:2] == (4e-5, "default of Script.lr")
    assert number(engine, "g")[0] == 1e-6


def test_a_pinned_release_chooses_the_framework_default(tmp_path):
    (tmp_path / "requirements.txt").write_text("torch\ntrl==0.14.0\n")
    (tmp_path / "pyproject.toml").write_text("")
    path = tmp_path / "train.py"
    engine = Engine("""
    from trl import GRPOConfig
    t = GRPOConfig(output_dir="out").temperature
    """, path=str(path))
    found = engine.value("t")
    assert (found.facts.get("type"), found.facts.get("number")) == (NUMBER, 0.9)
    assert found.facts["origin"] == "TRL's default of GRPOConfig.temperature in 0.14.0"


def test_framework_defaults_follow_a_class_through_its_bases():
    assert framework_default(None, "transformers", "TrainingArguments", "learning_rate").facts["number"] == 5e-5


def _lint(tmp_path, files, select=("ALL",)):
    (tmp_path / "pyproject.toml").write_text("")
    for name, text in files.items():
        (tmp_path / name).write_text(textwrap.dedent(text))
    result = lint_files([str(tmp_path / n) for n in files], Settings(select=list(select)))
    return sorted((d.path.rsplit("/", 1)[-1], d.line, d.code) for d in result.diagnostics if d.code == "RL601")


SCRIPT = """
import argparse
from trl import GRPOConfig, GRPOTrainer
parser = argparse.ArgumentParser()
parser.add_argument("--learning_rate", type=float, default=5e-5)
args = parser.parse_args()
config = GRPOConfig(output_dir="out", learning_rate=args.learning_rate)
GRPOTrainer(model="Qwen/Qwen2.5-0.5B", reward_funcs=[], args=config).train()
"""


def test_a_launch_script_that_sets_the_flag_makes_the_default_no_run_s_value(tmp_path):
    found = _lint(tmp_path, {"train.py": SCRIPT, "run.sh": "python train.py --learning_rate 1e-6\n"})
    assert found == []


def test_a_launch_script_that_leaves_the_flag_keeps_the_default(tmp_path):
    found = _lint(tmp_path, {"train.py": SCRIPT, "run.sh": "python train.py --num_generations 8\n"})
    assert found == [("train.py", 5, "RL601")]


def test_launchers_that_disagree_leave_the_default_unproven(tmp_path):
    files = {"train.py": SCRIPT, "a.sh": "python train.py --learning_rate 1e-6\n", "b.sh": "python train.py\n"}
    assert _lint(tmp_path, files) == []


def test_a_callee_that_holds_one_of_two_functions_or_imported_names_is_unknown_not_a_crash():
    """Class attributes are evaluated now (`optim = Adam if fused else SGD`): a join of two imported names or
    classes keeps the kind but not the object (the primer crashed on 11 files); a call of one of two functions
    returns what either returns."""
    engine = Engine("""
    import torch
    def f():
        return 1
    def g():
        return 2
    class A:
        pass
    class B:
        pass
    class Cfg:
        optim = torch.optim.Adam if FUSED else torch.optim.SGD
    h = f if FUSED else g
    k = A if FUSED else B
    a = h()
    b = k()
    o = Cfg().optim(None, lr=1e-6)
    p = Cfg().optim.step
    """)
    assert engine.facts("a", "type", "number") == {"type": "number", "number": None}  # what either returns
    assert engine.facts("b", "type") == {"type": None}
    assert engine.facts("o", "type") == {"type": None}


def test_a_flag_declared_in_a_helper_and_read_in_main_is_its_default(tmp_path):
    """`args = parse_args()` in `main()`, run under the main guard: the helper's default is read as a constant,
    not by re-entering the helper while `main` is being interpreted (which left it unknown)."""
    script = """
    import argparse
    from trl import GRPOConfig, GRPOTrainer

    def parse_args():
        parser = argparse.ArgumentParser(description="GRPO")
        parser.add_argument("--learning_rate", type=float, default=2e-5)
        return parser.parse_args()

    def main():
        args = parse_args()
        config = GRPOConfig(output_dir="out", learning_rate=args.learning_rate)
        GRPOTrainer(model="Qwen/Qwen2.5-0.5B", reward_funcs=[], args=config).train()

    if __name__ == "__main__":
        main()
    """
    assert _lint(tmp_path, {"train.py": script}) == [("train.py", 7, "RL601")]


def test_configs_of_two_framework_classes_joined_are_unknown_not_a_crash():
    """A helper handed a GRPOConfig by one caller and a DPOConfig by another reads settings of neither
    (the primer crashed on such a helper)."""
    engine = Engine("""
    from trl import DPOConfig, GRPOConfig
    def wrap(args):
        return args.gradient_checkpointing
    wrap(GRPOConfig(output_dir="a"))
    wrap(DPOConfig(output_dir="b"))
    """)
    assert engine.facts("args.gradient_checkpointing", "type", occurrence=0) == {"type": None}


def test_a_field_built_by_a_default_factory_holds_that_class_at_its_defaults():
    engine = Engine("""
    import dataclasses

    @dataclasses.dataclass
    class Decoding:
        temperature: float = 0.6
        top_k: int = 0

    @dataclasses.dataclass
    class Run:
        decoding: Decoding = dataclasses.field(default_factory=Decoding)
        tags: list = dataclasses.field(default_factory=list)

    class Loop:
        def __init__(self):
            self.run = Run()

        def step(self):
            return self.run.decoding.temperature, self.run.tags
    """)
    assert number(engine, "self.run.decoding.temperature") == (0.6, "default of Decoding.temperature", ["0.6"])
    assert engine.facts("self.run.tags", "type") == {"type": None}


def test_settings_a_builder_stores_before_returning_the_config_reach_its_users():
    engine = Engine("""
    from dataclasses import dataclass, field

    @dataclass
    class Decoding:
        temperature: float = 0.6
        top_p: float = 1.0

    @dataclass
    class Run:
        decoding: Decoding = field(default_factory=Decoding)

    def small_gpu():
        run = Run()
        run.decoding.top_p = 0.9
        return run

    def greedy_free():
        run = Run()
        run.decoding.temperature = 1.0
        return run

    kept = small_gpu().decoding.temperature
    changed = greedy_free().decoding.temperature
    nucleus = small_gpu().decoding.top_p
    """)
    assert number(engine, "kept")[:2] == (0.6, "default of Decoding.temperature")
    assert number(engine, "changed")[0] == 1.0
    assert number(engine, "nucleus")[0] == 0.9


def test_a_project_subclass_of_a_framework_config_holds_the_framework_default_nobody_overrides(tmp_path):
    (tmp_path / "requirements.txt").write_text("trl==0.14.0\n")
    (tmp_path / "pyproject.toml").write_text("")
    engine = Engine("""
    import trl

    class RunArgs(trl.GRPOConfig):
        reward_scale: float = 2.0

    class Runner:
        def __init__(self, args: RunArgs):
            self.args = args

        def knobs(self):
            return self.args.temperature, self.args.reward_scale, self.args.not_a_field

    Runner(RunArgs(output_dir="out"))
    """, path=str(tmp_path / "run.py"))
    assert number(engine, "self.args.temperature")[:2] == (0.9, "TRL's default of GRPOConfig.temperature in 0.14.0")
    assert number(engine, "self.args.reward_scale")[:2] == (2.0, "default of RunArgs.reward_scale")
    assert engine.facts("self.args.not_a_field", "type", "place") == {
        "type": None, "place": ("attr", "RunArgs", "not_a_field")}


def test_settings_stored_on_a_config_before_it_is_handed_to_a_constructor_reach_the_constructed_object():
    engine = Engine("""
    from dataclasses import dataclass, field

    @dataclass
    class Decoding:
        budget: int = 256
        temperature: float = 0.6

    @dataclass
    class Run:
        decoding: Decoding = field(default_factory=Decoding)

    class Loop:
        def __init__(self, run):
            self.run = run

        def knobs(self):
            return self.run.decoding.budget, self.run.decoding.temperature

    def main(budget):
        run = Run()
        run.decoding.budget = budget
        return Loop(run)

    main(4096)
    """)
    assert number(engine, "self.run.decoding.budget")[0] == 4096
    assert number(engine, "self.run.decoding.temperature")[:2] == (0.6, "default of Decoding.temperature")


TRAINER_MODULE = """
from dataclasses import dataclass
from trl import PPOConfig, PPOTrainer, AutoModelForCausalLMWithValueHead

@dataclass
class RunConfig:
    checkpoint: str = "sft"
    learning_rate: float = 3e-5

def train(cfg: RunConfig):
    model = AutoModelForCausalLMWithValueHead.from_pretrained(cfg.checkpoint)
    config = PPOConfig(learning_rate=cfg.learning_rate, batch_size=8)
    PPOTrainer(config=config, model=model).train()
"""


def test_a_default_of_this_module_s_config_class_that_a_driver_leaves_is_reported_here(tmp_path):
    """The class reaches the trainer through the driver that imports and builds it: the default is still the one
    written in this file, and it is reported at its line (not lost as 'another module's')."""
    driver = """
    from trainer import RunConfig, train
    train(RunConfig(checkpoint="ckpt"))
    """
    found = _lint(tmp_path, {"trainer.py": TRAINER_MODULE, "driver.py": driver}, select=("RL601",))
    assert ("trainer.py", 8, "RL601") in found
    default = lint_files([str(tmp_path / "trainer.py")], Settings())
    assert [(d.line, d.code) for d in default.diagnostics] == [(8, "RL601")]


def test_a_driver_that_passes_a_small_rate_makes_the_class_default_no_run_s_value(tmp_path):
    driver = """
    from trainer import RunConfig, train
    train(RunConfig(checkpoint="ckpt", learning_rate=1e-6))
    """
    (tmp_path / "pyproject.toml").write_text("")
    for name, text in {"trainer.py": TRAINER_MODULE, "driver.py": driver}.items():
        (tmp_path / name).write_text(textwrap.dedent(text))
    default = lint_files([str(tmp_path / "trainer.py")], Settings())
    assert [d.code for d in default.diagnostics if d.code == "RL601"] == []


def test_a_config_built_from_a_mapping_of_unknown_keys_holds_no_known_default(tmp_path):
    """`RunConfig(**settings["run"])` of a file the engine does not read may set any field: the class default of
    the rate is no run's value; built with keywords that leave it out, the default holds."""
    trainer = TRAINER_MODULE + """
import json

def main(path):
    settings = json.load(open(path))
    train(RunConfig(**settings["run"]))
"""
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "trainer.py").write_text(textwrap.dedent(trainer))
    assert [d.code for d in lint_files([str(tmp_path / "trainer.py")], Settings()).diagnostics] == []
    (tmp_path / "trainer.py").write_text(textwrap.dedent(trainer.replace('**settings["run"]', 'checkpoint=path')))
    assert [(d.line, d.code) for d in lint_files([str(tmp_path / "trainer.py")], Settings()).diagnostics] == [(8, "RL601")]


def test_the_releases_of_an_instance_of_one_of_several_classes_are_not_narrowed():
    """Joined paths give an instance whose class is not known (`Small() if flag else Large()`): the fields it is
    read for narrow no framework's releases (tinker_cookbook cost_estimation.py crashed here)."""
    from rllint.analysis.domains.config import _releases
    from rllint.analysis.facts import INSTANCE, Value

    assert _releases(Value({"type": INSTANCE}), ["rate"]) is None


_GETATTR = """
    from dataclasses import dataclass, field

    @dataclass
    class Decoding:
        temperature: float = 0.6

    @dataclass
    class Run:
        decoding: Decoding = field(default_factory=Decoding)

    class Sampler:
        def __init__(self, run):
            self.run = run

        def settings(self):
            return getattr(self.run.decoding, "temperature", 1.0), getattr(self.run, "top_p", 0.9)

    Sampler(Run()).settings()
"""


def test_getattr_with_a_default_reads_the_field_a_nested_config_class_declares():
    engine = Engine(_GETATTR)
    assert number(engine, 'getattr(self.run.decoding, "temperature", 1.0)')[:2] == (
        0.6, "default of Decoding.temperature")


def test_getattr_of_an_attribute_no_class_of_the_project_declares_or_stores_is_its_default():
    engine = Engine(_GETATTR)
    assert number(engine, 'getattr(self.run, "top_p", 0.9)')[0] == 0.9
    # an attribute of that name assigned anywhere in the module, or a name set out of sight: not known
    stored = Engine(textwrap.dedent(_GETATTR) + "\nrun = Run()\nrun.top_p = 1.0\n")
    assert stored.facts('getattr(self.run, "top_p", 0.9)', "type", "number") == {"type": None, "number": None}
    hidden = Engine(textwrap.dedent(_GETATTR).replace("Sampler(Run()).settings()", textwrap.dedent("""
        def build(overrides):
            run = Run()
            for key, item in overrides.items():
                setattr(run, key, item)
            return run

        Sampler(build({})).settings()
    """)))
    assert hidden.facts('getattr(self.run, "top_p", 0.9)', "number") == {"number": None}


def test_getattr_of_a_class_with_a_base_out_of_sight_is_not_its_default():
    engine = Engine("""
    import argparse

    class Options(argparse.Namespace):
        pass

    def settings(options):
        return getattr(options, "temperature", 0.7)

    settings(Options())
    """)
    assert engine.facts('getattr(options, "temperature", 0.7)', "number") == {"number": None}


def test_getattr_reads_what_another_module_stored_on_the_config_it_hands_over(tmp_path):
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "settings.py").write_text(textwrap.dedent("""
        from dataclasses import dataclass, field

        @dataclass
        class Decoding:
            temperature: float = 1.0

        @dataclass
        class Run:
            decoding: Decoding = field(default_factory=Decoding)
    """))
    (tmp_path / "main.py").write_text(textwrap.dedent("""
        from settings import Run
        from worker import Worker

        def main():
            run = Run()
            run.decoding.temperature = 0.6
            Worker(run).go()
    """))
    worker = textwrap.dedent("""
        class Worker:
            def __init__(self, run):
                self.run = run

            def go(self):
                return getattr(self.run.decoding, "temperature", 1.0)
    """)
    (tmp_path / "worker.py").write_text(worker)
    engine = Engine(worker, path=str(tmp_path / "worker.py"))
    assert number(engine, 'getattr(self.run.decoding, "temperature", 1.0)')[0] == 0.6


def test_max_and_min_over_numbers_are_numbers_known_only_when_every_operand_is():
    engine = Engine("""
    import os
    from dataclasses import dataclass

    @dataclass
    class Sampling:
        temperature: float = 0.8

    def known(cfg):
        return max(0.7, float(cfg.temperature)), min(cfg.temperature, 0.5)

    def unknown(t):
        return max(0.7, float(t))

    known(Sampling())
    unknown(float(os.environ["T"]))
    """)
    assert number(engine, "max(0.7, float(cfg.temperature))")[0] == 0.8
    assert number(engine, "min(cfg.temperature, 0.5)")[0] == 0.5
    # at least 0.7, maybe 1.0: a number whose value is not known
    assert engine.facts("max(0.7, float(t))", "type", "number") == {"type": NUMBER, "number": None}
