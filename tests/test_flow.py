"""The fact engine's interpreter: facts follow the code across assignments, calls, containers and callers."""
from rllint.analysis.facts import (BATCH, CAUSAL_LM, COMPLETION, GRAPH, MODEL, NO_GRAD, NONE, TIME, TOKEN_LOGPROBS,
                                   TOKENIZER, VOCAB)

import pytest

import rllint.analysis.flow as flow_module

from engine import Engine

CAUSAL = """
    import torch
    import torch.nn.functional as F
    from transformers import AutoModelForCausalLM
    policy = AutoModelForCausalLM.from_pretrained("gpt2")
    optimizer = torch.optim.AdamW(policy.parameters(), lr=1e-6)
"""


def test_causal_lm_logits_are_batch_time_vocab_and_keep_their_axes_through_ops():
    engine = Engine(CAUSAL + """
    def step(ids):
        logits = policy(ids).logits
        shifted = logits[:, :-1]
        logp = F.log_softmax(shifted / 0.7, dim=-1)
        token = logp.gather(-1, ids[:, 1:].unsqueeze(-1)).squeeze(-1)
        flat = logits.view(-1, logits.size(-1))
        return token.sum()
    """)
    assert engine.facts("policy(ids).logits", "rank", "axes", "dist") == {
        "rank": 3, "axes": (BATCH, TIME, VOCAB), "dist": 2}
    assert engine.facts("logp", "rank", "dist", "content") == {"rank": 3, "dist": 2, "content": "logprobs"}
    assert engine.facts("token", "rank", "axes", "content") == {
        "rank": 2, "axes": (BATCH, TIME), "content": TOKEN_LOGPROBS}
    assert engine.facts("flat", "rank", "axes", "dist") == {"rank": 2, "axes": (None, VOCAB), "dist": 1}


def test_squeezing_the_batch_axis_leaves_time_and_vocab():
    engine = Engine(CAUSAL + """
    def score(ids):
        logits = policy(ids).logits.squeeze(0)
        logprobs = torch.log_softmax(logits, dim=-1)
        return logprobs[:-1].gather(1, ids[0, 1:].unsqueeze(-1))
    score(ids)
    """)
    assert engine.facts("logprobs[:-1]", "rank", "axes", "dist") == {"rank": 2, "axes": (TIME, VOCAB), "dist": 1}


def test_a_parameter_nobody_passes_a_model_to_is_unknown_not_guessed_by_name():
    engine = Engine("""
    def token_logps(model, ids):
        logits = model(ids).logits
        return logits.log_softmax(-1)
    """)
    assert engine.facts("logits", "rank", "grad") == {"rank": None, "grad": None}


def test_callers_give_parameters_their_values_and_helpers_are_interpreted_per_call():
    engine = Engine(CAUSAL + """
    ref = AutoModelForCausalLM.from_pretrained("gpt2").requires_grad_(False)

    def token_logps(model, ids):
        return model(ids).logits.log_softmax(-1)

    def step(ids):
        logp = token_logps(policy, ids)
        with torch.no_grad():
            old = token_logps(policy, ids)
        ref_logp = token_logps(ref, ids)
        loss = (logp - old).mean()
        loss.backward()
    """)
    assert engine.facts("logp", "grad", "rank") == {"grad": GRAPH, "rank": 3}
    assert engine.facts("old", "grad") == {"grad": NO_GRAD}
    assert engine.facts("ref_logp", "grad") == {"grad": NO_GRAD}  # frozen, fed token ids


def test_gradient_mode_of_a_helper_is_the_mode_at_every_caller():
    engine = Engine(CAUSAL + """
    def sample(logits):
        logits[:, 0] = -1e9
        return logits

    def rollout(ids):
        with torch.no_grad():
            return sample(policy(ids).logits)

    def train_step(ids):
        out = sample(policy(ids).logits)
        out.sum().backward()

    def eval_only(ids):
        with torch.inference_mode():
            sample(policy(ids).logits)
    """)
    flow = engine.flow
    modes = {flow.ir.functions[name].name: flow.entry_mode(flow.ir.functions[name])
             for name in ("sample", "rollout", "train_step")}
    # sample: its callers disagree; rollout: nothing calls it (its `no_grad` block is lexical)
    assert modes == {"sample": None, "rollout": None, "train_step": True}


def test_helper_called_only_under_no_grad_runs_without_gradient():
    engine = Engine(CAUSAL + """
    def mask_logits(logits):
        logits[:, 0] = -1e9
        return logits

    def rollout(ids):
        with torch.no_grad():
            for _ in range(3):
                mask_logits(policy(ids).logits)
    """)
    flow = engine.flow
    assert flow.entry_mode(flow.ir.functions["mask_logits"]) is False
    assert {e.grad_mode for e in flow.inplace} == {False}  # in its own context and through each call


def test_a_function_passed_as_a_value_has_callers_out_of_sight():
    engine = Engine(CAUSAL + """
    def hook(logits):
        logits[:, 0] = 0
        return logits

    def run(ids):
        register(hook)
        with torch.no_grad():
            hook(policy(ids).logits)
    """)
    flow = engine.flow
    assert flow.callers(flow.ir.functions["hook"]) == []
    assert flow.entry_mode(flow.ir.functions["hook"]) is None


def test_returned_dicts_keep_each_key_and_stoppers_reach_the_loss_only_through_their_key():
    engine = Engine(CAUSAL + """
    def losses(logp, adv):
        kl = float(logp.mean())
        loss = -(logp * adv).mean() + 0.1 * kl
        return {"loss_tensor": loss, "loss": loss.item(), "kl": kl}

    def step(ids, adv):
        out = losses(policy(ids).logits.log_softmax(-1), adv)
        out["loss_tensor"].backward()
    """)
    (backward,) = engine.flow.backwards
    stoppers = {event.node for event in engine.flow.stoppers}
    assert {engine.code(node) for node in backward.target.sources & stoppers} == {"float(logp.mean())"}
    assert engine.value("out").facts["items"][1][1].facts["type"] == "number"


def test_tuples_returned_by_position():
    engine = Engine(CAUSAL + """
    def both(ids):
        logits = policy(ids).logits
        return logits, logits.mean().item()

    def step(ids):
        logits, metric = both(ids)
        logits.sum().backward()
    """)
    assert engine.facts("logits", "rank") == {"rank": 3}
    (backward,) = engine.flow.backwards
    assert backward.target.sources == frozenset()


def test_self_attributes_hold_what_the_methods_assign():
    engine = Engine("""
    import copy
    from transformers import AutoModelForCausalLM
    from trl import create_reference_model

    class Trainer:
        def __init__(self, name):
            self.policy = AutoModelForCausalLM.from_pretrained(name)
            self.ref = create_reference_model(self.policy)

        def logps(self, model, ids):
            return model(ids).logits.log_softmax(-1)

        def step(self, ids):
            new = self.logps(self.policy, ids)
            old = self.logps(self.ref, ids)
            (new - old).sum().backward()
    """)
    assert engine.facts("new", "grad", "rank") == {"grad": GRAPH, "rank": 3}
    assert engine.facts("old", "grad") == {"grad": NO_GRAD}
    assert engine.facts("self.policy", "arch", occurrence=-1) == {"arch": CAUSAL_LM}


def test_freezing_anywhere_in_the_file_applies_to_the_model_object_under_any_name():
    engine = Engine(CAUSAL + """
    import copy
    reference = copy.deepcopy(policy)

    def freeze(model):
        for p in model.parameters():
            p.requires_grad = False

    freeze(reference)

    def step(ids):
        ref_out = reference(ids).logits
        out = policy(ids).logits
        (out - ref_out).sum().backward()
    """)
    flow = engine.flow
    assert flow.frozen(engine.value("reference", occurrence=0)) is True
    assert flow.frozen(engine.value("policy", occurrence=0)) is False
    assert flow.trained(engine.value("policy", occurrence=0)) is True
    assert engine.facts("ref_out", "grad") == {"grad": NO_GRAD}
    assert engine.facts("out", "grad") == {"grad": GRAPH}


def test_parameter_defaults_are_numbers_with_their_origin():
    engine = Engine("""
    def train(lr=5e-5, eps=1e-8):
        return lr * 2
    """)
    facts = engine.facts("lr", "number", "origin", occurrence=0)
    assert facts == {"number": 5e-5, "origin": "default of parameter `lr` of train()"}


def test_callers_replace_defaults():
    engine = Engine("""
    def train(lr=5e-5):
        return lr

    train(lr=1e-6)
    """)
    assert engine.facts("lr", "number", occurrence=0) == {"number": 1e-6}


def test_decoded_samples_are_completions_and_slices_remember_themselves():
    engine = Engine(CAUSAL + """
    from transformers import AutoTokenizer
    tokenizer = AutoTokenizer.from_pretrained("gpt2")

    def rollout(ids):
        out = policy.generate(ids, do_sample=True)
        texts = tokenizer.batch_decode(out[:, ids.shape[1]:], skip_special_tokens=True)
        for text in texts:
            short = text[:3000]
            report = f"{short}"
        return texts
    """)
    assert engine.facts("texts", "type", "text", occurrence=0) == {"type": "texts", "text": COMPLETION}
    short = engine.value("short", occurrence=0)
    assert short.facts.get("text") == COMPLETION
    assert [engine.code(n) for n in short.sources] == ["text[:3000]"]
    assert [engine.code(n) for n in engine.value("report").sources] == ["text[:3000]"]


def test_branches_join_to_what_both_paths_agree_on():
    engine = Engine(CAUSAL + """
    def f(ids, flag):
        if flag:
            x = policy(ids).logits
        else:
            x = policy(ids).logits.squeeze(0)
        return x
    f(ids, True)
    """)
    assert engine.facts("x", "rank", "type") == {"rank": None, "type": "tensor"}


def test_nn_module_subclasses_are_models_whose_forward_is_interpreted():
    engine = Engine("""
    import torch
    from torch import nn

    class Policy(nn.Module):
        def __init__(self):
            super().__init__()
            self.head = nn.Linear(8, 8)

        def forward(self, x):
            return torch.log_softmax(x, dim=-1)

    net = Policy()
    out = net(torch.zeros(4, 8))
    """)
    assert engine.facts("net", "type") == {"type": "model"}
    assert engine.facts("out", "rank", "dist", "content") == {"rank": 2, "dist": 1, "content": "logprobs"}


def test_helpers_of_other_project_modules_are_interpreted_with_the_callers_arguments(tmp_path):
    import ast

    import libcst as cst

    from rllint.analysis.flow import Flow
    from rllint.runner import FileContext
    from rllint.settings import Settings

    (tmp_path / "pyproject.toml").write_text("")
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("from .core import seq_logps\n")
    (package / "core.py").write_text(
        "def seq_logps(model, ids):\n"
        "    logits = model(ids).logits\n"
        "    return logits.log_softmax(-1).gather(-1, ids.unsqueeze(-1)).squeeze(-1).sum(-1)\n")
    text = (
        "from transformers import AutoModelForCausalLM\n"
        "from pkg import seq_logps\n"
        "policy = AutoModelForCausalLM.from_pretrained('gpt2')\n"
        "logps = seq_logps(policy, ids)\n")
    path = tmp_path / "train.py"
    path.write_text(text)
    file = FileContext(str(path), text, cst.parse_module(text), ast.parse(text), Settings())
    flow = file.fact(Flow)
    logps = flow.globals["logps"]
    assert (logps.facts.get("rank"), logps.facts.get("grad")) == (1, "graph")
    assert set(file.dependencies) == {str(package / "__init__.py"), str(package / "core.py")}


def test_autograd_grad_gives_plain_tensors_unless_it_builds_a_graph():
    engine = Engine(CAUSAL + """
    def step(ids):
        loss = policy(ids).logits.sum()
        (plain,) = torch.autograd.grad(loss, [ids])
        (higher,) = torch.autograd.grad(loss, [ids], create_graph=True)
    step(ids)
    """)
    assert engine.facts("plain", "grad") == {"grad": NO_GRAD}
    assert engine.facts("higher", "grad") == {"grad": GRAPH}


def test_an_object_from_out_of_sight_whose_parameters_train_is_a_model_known_by_its_place():
    engine = Engine("""
    import torch
    from torch import optim

    class ActorWorker:
        def build(self, module, lr):
            self.module = module
            self.optimizer = optim.AdamW(self.module.parameters(), lr=lr)

        def micro_batch(self, module, batch):
            return module(input_ids=batch["input_ids"]).logits.log_softmax(-1)

        def update(self, batch):
            with torch.no_grad():
                old = self.micro_batch(self.module, batch)
            new = self.micro_batch(self.module, batch)
            (new - old).sum().backward()
            self.optimizer.step()

    def train(model, loader):
        opt = torch.optim.Adam(model.parameters())
        for batch in loader:
            out = model(batch)
            untrained = other(batch)
            (out.sum() + untrained.sum()).backward()
    """)
    assert engine.facts("new", "grad") == {"grad": "graph"}
    assert engine.facts("old", "grad") == {"grad": "no_grad"}
    assert engine.facts("out", "grad") == {"grad": "graph"}
    assert engine.facts("untrained", "grad") == {"grad": None}


def test_requires_grad_makes_a_leaf_with_a_graph():
    engine = Engine("""
    import torch
    def f(x):
        leaf = x.detach().double().requires_grad_(True)
        frozen = x.detach().requires_grad_(False)
        y = (leaf * 2).sum()
        y.backward()
    f(torch.zeros(3))
    """)
    assert engine.facts("y", "grad", "cut") == {"grad": "graph", "cut": None}
    assert engine.facts("frozen", "grad") == {"grad": "no_grad"}


def test_a_function_nobody_in_its_file_calls_gets_what_its_callers_in_the_project_pass(tmp_path):
    import ast

    import libcst as cst

    from rllint.analysis.flow import Flow
    from rllint.runner import FileContext
    from rllint.settings import Settings

    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "losses.py").write_text(
        "import torch\n"
        "def policy_loss(logps, old, adv):\n"
        "    ratio = torch.exp(logps - old)\n"
        "    return -(ratio * adv).mean()\n")
    (tmp_path / "train.py").write_text(
        "import torch\n"
        "from transformers import AutoModelForCausalLM\n"
        "from losses import policy_loss\n"
        "policy = AutoModelForCausalLM.from_pretrained('gpt2')\n"
        "def step(ids, old, adv):\n"
        "    logps = policy(ids).logits.log_softmax(-1).sum(-1)\n"
        "    policy_loss(logps, old, adv).backward()\n")
    text = (tmp_path / "losses.py").read_text()
    file = FileContext(str(tmp_path / "losses.py"), text, cst.parse_module(text), ast.parse(text),
                       Settings(root=tmp_path))
    flow = file.fact(Flow)
    flow.analyze_all()
    ratio = next(v for n, v in flow.values.items() if isinstance(n, cst.Name) and n.value == "ratio")
    assert (ratio.facts.get("grad"), ratio.facts.get("saved")) == ("graph", "exp")
    assert str(tmp_path / "train.py") in file.dependencies


def test_a_flag_the_caller_passes_picks_the_helper_s_return_and_appended_lists_hold_their_elements():
    engine = Engine(CAUSAL + """
    def seq_logp(model, ids, with_entropy=False):
        logps = F.log_softmax(model(ids).logits, dim=-1)
        total = logps.gather(-1, ids.unsqueeze(-1)).squeeze(-1).sum(-1)
        if not with_entropy:
            return total
        return total, -(logps.exp() * logps).sum(-1)

    def step(batches, ref):
        current, anchors = [], []
        for ids in batches:
            current.append(seq_logp(policy, ids))
            with torch.no_grad():
                anchor = seq_logp(ref, ids) if ref is not None else None
            anchors.append(anchor)
        stacked = torch.stack(current)
        fixed = torch.stack(anchors)
        unknown = torch.stack(list(batches))
        (stacked - fixed).mean().backward()
        return unknown
    """)
    assert engine.facts("stacked", "type", "grad", "lp") == {"type": "tensor", "grad": GRAPH, "lp": (1, 0)}
    assert engine.facts("fixed", "grad", "lp") == {"grad": NO_GRAD, "lp": (0, 1)}
    assert engine.facts("(stacked - fixed).mean()", "lp") == {"lp": (1, -1)}
    assert engine.facts("unknown", "grad") == {"grad": None}  # parts of unknown kind: gradient unknown


def test_linear_log_probs_stop_at_weights_and_at_the_k3_form():
    engine = Engine(CAUSAL + """
    def step(prompts, ref_model, adv):
        ids = policy.generate(prompts, do_sample=True)
        mask = ids != 0
        optimizer.zero_grad()
        logp = F.log_softmax(policy(ids).logits, -1).gather(-1, ids.unsqueeze(-1)).squeeze(-1)
        with torch.no_grad():
            ref = F.log_softmax(ref_model(ids).logits, -1).gather(-1, ids.unsqueeze(-1)).squeeze(-1)
        masked = ((logp - ref) * mask).sum() / mask.sum()
        weighted = (logp - ref) * adv
        gap = ref - logp
        k3 = torch.exp(gap) - gap - 1
        written_twice = torch.exp(ref - logp) - (ref-logp) - 1
        own = logp - logp.detach()
        (masked + weighted.mean() + k3.mean() + written_twice.mean() + own.mean()).backward()
    """)
    assert engine.facts("masked", "lp") == {"lp": (1, -1)}
    assert engine.facts("weighted", "lp") == {"lp": None}
    assert engine.facts("k3", "lp") == {"lp": None}
    assert engine.facts("written_twice", "lp") == {"lp": None}  # one difference, in other parentheses and spacing
    assert engine.facts("own", "lp") == {"lp": (1, 0)}  # its detached copy is no fixed log-prob


def _caller_chain(length: int) -> str:
    """`f0` is called only by `f1`, `f1` only by `f2`, ...: what `f0` gets is known only through every caller."""
    helpers = "\n".join(f"def f{k}(r{k}):\n    return f{k - 1}(r{k}) + 1\n" for k in range(1, length))
    return f"def f0(r0):\n    return r0 * 2\n\n{helpers}\nf{length - 1}(1e-6)\n"


def test_parameters_are_known_through_a_chain_of_callers():
    engine = Engine(_caller_chain(6))
    assert engine.facts("r0", "number", occurrence=0) == {"number": 1e-6}


def test_a_chain_of_callers_deeper_than_the_bound_leaves_parameters_unknown_not_defaulted(monkeypatch):
    monkeypatch.setattr(flow_module, "MAX_NESTED_ANALYSES", 3)
    engine = Engine(_caller_chain(6))
    assert engine.facts("r0", "number", occurrence=0) == {"number": None}


def test_a_helper_met_again_while_it_is_interpreted_is_interpreted_again_not_unknown():
    """Interpreting `logps_of` asks who trains `model`, which analyses `main`, which calls `logps_of` again
    (with gradient): that call is interpreted, not answered "unknown" for good (the bench's RL505 false alarm)."""
    engine = Engine("""
    import copy
    import torch
    import torch.nn.functional as F
    from transformers import AutoModelForCausalLM

    def logps_of(model, ids):
        return F.log_softmax(model(ids).logits, -1).gather(-1, ids.unsqueeze(-1)).squeeze(-1)

    def main():
        policy = AutoModelForCausalLM.from_pretrained("gpt2")
        reference = copy.deepcopy(policy).eval().requires_grad_(False)
        optimizer = torch.optim.AdamW(policy.parameters(), lr=1e-6)
        ids = torch.randint(0, 10, (2, 8))
        with torch.no_grad():
            old = logps_of(policy, ids)
            ref = logps_of(reference, ids)
        new = logps_of(policy, ids)
        (torch.exp(new - old) + (new - ref) ** 2).mean().backward()
        optimizer.step()

    if __name__ == "__main__":
        main()
    """)
    assert engine.facts("new", "grad", occurrence=0) == {"grad": GRAPH}
    assert engine.facts("old", "grad", occurrence=0) == {"grad": NO_GRAD}


LAZY_LOOP = """
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer


class Loop:
    def __init__(self, name):
        self.name = name
        self.model = None

{methods}

def main():
    loop = Loop("gpt2")
    loop.step(torch.zeros(2, 3, dtype=torch.long))
"""

_ENSURE = """    def ensure_loaded(self):
        if self.model is None:
            self.model = AutoModelForCausalLM.from_pretrained(self.name)
"""
_STEP = """    def step(self, ids):
        self.ensure_loaded()
        out = self.model(input_ids=ids)
        return out.logits
"""


@pytest.mark.parametrize("methods", [_ENSURE + "\n" + _STEP, _STEP + "\n" + _ENSURE])
def test_an_attribute_read_while_it_is_being_found_is_read_again_once_it_is_known(methods):
    """`step` is analysed while `self.model` is being found (finding it analyses `ensure_loaded`, whose caller is
    `step`): that first analysis saw a provisional unknown, and is run again once the attribute is known, whatever
    the order of the methods."""
    engine = Engine(LAZY_LOOP.format(methods=methods))
    called = [node for node in engine.nodes("self.model") if engine.flow.function_of(node).name == "step"]
    assert [engine.flow.value(node).facts.get("arch") for node in called] == [CAUSAL_LM]
    assert engine.facts("out.logits", "type") == {"type": "tensor"}


def test_an_attribute_set_to_none_in_init_and_loaded_by_a_setup_method_holds_what_is_loaded():
    engine = Engine("""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    class Runner:
        def __init__(self, name):
            self.name, self.model, self.tok = name, None, None
            self.unused = None

        def setup(self):
            self.model = AutoModelForCausalLM.from_pretrained(self.name)
            self.tok = AutoTokenizer.from_pretrained(self.name)

        def run(self, text):
            enc = self.tok(text, return_tensors="pt")
            return self.model.generate(**enc), self.unused

    runner = Runner("gpt2")
    runner.setup()
    runner.run("hi")
    """)
    assert engine.facts("self.model", "type", "arch") == {"type": MODEL, "arch": CAUSAL_LM}
    assert engine.facts("self.tok", "type") == {"type": TOKENIZER}
    assert engine.facts("self.unused", "type") == {"type": NONE}  # never set to anything else


def test_a_method_analysed_while_its_caller_is_still_interpreted_gets_what_the_caller_passes():
    """Reading `self.last` in `run` analyses `step`, which stores it, before `run` has reached its call of
    `step`: that first answer (no caller) is provisional, and `step` is analysed again once `run` is done."""
    engine = Engine("""
    import torch
    from transformers import AutoModelForCausalLM

    class Runner:
        def __init__(self, name):
            self.policy = AutoModelForCausalLM.from_pretrained(name)
            self.last = None

        def run(self, steps):
            for _ in range(steps):
                if self.last is not None:
                    print(self.last.shape)
                self.step(torch.ones(2, 3, dtype=torch.long))

        def step(self, ids):
            self.last = self.policy(ids).logits
    """)
    called = [node for node in engine.nodes("ids") if engine.flow.function_of(node).name == "step"]
    assert [engine.flow.value(node).facts.get("type") for node in called] == ["tensor"]


def test_a_name_that_holds_a_model_or_a_number_is_neither():
    engine = Engine(CAUSAL + """
    def pick(flag):
        held = policy if flag else 0.5
        other = None if flag else 0.5
        return held, other
    pick(True)
    """)
    assert engine.facts("held", "type") == {"type": None}
    assert engine.facts("other", "type") == {"type": None}


def test_module_methods_a_project_model_class_inherits_keep_the_model():
    engine = Engine("""
    import torch
    class Critic(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.head = torch.nn.Linear(8, 1)
        def forward(self, x):
            return self.head(x)
        def to_device(self, device):
            return None

    critic = Critic().cuda()
    moved = critic.to("cuda")
    own = critic.to_device("cuda")
    """)
    assert engine.facts("critic", "type", occurrence=0) == {"type": "model"}
    assert engine.facts("moved", "type") == {"type": "model"}
    assert engine.facts("own", "type") == {"type": "none"}  # a method the class defines is its own


def test_a_module_holds_parameters_when_it_stores_a_layer_or_a_model_and_is_weightless_when_only_numbers():
    engine = Engine(CAUSAL + """
    class Loss(torch.nn.Module):
        def __init__(self, beta=0.1):
            super().__init__()
            self.beta, self.log = float(beta), {}

        def forward(self, x):
            return x.mean() * self.beta

    class Head(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.scale = torch.nn.Parameter(torch.ones(1))

    class Given(torch.nn.Module):
        def __init__(self, inner):
            super().__init__()
            self.inner = inner

    class Registered(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.register_parameter("w", None)

    loss, head, given, registered = Loss(), Head(), Given(make_inner()), Registered()
    value = loss(policy(ids).logits)
    """)
    assert engine.facts("Loss()", "type", "weightless") == {"type": "model", "weightless": True}
    for built in ("Head()", "Given(make_inner())", "Registered()"):
        assert engine.facts(built, "type", "weightless") == {"type": "model", "weightless": None}
    assert engine.facts("loss(policy(ids).logits)", "grad", "forwards") == {  # the graph came back through the call
        "grad": GRAPH, "forwards": frozenset(engine.nodes("policy(ids)") + engine.nodes("loss(policy(ids).logits)"))}


def test_a_module_read_for_its_callers_leaves_its_helper_reading_whole(tmp_path):
    """A module first read to find who calls another's function, then read as a helper, still finds the
    callers of its own functions: the facts do not depend on which question came first."""
    import ast

    import libcst as cst

    from rllint.analysis import summaries
    from rllint.analysis.flow import Flow
    from rllint.runner import FileContext
    from rllint.settings import Settings

    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "scoring.py").write_text(
        "import torch\n"
        "def per_token(model, ids):\n"
        "    return torch.log_softmax(model(ids).logits, dim=-1)\n")
    (tmp_path / "sampler.py").write_text(
        "from scoring import per_token\n"
        "def draw(model, enc, knobs):\n"
        "    out = model.generate(**enc, do_sample=True, temperature=knobs['t'])\n"
        "    return per_token(model, out)\n")
    (tmp_path / "launch.py").write_text(
        "from sampler import draw\n"
        "draw(None, {}, {'t': 0.6})\n")
    sampler = str(tmp_path / "sampler.py")

    def temperature() -> object:
        _, module = summaries.load(sampler, Settings(root=tmp_path))
        flow = module.fact(Flow)
        flow.analyze_all()
        given = next(v for n, v in flow.values.items() if isinstance(n, cst.Subscript))
        return given.facts.get("number")

    summaries.clear_cache()
    alone = temperature()
    summaries.clear_cache()
    text = (tmp_path / "scoring.py").read_text()
    scoring = FileContext(str(tmp_path / "scoring.py"), text, cst.parse_module(text), ast.parse(text),
                          Settings(root=tmp_path))
    scoring.fact(Flow).analyze_all()  # reads sampler.py for the callers of per_token
    assert (alone, temperature()) == (0.6, 0.6)


def test_masks_written_into_zeros_and_sums_over_time_of_masked_log_probs():
    engine = Engine(CAUSAL + """
    def rollout(prompt):
        with torch.no_grad():
            ids = policy.generate(prompt, do_sample=True)
        valid = (ids != 0).long()
        window = torch.zeros_like(ids)
        window[:, prompt.shape[1]:] = 1
        window = (window * valid)[:, 1:]
        totals = torch.zeros_like(ids)
        totals[:, 0] = ids.sum(-1)
        logp = policy(ids).logits[:, :-1].log_softmax(-1).gather(-1, ids[:, 1:, None]).squeeze(-1)
        seq = (window * logp).sum(dim=-1)
        per_row_batch = (window * logp).sum(0)
        normalised = seq / window.sum(-1)
        return seq, per_row_batch, normalised, totals

    rollout(torch.zeros(1, 4, dtype=torch.long))
    """)
    assert engine.facts("valid", "content", "rank") == {"content": "mask", "rank": 2}
    assert engine.facts("window", "content", "axes") == {"content": "mask", "axes": (BATCH, TIME)}
    assert engine.facts("totals", "content")["content"] is None  # written with counts: no mask
    assert engine.facts("seq", "lp", "lp_seq") == {"lp": (1, 0), "lp_seq": True}
    assert engine.facts("per_row_batch", "lp_seq")["lp_seq"] is None  # summed over the batch
    assert engine.facts("normalised", "lp_seq")["lp_seq"] is None  # divided by the length: a mean


def test_a_module_read_for_its_functions_finds_a_function_tree_by_qualified_name(tmp_path):
    """RL109 reads a helper of another module whole (which names it builds shifted) from the tree parsed when asked."""
    import ast

    from rllint.analysis import summaries
    from rllint.settings import Settings

    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "data.py").write_text(
        "def build(ids):\n"
        "    return ids\n"
        "class Collator:\n"
        "    def __call__(self, batch):\n"
        "        def pad(x):\n"
        "            return x\n"
        "        return pad(batch)\n")
    summaries.clear_cache()
    _, module = summaries.load(str(tmp_path / "data.py"), Settings(root=tmp_path))
    summaries.clear_cache()
    assert "tree" not in vars(module)  # a read module holds no `ast` tree until a question needs one
    assert isinstance(module.function_tree("build"), ast.FunctionDef)
    assert module.function_tree("build").name == "build"
    assert module.function_tree("Collator.__call__.pad").name == "pad"
    assert module.function_tree("Collator") is None  # a class is no function
    assert module.function_tree("missing") is None
    assert module.function_tree("build.inner") is None


# ---- functions chosen at run time: a joined function value, a lookup table of functions ----

CHOICES = CAUSAL + """
    ref = AutoModelForCausalLM.from_pretrained("gpt2").requires_grad_(False)

    def live(ids):
        return policy(ids).logits

    def frozen(ids):
        with torch.no_grad():
            return ref(ids).logits

    TABLE = {"live": live, "frozen": frozen}
"""


def test_a_call_of_one_of_several_functions_returns_what_any_of_them_may_return():
    engine = Engine(CHOICES + """
    def step(ids, name, flag):
        chosen = live if flag else live
        either = live if flag else frozen
        a = chosen(ids)
        b = either(ids)
        c = TABLE[name](ids)
        fn = TABLE.get(name)
        if fn is None:
            raise KeyError(name)
        d = fn(ids)
        e = TABLE.get("live")(ids)
        return a, b, c, d, e

    step(batch, key, True)
    """)
    assert engine.facts("a", "grad", "rank") == {"grad": GRAPH, "rank": 3}
    assert len(engine.value("either").facts["candidates"]) == 2
    for joined in ("b", "c", "d"):  # one path with the policy's graph, one without: the gradient is unknown
        assert engine.facts(joined, "grad", "rank") == {"grad": None, "rank": 3}, joined
    assert engine.facts("e", "grad") == {"grad": GRAPH}  # a constant key: that item


MODULES = CAUSAL + """
    import torch.nn as nn

    class Live(nn.Module):
        def forward(self, ids):
            return policy(ids).logits

    class Halved(nn.Module):
        def forward(self, ids):
            return policy(ids).logits / 2

    class Frozen(nn.Module):
        def forward(self, ids):
            with torch.no_grad():
                return policy(ids).logits

    def build(name):
        if name == "live":
            return Live()
        return Halved()
"""


def test_a_call_of_one_of_several_project_modules_runs_the_forward_of_each():
    engine = Engine(MODULES + """
    def step(ids, name, flag):
        built = build(name).to("cuda")
        either = Live() if flag else Frozen()
        same = Live() if flag else Live()
        a = built(ids)
        b = either(ids)
        c = same(ids)
        return a, b, c

    step(batch, key, True)
    """)
    assert len(engine.value("built").facts["candidates"]) == 2  # what the factory returns, moved to a device
    assert engine.facts("a", "grad", "rank") == {"grad": GRAPH, "rank": 3}
    assert engine.facts("b", "grad", "rank") == {"grad": None, "rank": 3}  # one with the policy's graph, one without
    assert "candidates" not in engine.value("same").facts and engine.facts("c", "grad") == {"grad": GRAPH}


def test_instances_of_too_many_classes_or_of_no_project_class_are_not_candidates():
    classes = "".join(f"\n    class M{i}(nn.Module):\n        def forward(self, ids):\n            return ids\n"
                      for i in range(9))
    engine = Engine(MODULES + classes + """
    def pick(i):
        return [M0, M1, M2, M3, M4, M5, M6, M7, M8][i]()

    def many(i, flag):
        chosen = M0()
        for cls in (M1(), M2(), M3(), M4(), M5(), M6(), M7(), M8()):
            chosen = cls if flag else chosen
        return chosen

    def other(flag):
        either = Live() if flag else AutoModelForCausalLM.from_pretrained("gpt2")
        return either

    many(1, True)
    other(True)
    """)
    assert "candidates" not in engine.value("chosen").facts  # nine classes: which one is not known
    assert "candidates" not in engine.value("either").facts  # a pretrained model runs no project forward


def test_a_table_that_code_may_change_is_no_lookup_table():
    for change in ('TABLE["other"] = live', "TABLE.update(extra)", "register(TABLE)", "global TABLE"):
        engine = Engine(CHOICES + f"""
    def setup(extra):
        {change}

    def step(ids, name):
        c = TABLE[name](ids)
        d = TABLE.get(name)(ids)
        return c, d

    step(batch, key)
    """)
        assert engine.facts("c", "rank") == {"rank": None}, change
        assert engine.facts("d", "rank") == {"rank": None}, change


def test_log_probs_of_one_path_keep_the_graph_of_that_path():
    engine = Engine(CAUSAL + """
    ref = AutoModelForCausalLM.from_pretrained("gpt2").requires_grad_(False)

    def step(ids, adv, use_kl):
        logp = F.log_softmax(policy(ids).logits, -1).gather(-1, ids.unsqueeze(-1)).squeeze(-1)
        with torch.no_grad():
            ref_logp = F.log_softmax(ref(ids).logits, -1).gather(-1, ids.unsqueeze(-1)).squeeze(-1)
        if use_kl:
            kl = (logp - ref_logp).mean()
        else:
            kl = torch.tensor(0.0)
        penalty = 0.1 * kl
        cut = 0.1 * kl.detach()
        loss = -(logp * adv).mean() + penalty
        loss.backward()
    """)
    assert engine.facts("kl", "grad", "lp", "lp_some") == {"grad": None, "lp": (1, -1), "lp_some": True}
    assert engine.facts("penalty", "lp") == {"lp": (1, -1)}
    assert engine.facts("cut", "lp") == {"lp": None}  # detached: the policy's log-probs lost their graph
    assert engine.facts("loss", "grad", "lp") == {"grad": GRAPH, "lp": (1, -1)}


def test_settings_read_whole_from_yaml_answer_get_and_optional_sections(tmp_path):
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "run.yml").write_text("use_lora: true\nlora:\n  r: 8\n  dropout: 0.1\n")
    source = """
    import yaml

    with open("run.yml") as handle:
        config = yaml.safe_load(handle)
    lora = config.get("lora")
    missing = config.get("absent", 0.5)
    optional = config["lora"] if config["use_lora"] else None
    dropout = optional["dropout"]
    """
    path = tmp_path / "train.py"
    path.write_text(source)
    engine = Engine(source, path=str(path))
    assert engine.facts("lora", "type")["type"] == "dict"
    assert engine.facts("missing", "number") == {"number": 0.5}  # a key the file does not write: the default
    assert engine.facts("dropout", "number", "origin") == {"number": 0.1, "origin": "lora.dropout in run.yml"}


def test_a_parameter_left_at_none_takes_the_none_branch_in_a_call():
    engine = Engine(CAUSAL + """
    class Wrapper:
        def __init__(self, name, model_class=None):
            if model_class is None:
                model_class = AutoModelForCausalLM
            self.model = model_class.from_pretrained(name)

    wrapped = Wrapper("gpt2")
    inner = wrapped.model
    """)
    assert engine.facts("inner", "type", "arch") == {"type": "model", "arch": CAUSAL_LM}


def test_accelerate_prepare_hands_back_the_models_and_peft_adapters_and_sampling_are_events():
    engine = Engine(CAUSAL + """
    from accelerate import Accelerator
    from peft import LoraConfig, get_peft_model

    accelerator = Accelerator()
    adapted = get_peft_model(policy, LoraConfig(r=8, lora_dropout=0.05))
    plain = get_peft_model(policy, LoraConfig(r=8))
    prepared, opt = accelerator.prepare(adapted, optimizer)
    ids = prepared.generate(prompts, do_sample=True)
    """)
    assert engine.facts("prepared", "type", "arch") == {"type": "model", "arch": CAUSAL_LM}
    assert sorted(e.extra["p"].facts["number"] for e in engine.flow.dropouts) == [0.0, 0.05]  # PEFT's default: 0
    assert [engine.code(e.node) for e in engine.flow.generations] == ["prepared.generate(prompts, do_sample=True)"]


def _drawn(engine):
    """The temperatures of the tokens the file's functions draw by hand in their own context, by the code of the
    draw (None: not known)."""
    return sorted((engine.code(e.node), e.target.facts.get("number")) for e in engine.flow.draws if e.via is None)


def test_logits_divided_by_a_temperature_and_the_hand_written_draws_that_sample_them():
    engine = Engine(CAUSAL + """
    def draws(ids, t):
        logits = policy(ids).logits[:, -1, :]
        scaled = logits / 0.7
        probs = torch.softmax(scaled, dim=-1)
        a = torch.multinomial(probs, 1)
        b = torch.argmax(scaled - torch.log(-torch.log(torch.rand_like(scaled) + 1e-20) + 1e-20), dim=-1)
        q = torch.empty_like(probs).exponential_(1)
        c = probs.div(q).argmax(dim=-1)
        d = (logits + 0.5 * (-torch.log(-torch.log(torch.rand_like(logits))))).argmax(-1)
        e = torch.multinomial(F.softmax(logits / t, dim=-1), 1)
        return a, b, c, d, e

    draws(torch.zeros(1, 4, dtype=torch.long), 1.3)
    """)
    assert engine.facts("logits", "temperature")["temperature"][0].facts["number"] == 1.0  # raw
    assert engine.facts("scaled", "temperature")["temperature"][0].facts["number"] == 0.7
    assert engine.facts("probs", "temperature")["temperature"][1] == "weights"
    assert engine.facts("q", "noise") == {"noise": "exponential"}
    assert _drawn(engine) == [
        ("(logits + 0.5 * (-torch.log(-torch.log(torch.rand_like(logits))))).argmax(-1)", 0.5),
        ("probs.div(q).argmax(dim=-1)", 0.7),
        ("torch.argmax(scaled - torch.log(-torch.log(torch.rand_like(scaled) + 1e-20) + 1e-20), dim=-1)", 0.7),
        ("torch.multinomial(F.softmax(logits / t, dim=-1), 1)", 1.3),
        ("torch.multinomial(probs, 1)", 0.7)]


def test_what_draws_no_token_from_tempered_logits_is_no_draw_and_greedy_decoding_draws_at_zero():
    engine = Engine(CAUSAL + """
    def not_draws(ids, scores):
        logits = policy(ids).logits[:, -1, :]
        greedy = torch.argmax(logits / 0.7, dim=-1)
        gaussian = torch.argmax(logits + torch.randn_like(logits), dim=-1)
        uniform = torch.argmax(logits + torch.rand_like(logits), dim=-1)
        negated = torch.argmax(-logits - torch.log(-torch.log(torch.rand_like(logits))), dim=-1)
        unknown = torch.multinomial(torch.softmax(scores, dim=-1), 1)
        over_time = torch.multinomial(torch.softmax(policy(ids).logits / 0.7, dim=1)[:, :, 0], 1)
        return greedy, gaussian, uniform, negated, unknown, over_time
    """)
    assert _drawn(engine) == [("torch.argmax(logits / 0.7, dim=-1)", 0.0)]  # greedy decoding draws at 0


def test_a_gumbel_helper_draws_at_the_temperature_each_call_gives_it():
    """LLaDA's sampler: argmax of exp(logits) / E ** T, which is softmax(logits / T); T = 0 returns the logits."""
    engine = Engine(CAUSAL + """
    def add_gumbel_noise(logits, temperature):
        if temperature == 0:
            return logits
        logits = logits.to(torch.float64)
        noise = torch.rand_like(logits, dtype=torch.float64)
        gumbel_noise = (-torch.log(noise + 1e-10)) ** temperature
        return (logits.exp() + 1e-10) / (gumbel_noise + 1e-10)

    def generate(ids, temperature=0.0):
        logits = policy(ids).logits
        return torch.argmax(add_gumbel_noise(logits, temperature=temperature), dim=-1)

    def rollouts(ids):
        return generate(ids, temperature=0.6), generate(ids), generate(ids, 1.0)
    """)
    found = [(e.target.facts.get("number"), engine.code(e.via)) for e in engine.flow.draws if e.via is not None]
    assert sorted(found) == [(0.0, "generate(ids)"), (0.6, "generate(ids, temperature=0.6)"),
                             (1.0, "generate(ids, 1.0)")]  # at 0 the helper returns the logits: greedy


def test_comparisons_of_known_numbers_pick_the_branch_a_call_takes():
    engine = Engine("""
    def pick(t, low=0.5):
        if t == 0:
            return "greedy"
        if low < t <= 1:
            return 1.5
        return 2.5

    a, b, c = pick(0), pick(0.7), pick(3)
    """)
    assert engine.facts("a", "type") == {"type": "text"}
    assert engine.facts("b", "number") == {"number": 1.5}
    assert engine.facts("c", "number") == {"number": 2.5}


def test_setattr_by_a_name_the_code_writes_stores_it_and_by_any_other_name_unsets_the_defaults():
    engine = Engine("""
    from dataclasses import dataclass

    @dataclass
    class Config:
        temperature: float = 0.7
        lr: float = 1e-6

    def update(cfg, settings):
        for key, held in settings.items():
            if hasattr(cfg, key):
                setattr(cfg, key, held)
        return cfg

    def main(settings, path):
        config = Config()
        setattr(config, "lr", 3e-6)
        named = config.lr
        if path:
            config = update(config, settings)
        either = config.temperature
        return named, either
    """)
    assert engine.facts("named", "number") == {"number": 3e-6}
    assert engine.facts("either", "number") == {"number": None}  # the defaults hold on one path only


def test_a_caller_module_whose_top_level_reads_back_its_imports_keeps_one_flow(tmp_path):
    """Reading the callers of `Outer.__init__` builds run.py's flow, whose top level reads `Inner.cfg` and so asks
    for the callers of `Inner.__init__`, in run.py again: that is the flow being built, not a second one that
    would take over run.py's functions and miss what the first lookup analysed there (`later`)."""
    import ast

    import libcst as cst

    from rllint.analysis import summaries
    from rllint.analysis.flow import Flow
    from rllint.runner import FileContext
    from rllint.settings import Settings

    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "inner.py").write_text(
        "class Inner:\n"
        "    def __init__(self, cfg):\n"
        "        self.cfg = cfg\n"
        "    def reset(self):\n"
        "        self.cfg = None\n"
        "    def setting(self):\n"
        "        return self.cfg\n")
    (tmp_path / "outer.py").write_text(
        "class Outer:\n"
        "    def __init__(self, temperature):\n"
        "        self.temperature = temperature\n")
    (tmp_path / "run.py").write_text(
        "from inner import Inner\n"
        "from outer import Outer\n"
        "def main():\n"
        "    return Inner(1).setting()\n"
        "def later():\n"
        "    return Outer(0.5)\n"
        "main()\n")
    text = (tmp_path / "outer.py").read_text()
    summaries.clear_cache()
    outer = FileContext(str(tmp_path / "outer.py"), text, cst.parse_module(text), ast.parse(text),
                        Settings(root=tmp_path))
    flow = outer.fact(Flow)
    flow.analyze_all()
    given = [node for node in flow.values if isinstance(node, cst.Name) and node.value == "temperature"]
    assert flow.value(given[-1]).facts.get("number") == 0.5
    summaries.clear_cache()


def test_an_instance_holds_what_its_own_construction_stored_unless_another_method_stores_it_too():
    engine = Engine("""
    class Sampler:
        def __init__(self, temperature, steps):
            self.temperature = temperature
            self.steps = steps

        def restart(self):
            self.steps = 0

        def settings(self):
            return self.temperature, self.steps

    def main():
        cold, hot = Sampler(0.3, 8), Sampler(0.9, 8)
        t_cold, s_cold = cold.settings()
        t_hot, s_hot = hot.settings()
        return t_cold, t_hot, s_cold
    """)
    assert engine.facts("t_cold", "number") == {"number": 0.3}
    assert engine.facts("t_hot", "number") == {"number": 0.9}
    # `restart` stores it too: what this construction stored is not what the attribute holds wherever it is read
    assert engine.facts("s_cold", "number")["number"] != 8.0


def test_imports_inside_functions_and_blocks_name_what_they_import():
    """A lazy `import torch` inside a function, or an import in a `try` block, binds the library as a top-level
    import does; names imported to different objects in different functions stay unknown."""
    engine = Engine("""
    try:
        from transformers import AutoModelForCausalLM
    except ImportError:
        AutoModelForCausalLM = None

    def token_logps(model, ids):
        import torch
        logits = model(input_ids=ids).logits[:, :-1]
        return torch.log_softmax(logits.float(), dim=-1)

    def first():
        import numpy as xp
        return xp.zeros(3)

    def second():
        import torch as xp
        return xp.zeros(3)

    def third():
        import torch as tt
        return tt.zeros(3)

    def main(ids):
        policy = AutoModelForCausalLM.from_pretrained("gpt2")
        return token_logps(policy, ids)
    """)
    assert engine.facts("torch.log_softmax(logits.float(), dim=-1)", "content", "rank") == {
        "content": "logprobs", "rank": 3}
    assert engine.value("xp.zeros(3)", 0).facts.get("type") is None
    assert engine.value("xp.zeros(3)", 1).facts.get("type") is None
    assert engine.facts("tt.zeros(3)", "type") == {"type": "tensor"}


def test_min_and_max_of_numbers_are_numbers():
    """A coefficient clamped into a range (`min(hi, max(lo, c))`) stays a number; its value is known when
    every argument's is."""
    engine = Engine("""
    def schedule(coef, lo=0.01, hi=1.0):
        for _ in range(3):
            coef *= 1.5
            coef = min(hi, max(lo, coef))
        return min(hi, 2.0), abs(-lo)

    schedule(0.1)
    """)
    assert engine.facts("min(hi, max(lo, coef))", "type") == {"type": "number"}
    assert engine.facts("min(hi, 2.0)", "type", "number") == {"type": "number", "number": 1.0}
    assert engine.facts("abs(-lo)", "number") == {"number": 0.01}


def test_or_of_a_value_known_to_be_none_is_its_right_operand():
    engine = Engine("""
        def preset():
            return 0.65

        def build(given=None, other=0.3):
            chosen = given or preset()
            kept = other or preset()
            return chosen, kept
    """)
    assert engine.facts("given or preset()", "number")["number"] == 0.65
    assert engine.facts("other or preset()", "number")["number"] is None  # truthy or not: both may hold


def test_per_token_cross_entropy_of_logits_is_negated_log_probs_and_a_reduced_one_is_not():
    engine = Engine(CAUSAL + """
    class Objective:
        def __call__(self, out, targets, weights, frozen_logits):
            flat = out.logits.flatten(0, 1)
            token_nll = F.cross_entropy(flat, targets.flatten(), reduction="none")
            token_lp = -token_nll
            surrogate = (token_lp * weights).mean()
            mean_nll = F.cross_entropy(flat, targets.flatten())
            scores = F.cross_entropy(weights, targets, reduction="none")
            with torch.no_grad():
                anchor = -F.cross_entropy(frozen_logits.flatten(0, 1), targets.flatten(), reduction="none")
            return surrogate, mean_nll, scores, anchor

    def step(ids, advantages):
        surrogate, *_ = Objective()(policy(ids), ids, advantages.flatten(), policy(ids).logits.detach())
        (-surrogate).backward()
    """)
    assert engine.facts("token_nll", "logp", "lp", "rank") == {"logp": True, "lp": (-1, 0), "rank": 1}
    assert engine.facts("token_lp", "logp", "lp") == {"logp": True, "lp": (1, 0)}
    assert engine.facts("mean_nll", "logp", "lp") == {"logp": None, "lp": None}  # one loss, no token's log-prob
    assert engine.facts("scores", "logp") == {"logp": None}  # not a model's logits
    assert engine.facts("anchor", "logp", "lp") == {"logp": True, "lp": (0, 1)}
    assert len(engine.flow.policy_gradient_terms) == 1


def test_len_is_a_count_unless_the_file_binds_its_own_len():
    engine = Engine("""
    def counts(batch, groups):
        return len(batch), len(groups[0])

    def shadowed(len, batch):
        return len(batch)
    """)
    assert engine.facts("len(batch)", "type", occurrence=0) == {"type": "number"}
    assert engine.facts("len(groups[0])", "type") == {"type": "number"}
    assert engine.facts("len(batch)", "type", occurrence=1) == {"type": None}


def test_a_comparison_of_an_array_out_of_sight_holds_zeros_and_ones():
    """`ids != pad` of a batch this file does not type is a bool or a 0/1 mask; sliced, it is a mask still; `is`
    and `in` give Python bools only, and numbers compare to a bool of known truth."""
    engine = Engine("""
    def masks(batch, pad, names):
        keep = batch["ids"] != pad
        shifted = keep[:, 1:]
        present = pad is None
        listed = "x" in names
        return keep, shifted, present, listed, 3 > 2
    """)
    assert engine.facts("keep", "type", "content", occurrence=0) == {"type": "bool", "content": "mask"}
    assert engine.facts("shifted", "type", "content", occurrence=0) == {"type": None, "content": "mask"}
    assert engine.facts("present", "content", occurrence=0) == {"content": None}
    assert engine.facts("listed", "content", occurrence=0) == {"content": None}
    assert engine.facts("3 > 2", "content", "number") == {"content": None, "number": 1.0}


def test_min_of_one_iterable_is_not_a_number():
    """`min(xs)` of one argument takes an iterable; a number there is no clamp (and must not be folded)."""
    engine = Engine("""
    def scale(w=0.5):
        return min(w), max(w, key=abs)
    """)
    assert engine.facts("min(w)", "type") == {"type": None}


def test_a_function_named_inside_a_lambda_is_handed_on():
    """`evaluator = lambda m, t: run_eval(m, t, limit)`: the lambda runs `run_eval` wherever it is called, with
    arguments this file does not show, so `run_eval`'s parameters are not its defaults."""
    engine = Engine("""
    def run_eval(model, tokenizer, limit=8):
        return limit

    def attach(trainer):
        trainer.evaluator = lambda m, t: run_eval(m, t, 100)
    """)
    function = engine.flow.ir.functions["run_eval"]
    assert engine.flow.ir.escapes(function)
    assert engine.facts("limit", "number", occurrence=-1) == {"number": None}


def test_the_two_copies_of_a_read_module_share_its_parse_not_its_facts(tmp_path):
    """A module read as a helper and again to find callers is parsed once; a changed file is parsed afresh."""
    from rllint.analysis import summaries
    from rllint.analysis.flow import Flow
    from rllint.settings import Settings

    (tmp_path / "pyproject.toml").write_text("")
    helper = tmp_path / "helper.py"
    helper.write_text("def scale(x):\n    return x\n")
    settings = Settings(root=tmp_path)
    summaries.clear_cache()
    try:
        _, for_helpers = summaries.load(str(helper), settings)
        _, for_callers = summaries.load(str(helper), settings, for_callers=True)
        assert for_callers.module is for_helpers.module and for_callers is not for_helpers
        assert (for_helpers.for_callers, for_callers.for_callers) == (False, True)
        assert for_callers.fact(Flow) is not for_helpers.fact(Flow)
        helper.write_text("def scale(x, by=2.0):\n    return x * by\n")  # another size: another stamp
        _, changed = summaries.load(str(helper), settings, for_callers=True)
        assert changed.module is not for_helpers.module and "by=2.0" in changed.module.code
    finally:
        summaries.clear_cache()


def test_an_attribute_stored_by_methods_of_a_class_and_of_its_base_joins_every_store():
    engine = Engine("""
    class Base:
        def __init__(self):
            self.scale = 2.0
            self.rate = 0.5

    class Worker(Base):
        def reset(self):
            self.scale, self.rate = 2.0, 0.1

        def step(self):
            a = self.scale
            b = self.rate
            return a, b
    """)
    assert engine.facts("a", "type", "number") == {"type": "number", "number": 2.0}  # both stores agree
    assert engine.facts("b", "type", "number") == {"type": "number", "number": None}  # 0.5 or 0.1
    classes = engine.flow.ir.classes
    assert engine.flow.stored_elsewhere(classes["Worker"], "rate")  # `reset` stores it, besides `__init__`
    assert not engine.flow.stored_elsewhere(classes["Base"], "rate")  # only its `__init__` does


def test_lookup_tables_of_one_module_are_told_apart_name_by_name():
    """Every name's table question is answered from one walk: one name's uses must not count for another."""
    import textwrap

    import libcst as cst

    from rllint.analysis.ir import ModuleIR

    ir = ModuleIR(cst.parse_module(textwrap.dedent("""
        import registry
        A = {"x": 1, 2: 3}
        B = {"x": 1}
        C = {"x": 1}
        D = {k: 1 for k in "ab"}
        E = {"x": 1}
        E = {"y": 2}

        def use(k, cfg):
            cfg.B = 3
            B[k] = 2
            for key in C:
                pass
            f = {"x": 1}
            return A[k], A.get(k), len(C), k in D, E[k], cfg.C, registry[k], f[k]
    """)))
    assert [name for name in "ABCDE" if ir.table(name)] == ["A", "C"]
    assert ir.table("registry")  # imported, and only read here
    assert not ir.table("f") and not ir.table("missing")  # bound in a function; never bound


SETTINGS_CLASS = """
    import os
    from dataclasses import dataclass

    @dataclass
    class Conf:
        t: float = 0.7
        name: str = "gpt2"

    def apply(cfg, pairs):
        for item in pairs:
            setattr(cfg, item, 1.0)
        return cfg

    def overlay(cfg, table):
        for key, setting in table.items():
            if hasattr(cfg, key):
                setattr(cfg, key, setting)
        return cfg
"""


def test_an_object_built_with_a_field_on_one_path_only_holds_an_unknown_value_there():
    engine = Engine(SETTINGS_CLASS + """
    def build(flag):
        either = Conf()
        if flag:
            either = Conf(t=0.3)
        both = Conf(t=0.3) if flag else Conf(t=0.3)
        return either.t, both.t
    """)
    assert engine.facts("either.t", "number") == {"number": None}  # 0.3 on one path, the default 0.7 on the other
    assert engine.facts("both.t", "number") == {"number": 0.3}


def test_setattr_by_a_name_not_known_forgets_what_the_object_was_built_with():
    engine = Engine(SETTINGS_CLASS + """
    built = apply(Conf(t=0.3), names)
    kept = apply(Conf(t=0.3), [])
    read = (built.t, kept.t)
    """)
    assert engine.facts("built.t", "number") == {"number": None}
    assert engine.facts("kept.t", "number") == {"number": 0.3}  # a loop over a list known to be empty runs no pass


def test_a_loop_over_the_items_of_a_file_of_settings_runs_once_per_item(tmp_path):
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "run.yaml").write_text("t: 0.3\nextra: 5\n")
    engine = Engine(SETTINGS_CLASS + """
    import yaml
    from_file = overlay(Conf(), yaml.safe_load(open("run.yaml")))
    from_literal = overlay(Conf(), {"t": 0.3})
    read = (from_file.t, from_literal.t, hasattr(from_file, "t"), hasattr(from_file, "other"))
    """, path=str(tmp_path / "train.py"))
    assert engine.facts("from_file.t", "number") == {"number": 0.3}  # each key laid over the field of its name
    assert engine.facts('hasattr(from_file, "t")', "number") == {"number": 1}  # a declared field
    assert engine.facts('hasattr(from_file, "other")', "number") == {"number": None}  # set out of sight, maybe
    # a dict literal is no file of settings (its keys are not `complete`): the loop runs as any loop
    assert engine.facts("from_literal.t", "number") == {"number": None}


def test_a_layer_with_weights_after_a_cut_may_have_a_graph_one_without_or_frozen_has_none():
    """The weights of `nn.Linear` require gradient unless something freezes them: after a no_grad forward its
    output's gradient is unknown (the model that holds it may train it), not "none". An activation has no
    weights, and a layer frozen here adds none."""
    engine = Engine(CAUSAL + """
    features = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.GELU())
    squash = torch.nn.Tanh()
    fixed = torch.nn.Linear(8, 1)
    for p in fixed.parameters():
        p.requires_grad = False

    def probe(ids):
        with torch.no_grad():
            hidden = policy(input_ids=ids).logits
        learned = features(hidden)
        bounded = squash(hidden)
        frozen = fixed(hidden)
        return learned, bounded, frozen
    """)
    learned = engine.value("features(hidden)")
    assert learned.facts.get("grad") is None and learned.sources & engine.flow.opaque
    for code in ("squash(hidden)", "fixed(hidden)"):
        assert engine.facts(code, "grad") == {"grad": NO_GRAD}
        assert engine.value(code).facts.get("cut") is not None


def test_torch_min_of_two_tensors_is_elementwise_and_of_an_unknown_second_operand_unknown():
    """`torch.min(a, b)` of two tensors is their elementwise minimum, `x.max(dim)` a (values, indices) pair;
    with a second operand of unknown kind it may be either, so nothing is claimed (never an index tensor)."""
    engine = Engine("""
    import torch

    def surrogate(ratio, adv):  # called from out of sight: what the operands are is unknown
        unclipped = ratio * adv
        clipped = ratio.clamp(0.8, 1.2) * adv
        return torch.min(unclipped, clipped)

    def pick(logits):
        best, where = logits.max(-1)
        values, indices = torch.min(logits, dim=1)
        return torch.min(logits, logits * 2), best, where, indices

    pick(torch.randn(4, 8))
    """)
    assert engine.facts("torch.min(logits, logits * 2)", "type", "rank") == {"type": "tensor", "rank": 2}
    assert engine.facts("where", "content") == {"content": "ids"}
    assert engine.facts("indices", "content") == {"content": "ids"}
    unclear = engine.value("torch.min(unclipped, clipped)", 0)
    assert unclear.facts.get("type") is None and unclear.facts.get("items") is None



def test_the_module_ir_knows_the_parent_of_every_node_from_its_one_walk():
    import libcst as cst

    from rllint.analysis.ir import ModuleIR

    module = cst.parse_module("def f(x):\n    return print(x.mean())\n")
    ir = ModuleIR(module)
    call = module.body[0].body.body[0].body[0].value
    assert isinstance(call, cst.Call) and ir.parent(call.args[0]) is call
    assert ir.parent(call.args[0].value.func) is call.args[0].value  # `x.mean` held by the call `x.mean()`
    assert ir.parent(module) is None and ir.parent(cst.Name("elsewhere")) is None
