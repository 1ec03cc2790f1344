"""RL606: a key of a settings file the code loads that no code path reads (a KL weight written under the LoRA
section, which the code reads only the LoRA keys of), and the engine facts it stands on: which file a launch
names through a folder the script computes, and which keys of a loaded dict the code reads."""
import textwrap

from rllint.runner import lint_files
from rllint.settings import Settings

from engine import Engine

TRAIN = """
import argparse
import json
import yaml
from peft import LoraConfig
from trl import GRPOConfig, GRPOTrainer


def load_config(path):
    with open(path) as f:
        return yaml.safe_load(f)


def prepare(cfg, tokenizer):
    data = cfg["dataset"]
    return tokenizer(data["name"])


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--config_path", required=True)
    args = parser.parse_args()
    cfg = load_config(args.config_path)
    prepare(cfg, None)
    train = cfg["training"]
    lora = cfg.get("lora", {})
    peft = LoraConfig(r=lora.get("r", 64), lora_alpha=lora["lora_alpha"])
    config = GRPOConfig(output_dir="out", learning_rate=train["learning_rate"],
                        num_generations=cfg["grpo"]["num_generations"])
    with open("run.json", "w") as out:
        json.dump(cfg, out)
    GRPOTrainer(model="Qwen/Qwen2.5-0.5B", reward_funcs=[], args=config, peft_config=peft).train()
"""
SETTINGS = """\
dataset:
  name: gsm8k
training:
  learning_rate: 1.0e-5
grpo:
  num_generations: 8
lora:
  r: 16
  lora_alpha: 32
  kl_coeff: 0.05
evaluation:
  temperature: 0.0
"""
LAUNCH = """\
SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$SCRIPT_DIR/.." && pwd)"
CONFIG="$ROOT/configs/run.yaml"
python "$SCRIPT_DIR/train.py" --config_path "$CONFIG"
"""


def _lint(tmp_path, files):
    (tmp_path / "pyproject.toml").write_text("")
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(textwrap.dedent(text))
    result = lint_files([str(tmp_path / n) for n in files if n.endswith(".py")], Settings(select=["RL606"]))
    return sorted((d.path.rsplit("/", 1)[-1], d.line, d.message) for d in result.diagnostics)


def _project(**changes):
    files = {"scripts/train.py": TRAIN, "configs/run.yaml": SETTINGS, "scripts/run.sh": LAUNCH}
    files.update(changes)
    return files


def test_a_kl_weight_under_a_section_the_code_reads_other_keys_of_is_reported_where_the_file_writes_it(tmp_path):
    assert _lint(tmp_path, _project()) == [
        ("run.yaml", 10, "`lora.kl_coeff` is set to 0.05 in configs/run.yaml but no code path reads it: the run "
                         "silently uses another value (used in {})".format(tmp_path / "scripts/train.py"))]


def test_a_key_read_under_its_own_name_or_used_whole_is_read(tmp_path):
    # read, then handed on under another name
    read = TRAIN.replace('lora_alpha=lora["lora_alpha"])', 'lora_alpha=lora["lora_alpha"])\n    beta = '
                         'lora["kl_coeff"]')
    assert _lint(tmp_path, _project(**{"scripts/train.py": read})) == []
    # the section spread into a config: every key of it reaches the trainer
    spread = TRAIN.replace('peft = LoraConfig(r=lora.get("r", 64), lora_alpha=lora["lora_alpha"])',
                           'peft = LoraConfig(**lora)')
    assert _lint(tmp_path, _project(**{"scripts/train.py": spread})) == []
    # the whole file handed to a helper of another module, out of sight
    handed = TRAIN.replace("    prepare(cfg, None)", "    from helpers import setup\n    setup(cfg)")
    assert _lint(tmp_path, _project(**{"scripts/train.py": handed, "scripts/helpers.py": "def setup(c):\n"
                                       "    return c\n"})) == []


def test_a_stale_duplicate_of_a_setting_the_code_reads_under_another_key_is_not_reported(tmp_path):
    settings = SETTINGS.replace("  learning_rate: 1.0e-5\n", "  learning_rate: 1.0e-5\n  max_completion_length: 512\n")
    settings += "model:\n  generation_max_length: 256\n"
    reads = TRAIN.replace('learning_rate=train["learning_rate"],', 'learning_rate=train["learning_rate"], '
                          'max_completion_length=train["max_completion_length"],')
    found = _lint(tmp_path, _project(**{"configs/run.yaml": settings, "scripts/train.py": reads}))
    assert [(name, line) for name, line, _ in found] == [("run.yaml", 11)]  # the KL weight; not the length
    unread = _lint(tmp_path, _project(**{"configs/run.yaml": settings}))
    assert [(name, line) for name, line, _ in unread] == [("run.yaml", 5), ("run.yaml", 11), ("run.yaml", 15)]


def test_a_key_some_other_code_of_the_project_reads_by_name_is_not_reported(tmp_path):
    other = "def kl(settings):\n    return settings['kl_coeff']\n"
    assert _lint(tmp_path, _project(**{"scripts/other.py": other})) == []


def test_a_file_the_launch_does_not_name_or_a_helper_that_changes_the_dict_says_nothing(tmp_path):
    assert _lint(tmp_path, _project(**{"scripts/run.sh": 'python "$SCRIPT_DIR/train.py" --config_path "$X"\n'})) == []
    changes = TRAIN.replace('    return tokenizer(data["name"])', '    data["name"] = "math"\n    return data')
    assert _lint(tmp_path, _project(**{"scripts/train.py": changes})) == []


def test_a_helper_that_only_reads_the_settings_leaves_their_keys_known_and_get_reads_one(tmp_path):
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "run.yaml").write_text("data:\n  name: gsm8k\n  size: 100\nlr: 1.0e-5\n")
    path = tmp_path / "train.py"
    engine = Engine("""
        import yaml

        def describe(cfg):
            part = cfg["data"]
            print(part["name"], len(cfg))

        def change(cfg):
            cfg["lr"] = 0.1

        def peek(cfg):
            return cfg["lr"] if cfg.get("data") else 0.0

        def section(cfg):
            alias = cfg
            return alias["data"]

        with open("run.yaml") as f:
            settings = yaml.safe_load(f)
        describe(settings)
        kept = settings.get("lr", 1.0)
        absent = settings.get("beta", 0.5)
        peek(settings)
        peeked = settings.get("lr", 1.0)
        section(settings)
        handed = settings.get("lr", 1.0)
        change(settings)
        lost = settings.get("lr", 1.0)
        missing = settings.get("beta", 0.5)
    """, str(path))
    assert engine.facts("kept", "number") == {"number": 1e-05}
    assert engine.facts("absent", "number") == {"number": 0.5}  # every key of the file is known: the default
    assert engine.facts("peeked", "number") == {"number": 1e-05}  # a number handed back changes nothing
    assert engine.facts("handed", "number") == {"number": None}  # a mapping of it handed back may change
    assert engine.facts("lost", "number") == {"number": None}
    assert engine.facts("missing", "number") == {"number": None}  # the file's keys are no longer all known
