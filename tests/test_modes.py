"""Model modes at a point (train / eval reached along statements, loops, helpers and callers) and dropout
evidence (RL317)."""
import ast
import textwrap

import libcst as cst

from rllint.analysis.modes import EVAL, ENTRY, TRAIN, UNKNOWN, Dropout, ModelModes
from rllint.analysis.syntax import walk
from rllint.runner import FileContext
from rllint.settings import Settings


def context(source: str) -> FileContext:
    text = textwrap.dedent(source)
    return FileContext("x.py", text, cst.parse_module(text), ast.parse(text), Settings())


def modes(source: str, model: str = "m"):
    """The modes `model` may be in at the call of `sample(...)`, with the line of the call that set each."""
    file = context(source)
    functions = {}
    target = None
    for node in walk(file.module, into_functions=True):
        if isinstance(node, cst.FunctionDef):
            for inner in walk(node):
                functions[id(inner)] = node
        if isinstance(node, cst.Call) and isinstance(node.func, cst.Name) and node.func.value == "sample":
            target = node
    settings = file.fact(ModelModes).at(target, model, functions.get(id(target)))
    code = file.module.code_for_node
    return {(s.mode, code(s.node) if s.node is not None else None) for s in settings}


def test_straight_line_the_last_setting_wins():
    assert modes("""
        m.train()
        m.eval()
        sample(m)
    """) == {(EVAL, "m.eval()")}
    assert modes("""
        m.eval()
        m.train(mode=True)
        sample(m)
    """) == {(TRAIN, "m.train(mode=True)")}
    assert modes("""
        m.train(False)
        sample(m)
    """) == {(EVAL, "m.train(False)")}


def test_a_setting_late_in_a_loop_reaches_its_top_on_the_next_turn():
    assert modes("""
        m.eval()
        while running:
            sample(m)
            m.train()
    """) == {(EVAL, "m.eval()"), (TRAIN, "m.train()")}


def test_branches_join():
    assert modes("""
        m.train()
        if evaluating:
            m.eval()
        sample(m)
    """) == {(TRAIN, "m.train()"), (EVAL, "m.eval()")}


def test_other_models_and_nothing_set_leave_the_entry_mode():
    assert modes("""
        critic.train()
        sample(m)
    """) == {(ENTRY, None)}


def test_a_helper_leaves_what_it_sets_through_its_parameter_or_self():
    assert modes("""
        def prepare(net):
            net.train()

        def loop():
            for x in xs:
                sample(m)
                prepare(m)
    """) == {(ENTRY, None), (TRAIN, "net.train()")}
    assert modes("""
        class Runner:
            def fit(self):
                self.switch()
                sample(self.pi)

            def switch(self):
                self.pi.eval()
    """, model="self.pi") == {(EVAL, "self.pi.eval()")}


def test_a_wrapper_bound_to_a_name_is_the_same_model():
    assert modes("""
        policy.train()
        gen = accelerator.unwrap_model(policy)
        sample(gen)
    """, model="gen") == {(TRAIN, "policy.train()")}
    assert modes("""
        def roll(self):
            self.actor.train()
            with unwrap_model_for_generation(self.actor, self.acc) as live:
                sample(live)
    """, model="live") == {(TRAIN, "self.actor.train()")}
    assert modes("""
        policy.train()
        gen = build_copy(policy)
        sample(gen)
    """, model="gen") == {(ENTRY, None)}


def test_the_mode_at_the_callers_of_the_function_counts():
    assert modes("""
        def roll(policy):
            return sample(policy)

        model.train()
        roll(model)
    """, model="policy") == {(TRAIN, "model.train()")}


def test_handing_the_model_to_code_outside_the_file_makes_the_mode_unknown():
    assert modes("""
        m.train()
        run_validation(m)
        sample(m)
    """) == {(UNKNOWN, None)}
    assert modes("""
        m.train()
        opt = AdamW(m.parameters())
        print(m)
        sample(m)
    """) == {(TRAIN, "m.train()")}


def dropout(source: str):
    facts = context(source).fact(Dropout)
    return facts.active, facts.why


def test_lora_dropout_above_zero_through_a_constant_is_active():
    assert dropout("""
        P = 0.1
        cfg = LoraConfig(r=16, lora_dropout=P)
    """) == (True, "lora_dropout=0.1")


def test_zero_dropout_disabling_and_silence_are_not_active():
    assert dropout("cfg = LoraConfig(r=16, lora_dropout=0)")[0] is None
    assert dropout("""
        cfg = LoraConfig(r=16, lora_dropout=0.05)
        disable_dropout_in_model(model)
    """)[0] is False
    assert dropout("cfg = GRPOConfig(disable_dropout=True); lc = LoraConfig(lora_dropout=0.1)")[0] is False
    assert dropout('m = AutoModelForCausalLM.from_pretrained("Qwen/Qwen2.5-0.5B")')[0] is None


def test_model_dropout_settings_and_families():
    assert dropout('m = GPT2LMHeadModel.from_pretrained("gpt2")') == (True, "gpt2 has dropout 0.1")
    assert dropout('NAME = "facebook/opt-1.3b"\nm = AutoModelForCausalLM.from_pretrained(NAME)')[0] is True
    assert dropout('enc = tiktoken.get_encoding("gpt2")')[0] is None
    assert dropout("layer = nn.Dropout(p=0.2)") == (True, "nn.Dropout=0.2")
    assert dropout("config.attention_dropout = 0.1")[0] is True
    assert dropout('m = GPT2LMHeadModel.from_pretrained("gpt2"); m.config.resid_pdrop = 0.0')[0] is None
    assert dropout("head = nn.Dropout(cfg.p)")[0] is None
