"""The project index (rllint/index.py): per-module summaries, and the rules that ask it across files."""
import ast
import textwrap

from rllint import index
from rllint.cache import ResultCache
from rllint.index import summarize
from rllint.runner import lint_files
from rllint.settings import Settings


def build(root, files):
    (root / "pyproject.toml").write_text("[project]\nname = 'demo'\n")
    for relative, source in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(source))
    index.clear_cache()


def found(root, select, *paths, settings=None, cache=None):
    settings = settings or Settings(select=select, root=root)
    result = lint_files([str(root / p) for p in paths], settings, isolated=False, cache=cache)
    return sorted((str(d.path).rsplit("/", 1)[-1], d.line, d.code) for d in result.diagnostics)


# ---- summaries ------------------------------------------------------------------------------------------

def test_function_facts():
    tree = ast.parse(textwrap.dedent("""
        import torch
        from torch.nn import functional as nnf

        @torch.no_grad()
        def frozen_scores(lm, seq, temperature=1.0):
            h = lm.forward(input_ids=seq).logits
            h /= temperature
            return nnf.log_softmax(h, -1)

        def partly(lm, seq, *, temperature=0.8):
            with torch.inference_mode():
                lm(seq)
            out = lm(seq)
            return -nnf.cross_entropy(out.logits.div(temperature), seq, reduction="none")

        def summed(lm, seq):
            return nnf.cross_entropy(lm(seq).logits, seq)

        def plain(x, temperature=None):
            return x * temperature
    """))
    functions = summarize(tree).functions
    frozen = functions["frozen_scores"]
    assert (frozen.runs, frozen.no_grad, frozen.on_tokens, frozen.logprobs, frozen.temperature, frozen.divides) == \
        (("lm",), True, True, True, 1.0, True)
    partly = functions["partly"]
    assert (partly.params, partly.runs, partly.no_grad, partly.logprobs, partly.temperature, partly.divides) == \
        (("lm", "seq", "temperature"), ("lm",), False, True, 0.8, True)
    summed = functions["summed"]
    assert (summed.runs, summed.no_grad, summed.logprobs) == (("lm",), False, False)  # a mean loss, not log-probs
    plain = functions["plain"]
    assert (plain.runs, plain.temperature, plain.divides, plain.logprobs) == ((), None, False, False)


def test_module_facts():
    summary = summarize(ast.parse(textwrap.dedent("""
        from .settings import Knobs as K
        import pkg.tools as tools
        from vllm import SamplingParams

        def launch(opts, extra):
            SamplingParams(temperature=0.9, top_p=1.0)
            SamplingParams(temperature=opts.temp)
            run(**vars(opts))
            return extra["warmup"], tools.go(extra)
    """)))
    assert ("K", "settings", 1, "Knobs") in summary.imports and ("tools", "pkg.tools", 0, "") in summary.imports
    assert summary.samples == (0.9, None)
    assert summary.whole == {"opts"}
    assert {"temp", "warmup", "go"} <= summary.reads and "opts" not in summary.reads
    assert {"run", "go", "SamplingParams", "vars"} <= summary.called


def test_a_loss_helper_that_backpropagates_its_log_probs_and_a_module_s_own_sampler_named_generate():
    summary = summarize(ast.parse(textwrap.dedent("""
        import torch.nn.functional as F
        from vllm import SamplingParams

        def reinforce(model, ids, adv, temperature=1.0):
            logps = F.log_softmax(model(ids).logits / temperature, dim=-1)
            (-(logps.sum(-1) * adv)).mean().backward()

        def logged(model, ids, temperature=1.0):
            print(F.log_softmax(model(ids).logits / temperature, dim=-1).mean())

        def generate(model, ids, temperature=0.0):
            return ids

        def main(model, ids):
            generate(model, ids, temperature=0.6)
            model.generate(ids, temperature=0.7)
            model.generate(ids, do_sample=True, temperature=0.8)
            SamplingParams(temperature=0.9)
    """)))
    assert summary.functions["reinforce"].logprobs and not summary.functions["logged"].logprobs
    # the module's own `generate` samples where its body does; whether a method of an object samples, only the
    # engine can tell (None: it follows the module) unless the call turns sampling on; a sampling library's settings
    # are read here
    assert sorted(summary.samples, key=repr) == [0.8, 0.9, None]


# ---- RL505 and RL502 through a helper of another module ---------------------------------------------------

SCORING = """\
    import torch
    import torch.nn.functional as F


    @torch.inference_mode()
    def frozen_token_logps(lm, seq, attn):
        out = lm(input_ids=seq, attention_mask=attn).logits[:, :-1]
        return F.log_softmax(out, dim=-1).gather(-1, seq[:, 1:, None]).squeeze(-1)


    def token_logps(lm, seq, attn):
        out = lm(input_ids=seq, attention_mask=attn).logits[:, :-1]
        return F.log_softmax(out, dim=-1).gather(-1, seq[:, 1:, None]).squeeze(-1)
"""

STEP = """\
    import copy
    import torch
    from transformers import AutoModelForCausalLM
    from lib import scoring
    from lib.scoring import token_logps

    actor = AutoModelForCausalLM.from_pretrained("gpt2")
    ref_model = copy.deepcopy(actor)
    ref_model.requires_grad_(False)
    optimizer = torch.optim.AdamW(actor.parameters(), lr=1e-6)


    def update(seq, attn, adv, old):
        new = {policy_call}
        ref = {ref_call}
        ratio = torch.exp(new - old)
        objective = -(ratio * adv).mean() + 0.05 * (new - ref).mean()
        objective.backward()
        optimizer.step()
"""


def step(policy_call, ref_call):
    return {"lib/__init__.py": "", "lib/scoring.py": SCORING,
            "step.py": STEP.format(policy_call=policy_call, ref_call=ref_call)}


def test_rl505_sees_a_policy_helper_of_another_module_that_runs_under_no_grad(tmp_path):
    build(tmp_path, step("scoring.frozen_token_logps(actor, seq, attn)",
                         "scoring.frozen_token_logps(ref_model, seq, attn)"))
    assert found(tmp_path, ["RL505", "RL502"], "step.py") == [("step.py", 14, "RL505")]


def test_rl505_silent_when_the_helper_keeps_gradient(tmp_path):
    build(tmp_path, step("token_logps(actor, seq, attn)", "scoring.frozen_token_logps(ref_model, seq, attn)"))
    assert found(tmp_path, ["RL505", "RL502"], "step.py", "lib/scoring.py") == []


def test_rl502_follows_a_reference_forward_into_a_helper_of_another_module(tmp_path):
    build(tmp_path, step("token_logps(actor, seq, attn)", "token_logps(ref_model, seq, attn)"))
    assert found(tmp_path, ["RL505", "RL502"], "step.py") == [("step.py", 15, "RL502")]
    with_no_grad = STEP.format(policy_call="token_logps(actor, seq, attn)", ref_call="old").replace(
        "        ref = old\n", "        with torch.no_grad():\n            ref = token_logps(ref_model, seq, attn)\n")
    build(tmp_path, {"step.py": with_no_grad})
    assert found(tmp_path, ["RL505", "RL502"], "step.py") == []


def test_rl502_leaves_a_helper_to_the_modules_that_call_it(tmp_path):
    """A helper whose model parameter is named as a reference: the model it runs is out of sight when the
    helper is linted alone, and its callers elsewhere decide."""
    helper = """\
        import torch.nn.functional as F

        def reference_logps(ref_model, seq):
            return F.log_softmax(ref_model(input_ids=seq).logits, dim=-1)
    """
    caller = """\
        import torch
        from lib.refs import reference_logps

        def kl_term(frozen, seq):
            with torch.no_grad():
                return reference_logps(frozen, seq)
    """
    build(tmp_path, {"lib/__init__.py": "", "lib/refs.py": helper})
    alone = found(tmp_path, ["RL502"], "lib/refs.py", settings=_always(tmp_path, "RL502"))
    assert alone == []
    build(tmp_path, {"kl.py": caller})
    assert found(tmp_path, ["RL502"], "lib/refs.py", settings=_always(tmp_path, "RL502")) == []


def _always(root, code):
    return Settings(select=[code], root=root, options={"rl-context": "always"})


# ---- RL309 across modules ------------------------------------------------------------------------------

LOGPS = """\
    import torch
    import torch.nn.functional as F


    def scaled_logps(net, seq, temperature=1.0):
        z = net(seq).logits
        z = z / temperature
        return F.log_softmax(z, dim=-1)


    def raw_logps(net, seq):
        z = net(seq).logits
        return -F.cross_entropy(z.transpose(1, 2), seq, reduction="none")
"""

ROLLOUT = """\
    from vllm import SamplingParams
    from shared.logps import scaled_logps, raw_logps

    SAMPLING = SamplingParams(temperature={temperature}, max_tokens=256)


    def rescore(net, seq):
        return {call}
"""


def rl309(tmp_path, temperature, call, *paths):
    build(tmp_path, {"shared/__init__.py": "", "shared/logps.py": LOGPS,
                     "rollout.py": ROLLOUT.format(temperature=temperature, call=call)})
    return found(tmp_path, ["RL309"], *paths)


def test_rl309_helper_with_temperature_one_called_without_it(tmp_path):
    assert rl309(tmp_path, 0.7, "scaled_logps(net, seq)", "rollout.py") == [("rollout.py", 8, "RL309")]


def test_rl309_helper_given_the_temperature_is_silent(tmp_path):
    assert rl309(tmp_path, 0.7, "scaled_logps(net, seq, temperature=0.7)", "rollout.py") == []
    assert rl309(tmp_path, 0.7, "scaled_logps(net, seq, 0.7)", "rollout.py") == []
    assert rl309(tmp_path, 1.0, "scaled_logps(net, seq)", "rollout.py") == []  # sampled at 1: nothing to match


def test_rl309_log_probs_at_one_in_the_module_a_sampler_at_another_temperature_imports(tmp_path):
    assert rl309(tmp_path, 0.7, "raw_logps(net, seq)", "shared/logps.py") == [("logps.py", 13, "RL309")]


def test_rl309_across_modules_silent_when_the_evidence_is_mixed(tmp_path):
    mixed = ROLLOUT + "\n\nEVAL = SamplingParams(temperature=1.0)\n"
    build(tmp_path, {"shared/__init__.py": "", "shared/logps.py": LOGPS,
                     "rollout.py": mixed.format(temperature=0.7, call="raw_logps(net, seq)")})
    assert found(tmp_path, ["RL309"], "shared/logps.py") == []
    unknown = ROLLOUT.format(temperature="args.temperature", call="raw_logps(net, seq)")
    build(tmp_path, {"rollout.py": unknown})
    assert found(tmp_path, ["RL309"], "shared/logps.py") == []
    # a module that samples nowhere near: not imported by, nor importing, the log-prob module
    build(tmp_path, {"rollout.py": "from vllm import SamplingParams\nP = SamplingParams(temperature=0.7)\n"})
    assert found(tmp_path, ["RL309"], "shared/logps.py") == []


def test_rl309_negated_token_cross_entropy_in_one_file():
    from rllint.runner import lint_text
    source = textwrap.dedent("""
        import torch.nn.functional as F
        from transformers import AutoModelForCausalLM

        def rollout_and_score(prompt_ids):
            model = AutoModelForCausalLM.from_pretrained("gpt2")
            seq = model.generate(prompt_ids, do_sample=True, temperature=0.8)
            logits = model(seq).logits
            per_token = -F.cross_entropy(logits.transpose(1, 2), seq, reduction="none")
            scaled = -F.cross_entropy((logits / 0.8).transpose(1, 2), seq, reduction="none")
            mean_nll = F.cross_entropy(logits.transpose(1, 2), seq)
            return per_token, scaled, mean_nll
    """)
    result = lint_text(source, "sampler.py", Settings(select=["RL309"]))
    assert [(d.line, d.code) for d in result.diagnostics] == [(9, "RL309")]


# ---- RL606 project-wide ----------------------------------------------------------------------------------

KNOBS = """\
    from dataclasses import dataclass


    @dataclass
    class Knobs:
        actor_lr: float = 1e-6
        kl_weight: float = 0.02
        rollouts_per_prompt: int = 8
"""


def rl606(tmp_path, trainer):
    build(tmp_path, {"knobs.py": KNOBS, "trainer.py": trainer})
    return found(tmp_path, ["RL606"], "knobs.py", settings=_always(tmp_path, "RL606"))


def test_rl606_a_field_no_module_reads(tmp_path):
    trainer = """\
        from knobs import Knobs

        def fit(k: Knobs):
            return k.actor_lr, k.rollouts_per_prompt
    """
    assert rl606(tmp_path, trainer) == [("knobs.py", 7, "RL606")]


def test_rl606_project_wide_look_alikes(tmp_path):
    chained = """\
        class Runner:
            def __init__(self, setup):
                self.setup = setup

            def fit(self):
                return self.setup.knobs.actor_lr, self.setup.knobs.kl_weight, self.setup.knobs.rollouts_per_prompt
    """
    assert rl606(tmp_path, chained) == []
    forwarded = """\
        from knobs import Knobs

        def fit(k: Knobs):
            launch(k.actor_lr, **vars(k))
    """
    assert rl606(tmp_path, forwarded) == []  # handed over whole: read where the index cannot follow
    by_key = """\
        def fit(cfg):
            return cfg["actor_lr"], getattr(cfg, "kl_weight"), cfg.rollouts_per_prompt
    """
    assert rl606(tmp_path, by_key) == []
    unused_class = """\
        def fit(model):
            return model.train()
    """
    assert rl606(tmp_path, unused_class) == []  # nothing of it is read anywhere: not consumed, not judged


def test_rl606_no_index_without_cross_module_values(tmp_path):
    build(tmp_path, {"knobs.py": KNOBS, "trainer.py": "def fit(k):\n    return k.actor_lr\n"})
    settings = Settings(select=["RL606"], root=tmp_path, options={"rl-context": "always", "cross-module-values": False})
    assert found(tmp_path, ["RL606"], "knobs.py", settings=settings) == []


# ---- the cache -----------------------------------------------------------------------------------------

def test_a_cached_result_depends_on_the_summaries_it_consulted(tmp_path):
    build(tmp_path, step("scoring.frozen_token_logps(actor, seq, attn)", "old"))
    cache_dir = tmp_path / ".cache"
    settings = Settings(select=["RL505"], root=tmp_path)
    assert found(tmp_path, None, "step.py", settings=settings, cache=ResultCache(settings, cache_dir)) == \
        [("step.py", 14, "RL505")]
    (tmp_path / "lib" / "scoring.py").write_text(textwrap.dedent(SCORING).replace("@torch.inference_mode()\n", ""))
    index.clear_cache()
    assert found(tmp_path, None, "step.py", settings=settings, cache=ResultCache(settings, cache_dir)) == []


def test_rl606_readers_that_do_not_import_the_declaring_module_are_no_evidence(tmp_path):
    unrelated = """\
        def fit(k):
            return k.actor_lr, k.rollouts_per_prompt
    """
    assert rl606(tmp_path, unrelated) == []


# ---- a pre-commit of the hyperparameter module alone -----------------------------------------------------

SETTINGS_MODULE = """\
    \"\"\"Numbers of the run.\"\"\"
    STEP_SIZE = 4e-5
    KL_PENALTY = 0.8
    RATIO_CLIP = 0.02
    SAMPLES = 1
"""

LAUNCH = """\
    import torch
    from trl import {config}, {trainer}
    from conf import numbers as n

    torch.optim.SGD([torch.zeros(1)], lr=0.5)  # a finding of this file, not of numbers.py
    args = {config}(output_dir="out", learning_rate=n.STEP_SIZE, beta=n.KL_PENALTY, epsilon=n.RATIO_CLIP,
                    num_generations=n.SAMPLES)
    {trainer}(model="m", args=args, reward_funcs=[len], train_dataset=[]).train()
"""


def launch(tmp_path, config="GRPOConfig", trainer="GRPOTrainer"):
    build(tmp_path, {"conf/__init__.py": "", "conf/numbers.py": SETTINGS_MODULE,
                     "launch.py": LAUNCH.format(config=config, trainer=trainer)})


def test_linting_the_hyperparameter_module_alone_reports_what_its_importers_use(tmp_path):
    launch(tmp_path)
    select = ["RL601", "RL602", "RL603", "RL604"]
    expected = [("numbers.py", 2, "RL601"), ("numbers.py", 3, "RL602"), ("numbers.py", 4, "RL603"),
                ("numbers.py", 5, "RL604")]
    assert found(tmp_path, select, "conf/numbers.py") == expected
    assert found(tmp_path, select, "conf/numbers.py", "launch.py") == expected  # once, from launch.py itself
    result = lint_files([str(tmp_path / "conf" / "numbers.py")], Settings(select=["RL601"], root=tmp_path),
                        isolated=False)
    assert "line 6 of" in result.diagnostics[0].message and "launch.py" in result.diagnostics[0].message


def test_the_hyperparameter_module_alone_look_alikes(tmp_path):
    select = ["RL601", "RL602", "RL603", "RL604"]
    launch(tmp_path, config="SFTConfig", trainer="SFTTrainer")  # an SFT run: its numbers are not RL's
    assert found(tmp_path, select, "conf/numbers.py") == []
    launch(tmp_path)
    off = Settings(select=select, root=tmp_path, options={"cross-module-values": False})
    assert found(tmp_path, select, "conf/numbers.py", settings=off) == []
    (tmp_path / "launch.py").write_text(textwrap.dedent(LAUNCH.format(config="GRPOConfig", trainer="GRPOTrainer"))
                                        .replace("from conf import numbers as n", "import numbers as n"))
    index.clear_cache()
    assert found(tmp_path, select, "conf/numbers.py") == []  # the standard library's `numbers`, not ours


def test_a_result_depends_only_on_the_files_its_answers_came_from(tmp_path):
    from rllint.runner import lint_bytes
    build(tmp_path, {"knobs.py": KNOBS, "trainer.py": "from knobs import Knobs\n\ndef fit(k: Knobs):\n"
                                                      "    return k.actor_lr, k.rollouts_per_prompt\n",
                     "unrelated.py": "def helper(x):\n    return x.shape\n"})
    path = tmp_path / "knobs.py"
    result = lint_bytes(path.read_bytes(), str(path), _always(tmp_path, "RL606"))
    assert [d.line for d in result.diagnostics] == [7]
    assert str(tmp_path / "trainer.py") in result.dependencies
    assert str(tmp_path / "unrelated.py") not in result.dependencies


def test_rl309_helper_of_the_same_module_at_its_default_temperature():
    from rllint.runner import lint_text
    source = textwrap.dedent("""
        import torch
        from transformers import AutoModelForCausalLM

        def token_logprobs(lm, seq, temperature=1.0):
            return torch.log_softmax(lm(seq).logits / temperature, dim=-1)

        def sample_then_score(prompt, lm=AutoModelForCausalLM.from_pretrained("gpt2")):
            seq = lm.generate(prompt, do_sample=True, temperature=1.2)
            return token_logprobs(lm, seq), token_logprobs(lm, seq, temperature=1.2), token_logprobs(lm, seq, 1.2)
    """)
    result = lint_text(source, "loop.py", Settings(select=["RL309"]))
    assert [(d.line, d.column, d.code) for d in result.diagnostics] == [(10, 12, "RL309")]
    no_divide = source.replace("lm(seq).logits / temperature", "lm(seq).logits")
    assert [d.line for d in lint_text(no_divide, "loop.py", Settings(select=["RL309"])).diagnostics] == [6]


def test_rl309_across_modules_only_functions_the_sampling_module_calls(tmp_path):
    """A reference server next to the sampler: its log-probs, in a `__main__` block, are not the rollouts'."""
    server = """\
        import torch

        if __name__ == "__main__":
            ref = torch.load("ref.pt")

            def raw_logps(seq):
                return ref(seq).logits.log_softmax(-1)
    """
    sampler = """\
        from vllm import SamplingParams
        from server import raw_logps

        PARAMS = SamplingParams(temperature=0.8)
        GREEDY = SamplingParams(temperature=0)
    """
    build(tmp_path, {"server.py": server, "sampler.py": sampler})
    assert found(tmp_path, ["RL309"], "server.py") == []


# ---- who imports a module: words first, then the import statements naming it -----------------------------

def test_importers_are_found_by_their_import_statements(tmp_path):
    build(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/sampling/__init__.py": "",
        "pkg/sampling/util.py": "TEMPERATURE = 0.7\n",
        "pkg/sampling/run.py": "from .util import TEMPERATURE\n",  # relative, inside the package
        "pkg/train.py": "from pkg.sampling.util import TEMPERATURE\n",  # absolute, names the package
        "pkg/other/__init__.py": "",
        "pkg/other/util.py": "def helper():\n    return 1\n",
        "pkg/other/use.py": "from .util import helper\n",  # another package's `util`
        "pkg/doc.py": '"""The sampling util of pkg; imports nothing."""\nx = 1\n',
        "pkg/both.py": "from pkg.sampling import (\n    util,\n)\n",  # a parenthesized statement
    })
    target = str(tmp_path / "pkg" / "sampling" / "util.py")
    files = [str(p) for p in sorted(tmp_path.rglob("*.py"))]
    assert sorted(p.rsplit("pkg/", 1)[1] for p in files if index._imports(p, target)) == \
        ["both.py", "sampling/run.py", "train.py"]


def test_only_a_module_that_writes_settings_has_its_importers_linted(tmp_path):
    build(tmp_path, {
        "numbers.py": "STEP = 4e-5\n",
        "helpers.py": "def step(x):\n    return x * 2\n",
        "fields.py": "class Knobs:\n    lr: float = 3e-4\n\n    def scaled(self):\n        return self.lr * 2\n",
        "losses.py": "EPS = 1e-6\n\ndef clip(x):\n    return x.clamp(min=EPS)\n",  # code with a constant
        "launch.py": "from numbers import STEP\nfrom helpers import step\nfrom fields import Knobs\n"
                     "from losses import clip\n",
    })
    settings = Settings(root=tmp_path)
    for name, linted in (("numbers.py", ["launch.py"]), ("fields.py", ["launch.py"]), ("helpers.py", []),
                         ("losses.py", [])):
        assert [p.rsplit("/", 1)[1] for p in index.importers_outside([str(tmp_path / name)], settings)] == linted


# ---- the project's bounds: a walk that ends wherever rllint is run ----------------------------------------

def test_the_project_is_never_the_filesystem_root_nor_the_home_folder(tmp_path, monkeypatch):
    home = tmp_path / "home"
    monkeypatch.setenv("HOME", str(home))
    (home / "proj").mkdir(parents=True)
    build(home / "proj", {"src/train.py": "x = 1\n"})  # proj/pyproject.toml
    (home / ".git").mkdir()  # a repository of dotfiles
    (home / "scratch" / "deep").mkdir(parents=True)
    (home / "loose.py").write_text("x = 1\n")
    train, scratch = str(home / "proj" / "src" / "train.py"), str(home / "scratch" / "deep" / "x.py")
    for cwd in ("/", home):
        monkeypatch.chdir(cwd)
        assert index.project_root(train) == str(home / "proj")  # the marker, not the working folder
        assert index.project_root(scratch) == str(home / "scratch" / "deep")  # not home's .git
    monkeypatch.chdir(home / "proj")
    assert index.project_root(train) == str(home / "proj")
    assert index.project_root(str(home / "loose.py")) == str(home)
    assert index.project_files(str(home), Settings(root=home)) == ()  # never walked
    assert index.project_files("/", Settings(root=home)) == ()


def test_linting_a_file_from_the_filesystem_root_walks_its_project_only(tmp_path, monkeypatch):
    from rllint import files

    build(tmp_path, {"knobs.py": KNOBS, "trainer.py": "from knobs import Knobs\n\ndef fit(k: Knobs):\n"
                                                      "    return k.actor_lr, k.rollouts_per_prompt\n"})
    walked = []
    walk = files.discover_bounded
    monkeypatch.setattr(files, "discover_bounded",
                        lambda root, *rest, **options: walked.append(root) or walk(root, *rest, **options))
    monkeypatch.chdir("/")
    result = lint_files([str(tmp_path / "knobs.py")], _always(tmp_path, "RL606"), isolated=False)
    assert [(d.line, d.code) for d in result.diagnostics] == [(7, "RL606")]
    assert walked == [str(tmp_path)] and result.notes == []


def test_a_project_walk_stops_at_its_bound_and_says_so(tmp_path, monkeypatch):
    from click.testing import CliRunner

    from rllint.cli import main

    trainer = "from knobs import Knobs\n\ndef fit(k: Knobs):\n    return k.actor_lr, k.rollouts_per_prompt\n"
    build(tmp_path, {"knobs.py": KNOBS, **{f"filler/f{i}.py": "x = 1\n" for i in range(30)}, "aa/trainer.py": trainer})
    (tmp_path / "pyproject.toml").write_text('[tool.rllint]\nselect = ["RL606"]\nrl-context = "always"\n')
    monkeypatch.setattr(index, "_MAX_WALKED", 10)
    monkeypatch.chdir(tmp_path)
    assert len(index.project_files(str(tmp_path), Settings(root=tmp_path))) < 10
    assert "holds more than 10 files and folders" in index.project_note(str(tmp_path))
    index.clear_cache()
    outcome = CliRunner().invoke(main, ["--no-cache", "knobs.py"])
    # the module that reads the fields was beyond the bound: the class is not judged, and the user is told why
    assert outcome.stdout.count("RL606") == 0
    assert f"rllint: warning: project index: {tmp_path} holds more than 10 files" in outcome.stderr
    index.clear_cache()
    monkeypatch.setattr(index, "_MAX_WALKED", 100)
    outcome = CliRunner().invoke(main, ["--no-cache", "knobs.py"])
    assert outcome.stdout.count("RL606") == 1 and "project index" not in outcome.stderr


def test_an_absolute_import_resolves_from_the_working_folder_of_a_project_without_a_marker(tmp_path, monkeypatch):
    """`rllint .` in a checkout without .git or pyproject: `from src.utils.config import X` in src/grpo/train.py
    names src/utils/config.py, as project_root takes the working folder for the project."""
    from rllint.index import clear_lookups, find_module

    (tmp_path / "src" / "utils").mkdir(parents=True)
    (tmp_path / "src" / "grpo").mkdir()
    (tmp_path / "src" / "grpo" / "__init__.py").write_text("")
    (tmp_path / "src" / "utils" / "config.py").write_text("X = 1\n")
    (tmp_path / "src" / "grpo" / "train.py").write_text("from src.utils.config import X\n")
    importer = str(tmp_path / "src" / "grpo" / "train.py")
    clear_lookups()
    assert find_module(importer, "src.utils.config") is None  # from elsewhere: no project root above
    monkeypatch.chdir(tmp_path)
    clear_lookups()
    assert find_module(importer, "src.utils.config") == str(tmp_path / "src" / "utils" / "config.py")


def test_a_folder_named_on_the_command_line_is_the_project_of_its_files_without_a_marker(tmp_path, monkeypatch):
    """`rllint /elsewhere/repo` of a checkout without .git or pyproject: the named folder is the project of its
    files, and absolute imports resolve from it, as from the working folder; a marker inside it still wins."""
    from rllint.index import clear_lookups, find_module, name_folders, project_root

    build_files = {"repo/src/grpo/train.py": "from src.utils.config import X\n", "repo/src/utils/config.py": "X = 1\n",
                   "repo/src/grpo/__init__.py": "", "repo/lib/pyproject.toml": "", "repo/lib/core.py": "x = 1\n"}
    for name, text in build_files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")
    importer = str(tmp_path / "repo" / "src" / "grpo" / "train.py")
    try:
        name_folders(())
        assert project_root(importer) == str(tmp_path / "repo" / "src" / "grpo")
        assert find_module(importer, "src.utils.config") is None
        name_folders((str(tmp_path / "repo"), str(tmp_path / "repo" / "src")))
        assert project_root(importer) == str(tmp_path / "repo")  # the outermost named folder
        assert project_root(str(tmp_path / "repo" / "lib" / "core.py")) == str(tmp_path / "repo" / "lib")
        assert find_module(importer, "src.utils.config") == str(tmp_path / "repo" / "src" / "utils" / "config.py")
    finally:
        name_folders(())
        clear_lookups()


def test_linting_a_folder_from_outside_follows_values_across_its_modules(tmp_path, monkeypatch):
    """The same repository linted from inside (`rllint .`) and from elsewhere (`rllint /path/repo`) gives the same
    findings: the temperature written in another module of it is known either way."""
    from click.testing import CliRunner

    from rllint.cli import main

    train = """\
        import torch.nn.functional as F
        from pkg.conf import TEMPERATURE
        from transformers import AutoModelForCausalLM


        def step(policy, enc):
            seqs = policy.generate(**enc, do_sample=True, temperature=TEMPERATURE)
            logps = F.log_softmax(policy(seqs).logits, dim=-1)
            (-logps.mean()).backward()


        def main(enc):
            step(AutoModelForCausalLM.from_pretrained("gpt2"), enc)
        """
    (tmp_path / "repo" / "pkg").mkdir(parents=True)
    (tmp_path / "repo" / "pkg" / "conf.py").write_text("TEMPERATURE = 0.7\n")
    (tmp_path / "repo" / "pkg" / "train.py").write_text(textwrap.dedent(train))
    (tmp_path / "elsewhere").mkdir()
    found = {}
    for cwd, target in (("repo", "."), ("elsewhere", str(tmp_path / "repo"))):
        monkeypatch.chdir(tmp_path / cwd)
        index.clear_cache()
        outcome = CliRunner().invoke(main, ["--no-cache", "--select", "RL309", target])
        found[cwd] = [line.split(":", 1)[1] for line in outcome.stdout.splitlines() if "RL309" in line]
    index.name_folders(())  # this process ran the command: the next test's files are not under the folder
    assert found["repo"] == found["elsewhere"] and len(found["repo"]) == 1


def test_the_working_folder_named_on_the_command_line_shares_the_cache_of_its_files(tmp_path, monkeypatch):
    """`rllint .` and `rllint train.py` from the same folder lint with the same settings: one result cache (only a
    folder outside the working folder is part of the key: its files' project depends on it)."""
    from click.testing import CliRunner

    from rllint.cli import main

    (tmp_path / "repo").mkdir()
    (tmp_path / "repo" / "train.py").write_text("x = 1\n")
    cache = tmp_path / "cache"
    monkeypatch.chdir(tmp_path / "repo")
    for target in (".", "train.py", str(tmp_path / "repo")):
        assert CliRunner().invoke(main, ["--cache-dir", str(cache), target]).exit_code == 0
    assert len(list(cache.glob("results-*"))) == 1


# ---- RL606: a plain settings class that never leaves its file ------------------------------------------

NAMESPACE_SCRIPT = """\
    import torch


    class Settings:
        lr = 1e-6
        beta = 0.05  # KL penalty
        group = 8


    def run(policy, batches):
        opt = torch.optim.AdamW(policy.parameters(), lr=Settings.lr)
        for batch in batches:
            logps = policy(batch).log_softmax(-1)
            loss = -(logps * batch["adv"]).mean() / Settings.group
            loss.backward()
            opt.step()
    {tail}
"""

OTHER_SCRIPT = """\
    class Settings:
        beta = 0.1

    def use():
        return Settings.beta
"""


def namespace(tmp_path, tail="", other=OTHER_SCRIPT):
    build(tmp_path, {"train.py": NAMESPACE_SCRIPT.format(tail=tail), "other.py": other})
    return found(tmp_path, ["RL606"], "train.py", settings=_always(tmp_path, "RL606"))


def test_rl606_a_plain_class_read_only_by_its_attributes_is_not_read_by_another_file_s_class(tmp_path):
    assert namespace(tmp_path) == [("train.py", 6, "RL606")]
    assert namespace(tmp_path, tail="print(vars(Settings))") == []  # the class is handed over whole
    assert namespace(tmp_path, tail="cfg = Settings()\nlaunch(cfg)") == []  # an instance leaves the file
    assert namespace(tmp_path, other="from train import Settings\n\ndef use():\n    return Settings.beta\n") == []
    assert namespace(tmp_path, other="import train\n\ndef use():\n    return train.Settings.beta\n") == []


# ---- RL110: the k1 estimator of another module's helper added to this file's loss ------------------------

KL_HELPERS = """\
    import torch


    def token_logps(model, ids):
        return torch.log_softmax(model(ids).logits, dim=-1).gather(-1, ids.unsqueeze(-1)).squeeze(-1)


    def k1_penalty(logp, anchor, mask):
        return ((logp - anchor) * mask).sum() / mask.sum()


    def k3_penalty(logp, anchor, mask):
        gap = anchor - logp
        return ((torch.exp(gap) - gap - 1) * mask).sum() / mask.sum()
"""

KL_STEP = """\
    import copy

    import torch
    from lib.kl import k1_penalty, k3_penalty, token_logps


    def step(policy, frozen, opt, prompts, adv):
        ids = policy.generate(prompts, do_sample=True)
        mask = (ids != 0).float()
        cur = token_logps(policy, ids)
        with torch.no_grad():
            base = token_logps(frozen, ids)
        loss = -(cur * adv).mean() + 0.1 * {penalty}
        opt.zero_grad()
        loss.backward()
        opt.step()


    def train(policy, batches):
        frozen = copy.deepcopy(policy).eval()
        opt = torch.optim.AdamW(policy.parameters(), lr=1e-6)
        for prompts, adv in batches:
            step(policy, frozen, opt, prompts, adv)
"""


def kl_step(tmp_path, penalty):
    build(tmp_path, {"lib/__init__.py": "", "lib/kl.py": KL_HELPERS, "step.py": KL_STEP.format(penalty=penalty)})
    return found(tmp_path, ["RL110"], "step.py", "lib/kl.py")


def test_rl110_k1_of_another_module_s_helper_in_the_loss_is_reported_at_the_call(tmp_path):
    assert kl_step(tmp_path, "k1_penalty(cur, base, mask)") == [("step.py", 13, "RL110")]
    assert kl_step(tmp_path, "k1_penalty(mask=mask, anchor=base, logp=cur)") == [("step.py", 13, "RL110")]


def test_rl110_look_alikes_of_the_k1_in_the_loss(tmp_path):
    assert kl_step(tmp_path, "k3_penalty(cur, base, mask)") == []  # k3: the right estimator for a loss
    assert kl_step(tmp_path, "k1_penalty(base, base, mask)") == []  # no policy gradient in it
    assert kl_step(tmp_path, "k1_penalty(cur, cur.detach(), mask)") == []  # its own detached copy: no reference
    assert kl_step(tmp_path, "(k1_penalty(cur, base, mask) * adv).mean()") == []  # weighted: a policy gradient
    assert kl_step(tmp_path, "k1_penalty(cur, base, mask).item()") == []  # a number: no gradient reaches it


LOSS_MODULES = """\
    import torch
    import torch.nn as nn


    class PolicyGradient(nn.Module):
        def forward(self, logp, anchor, adv, mask):
            return -(logp * adv * mask).sum() / mask.sum()


    class Penalised(nn.Module):
        def __init__(self, coef):
            super().__init__()
            self.coef = coef

        def forward(self, logp, anchor, adv, mask):
            pg = -(logp * adv * mask).sum() / mask.sum()
            drift = {penalty}
            return pg + self.coef * (drift * mask).sum() / mask.sum()
"""

LOSS_FACTORY = """\
    from lib.losses import Penalised, PolicyGradient


    def make_objective(kind, coef=0.05):
        if kind == "pg":
            return PolicyGradient()
        return Penalised(coef=coef)
"""

FACTORY_STEP = """\
    import copy

    import torch
    from lib.factory import make_objective
    from lib.kl import token_logps


    def train(policy, batches, kind):
        frozen = copy.deepcopy(policy).eval()
        objective = make_objective(kind).to("cuda")
        opt = torch.optim.AdamW(policy.parameters(), lr=1e-6)
        for prompts, adv in batches:
            ids = policy.generate(prompts, do_sample=True)
            mask = (ids != 0).float()
            cur = {current}
            with torch.no_grad():
                base = token_logps(frozen, ids)
            loss = objective(cur, base, adv, mask)
            loss.backward()
            opt.step()
"""


def factory_step(tmp_path, penalty="logp - anchor", current="token_logps(policy, ids)"):
    build(tmp_path, {"lib/__init__.py": "", "lib/kl.py": KL_HELPERS, "lib/losses.py": LOSS_MODULES.format(
        penalty=penalty), "lib/factory.py": LOSS_FACTORY, "step.py": FACTORY_STEP.format(current=current)})
    return found(tmp_path, ["RL110"], "step.py", "lib/losses.py", "lib/factory.py")


def test_rl110_k1_in_the_forward_of_one_of_the_loss_modules_a_factory_returns(tmp_path):
    """`make_objective(kind)` returns one of two loss modules: calling it runs each one's `forward`, and the one
    that adds `logp - anchor` to the loss is seen (reported at the call: the difference is another module's)."""
    assert factory_step(tmp_path) == [("step.py", 18, "RL110")]


def test_rl110_look_alikes_of_the_k1_of_a_factory_s_loss_module(tmp_path):
    assert factory_step(tmp_path, penalty="torch.exp(anchor - logp) - (anchor - logp) - 1") == []  # k3
    assert factory_step(tmp_path, current="token_logps(policy, ids).detach()") == []  # no policy gradient
    assert factory_step(tmp_path, penalty="(logp - anchor) * adv") == []  # weighted: a policy gradient


REGULARIZERS = """\
    import torch
    import torch.nn as nn


    class Regularizer(nn.Module):
        def compute(self, log_probs, ref_log_probs, mask):
            raise NotImplementedError


    class FirstOrder(Regularizer):
        def compute(self, log_probs, ref_log_probs, mask):
            per_token = (log_probs - ref_log_probs) * mask
            return per_token.sum() / (mask.sum() + 1e-8)


    class ThirdOrder(Regularizer):
        def compute(self, log_probs, ref_log_probs, mask):
            gap = ref_log_probs - log_probs
            return ((torch.exp(gap) - gap - 1) * mask).sum() / (mask.sum() + 1e-8)
"""

REGISTRY = """\
    import torch

    from lib.regularizers import {regularizer}


    def reg_none(log_prob, old_log_prob, response_mask):
        return torch.tensor(0.0, device=log_prob.device)


    def reg_kl(log_prob, old_log_prob, response_mask):
        return {regularizer}().compute(log_probs=log_prob, ref_log_probs=old_log_prob, mask=response_mask)


    REGISTRY = {{"none": reg_none, "kl": reg_kl}}
    {extra}
"""

VERL_LOSS = """\
    import torch
    from verl.trainer.ppo.core_algos import register_policy_loss

    from lib.registry import REGISTRY


    @register_policy_loss("composed")
    def composed_loss(old_log_prob, log_prob, advantages, response_mask, loss_agg_mode="token-mean", config=None):
        {guard}
        ratio = torch.exp(log_prob - old_log_prob)
        pg_loss = (-advantages * ratio * response_mask).sum() / response_mask.sum()
        reg_value = torch.tensor(0.0, device=log_prob.device)
        if config.regularizer != "none":
            reg_fn = {lookup}
            if reg_fn is None:
                raise ValueError(config.regularizer)
            reg_value = reg_fn(log_prob, old_log_prob, response_mask)
            pg_loss = pg_loss + float(config.reg_coef) * reg_value
        return pg_loss, {{"reg": reg_value.detach().item()}}
"""


def registry_loss(tmp_path, regularizer="FirstOrder", lookup="REGISTRY.get(config.regularizer)", extra="",
                  guard="pass"):
    build(tmp_path, {"lib/__init__.py": "", "lib/regularizers.py": REGULARIZERS,
                     "lib/registry.py": REGISTRY.format(regularizer=regularizer, extra=extra),
                     "loss.py": VERL_LOSS.format(lookup=lookup, guard=guard)})
    return found(tmp_path, ["RL110"], "loss.py", "lib/registry.py", "lib/regularizers.py")


def test_rl110_k1_of_a_regularizer_class_reached_through_a_registry_of_another_module(tmp_path):
    assert registry_loss(tmp_path) == [("loss.py", 17, "RL110")]
    assert registry_loss(tmp_path, lookup="REGISTRY[config.regularizer]") == [("loss.py", 17, "RL110")]
    # verl passes its actor config: a guard against the default `config=None` does not end the loss
    guard = "if config is None:\n            raise ValueError('needs the actor config')"
    assert registry_loss(tmp_path, guard=guard) == [("loss.py", 18, "RL110")]


def test_rl110_look_alikes_of_the_registry_k1(tmp_path):
    assert registry_loss(tmp_path, regularizer="ThirdOrder") == []  # k3 in the loss
    assert registry_loss(tmp_path, regularizer="ThirdOrder", guard="assert config is not None") == []
    # a registry that code adds to (a decorator, another entry): what the lookup finds is unknown
    assert registry_loss(tmp_path, extra="\n\ndef register(name, fn):\n    REGISTRY[name] = fn\n") == []
    assert registry_loss(tmp_path, lookup="reg_lookup(config.regularizer)") == []  # a function out of sight


POLICY_CLASS = """\
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
    from transformers import AutoModelForCausalLM


    class Policy(nn.Module):
        def __init__(self, name):
            super().__init__()
            self.model = AutoModelForCausalLM.from_pretrained(name)

        def forward(self, ids):
            return self.model(input_ids=ids).logits

        def frozen_logps(self, ids):
            with torch.no_grad():
                logits = self.forward(ids)
            return F.log_softmax(logits[:, :-1], -1).gather(-1, ids[:, 1:].unsqueeze(-1)).squeeze(-1)

        def logps(self, ids):
            logits = self.forward(ids)
            return F.log_softmax(logits[:, :-1], -1).gather(-1, ids[:, 1:].unsqueeze(-1)).squeeze(-1)
"""

TRAINER = """\
    import torch

    from lib.policy import Policy


    class Trainer:
        def __init__(self, policy, ref):
            self.policy, self.ref = policy, ref
            self.optimizer = torch.optim.AdamW(policy.parameters(), lr=1e-5)

        def step(self, ids, adv, old):
            with torch.no_grad():
                base = self.ref.frozen_logps(ids)
            current = {current}
            loss = -(torch.exp(current - old) * adv).mean() + 0.1 * ((current - base) ** 2).mean()
            self.optimizer.zero_grad()
            loss.backward()
            self.optimizer.step()


    trainer = Trainer(Policy("gpt2"), Policy("gpt2"))
"""


def test_rl505_a_method_of_another_module_s_policy_class_that_runs_its_forward_under_no_grad(tmp_path):
    build(tmp_path, {"lib/__init__.py": "", "lib/policy.py": POLICY_CLASS,
                     "train.py": TRAINER.format(current="self.policy.frozen_logps(ids)")})
    settings = Settings(select=["RL505"], root=tmp_path)
    result = lint_files([str(tmp_path / "train.py")], settings, isolated=False)
    (finding,) = result.diagnostics  # the reference's call runs under its own no_grad: the method's is the cut
    assert (finding.path.rsplit("/", 1)[-1], finding.line) == ("policy.py", 17)
    assert "under no_grad in `Policy.frozen_logps` of policy.py" in finding.message and "the call on line 14" in finding.message
    build(tmp_path, {"lib/__init__.py": "", "lib/policy.py": POLICY_CLASS,
                     "train.py": TRAINER.format(current="self.policy.logps(ids)")})
    assert found(tmp_path, ["RL505"], "train.py") == []  # the no_grad method only for the reference: silent


SCORES = """\
    import torch
    import torch.nn.functional as F


    def score(lm, ids):
        with torch.no_grad():
            out = {"logits": lm(input_ids=ids).logits}
        logps = F.log_softmax(out["logits"][:, :-1], dim=-1)
        return {"logps": logps.gather(-1, ids[:, 1:, None]).squeeze(-1)}
"""

SCORED_STEP = """\
    import torch
    from transformers import AutoModelForCausalLM
    from lib.scores import score

    policy = AutoModelForCausalLM.from_pretrained("gpt2")
    frozen = AutoModelForCausalLM.from_pretrained("gpt2")
    opt = torch.optim.SGD(policy.parameters(), lr=1e-5)


    def step(ids, adv):
        {reference}
        cur = score(policy, ids)["logps"]
        loss = -(cur * adv).mean() + 0.1 * ((cur - base) ** 2).mean()
        loss.backward()
        opt.step()
"""


def scored_step(tmp_path, reference):
    build(tmp_path, {"lib/__init__.py": "", "lib/scores.py": SCORES,
                     "step.py": SCORED_STEP.format(reference=reference.replace("\n", "\n        "))})
    return found(tmp_path, ["RL505"], "step.py")


def test_rl505_the_no_grad_of_a_helper_that_no_other_call_needs_is_reported_where_it_is_written(tmp_path):
    assert scored_step(tmp_path, "with torch.no_grad():\n    base = score(frozen, ids)['logps']") == \
        [("scores.py", 7, "RL505")]
    assert scored_step(tmp_path, "base = 0.0") == [("scores.py", 7, "RL505")]  # the only call: its no_grad is the cut


def test_rl505_a_helper_whose_no_grad_another_call_relies_on_is_reported_at_the_call(tmp_path):
    # the reference's call runs with gradient enabled and needs the helper's no_grad: the policy's call chose wrong
    assert scored_step(tmp_path, "base = score(frozen, ids)['logps']") == [("step.py", 12, "RL505")]


def test_rl505_a_helper_declared_no_grad_whole_is_reported_at_the_call_that_chose_it(tmp_path):
    build(tmp_path, step("scoring.frozen_token_logps(actor, seq, attn)", "old"))  # `@torch.inference_mode()`
    assert found(tmp_path, ["RL505"], "step.py") == [("step.py", 14, "RL505")]
