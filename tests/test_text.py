"""Text roles, marker checks, regexes and extractions, reward functions and tokenizer facts."""
import ast
import textwrap

import libcst as cst
import pytest

from rllint.analysis.imports import Imports
from rllint.analysis.rewards import RewardFunctions
from rllint.analysis.text import (
    GEN_IDS, IDS, PROMPT, PROMPTS, TEXT, TEXTS, AnswerLookups, MarkerChecks, Scopes, extraction, per_completion_name,
    regex_of, vocab_role, walk,
)
from rllint.analysis.text_roles import TextRoles
from rllint.analysis.tokenizer import TokenizerFacts
from rllint.runner import FileContext
from rllint.settings import Settings


def analyse(source: str) -> FileContext:
    text = textwrap.dedent(source)
    return FileContext("example.py", text, cst.parse_module(text), ast.parse(text), Settings())


def function(file: FileContext, name: str) -> cst.FunctionDef:
    return next(n for n in walk(file.module, into_functions=True)
                if isinstance(n, cst.FunctionDef) and n.name.value == name)


def roles_in(file: FileContext, name: str) -> dict:
    """The role of every name read in `return` statements of a function, by its spelling."""
    fn = function(file, name)
    scope = file.fact(Scopes).of(fn)
    roles = file.fact(TextRoles)
    found = {}
    for ret in scope.returns:
        for element in ret.value.elements if isinstance(ret.value, cst.Tuple) else [ret.value]:
            found[file.module.code_for_node(element.value if isinstance(element, cst.Element) else element)] = \
                roles.role(element.value if isinstance(element, cst.Element) else element, scope)
    return found


def test_roles_from_decoding_generation_loops_and_parameters():
    file = analyse("""
        def rollout(policy, tokenizer, enc, completions, prompt_ids):
            out = policy.generate(**enc)
            new = out[:, enc.input_ids.shape[1]:]
            texts = tokenizer.batch_decode(new, skip_special_tokens=True)
            first = tokenizer.decode(new[0])
            for c in completions:
                pass
            pairs = [(p, t) for p, t in zip(prompt_ids, texts)]
            contents = [m[0]["content"] for m in completions]
            return out, new, texts, first, c, contents, prompt_ids, completions[0], texts[1:], p, t
    """)
    assert roles_in(file, "rollout") == {
        "out": GEN_IDS, "new": GEN_IDS, "texts": TEXTS, "first": TEXT, "c": TEXT, "contents": TEXTS,
        "prompt_ids": PROMPT, "completions[0]": TEXT, "texts[1:]": TEXTS, "p": PROMPT, "t": TEXT,
    }


def test_a_name_bound_to_something_else_keeps_no_role():
    file = analyse("""
        def judge(requests, url, completion):
            response = requests.post(url)
            completion = completion.strip()
            return response, completion
    """)
    assert roles_in(file, "judge") == {"response": None, "completion": TEXT}


@pytest.mark.parametrize("name, role", [
    ("completion", TEXT), ("solution_str", TEXT), ("completions", TEXTS), ("responses", TEXTS),
    ("completion_ids", GEN_IDS), ("response_ids", GEN_IDS), ("generated", GEN_IDS), ("input_ids", IDS),
    ("completion_mask", IDS), ("prompt_ids", PROMPT), ("prompts", PROMPTS), ("question", None), ("text", None),
])
def test_vocabulary_roles(name, role):
    assert vocab_role(name) == role


@pytest.mark.parametrize("name, per_completion", [
    ("completions", True), ("ground_truths", True), ("reward_funcs", True), ("reward_weights", True),
    ("prompts_P", True), ("rewards", True), ("names", False), ("metrics_list", False), ("reward_model", False),
    ("completion_ids", False),
])
def test_per_completion_names(name, per_completion):
    assert per_completion_name(name) is per_completion


def test_marker_checks_collect_membership_count_affixes_and_partition_separators():
    file = analyse("""
        END = "</think>"

        def f(text):
            head, sep, tail = text.partition(END)
            if not sep:
                return ""
            if "<answer>" in text and text.count("####") == 1 and text.endswith("<think>"):
                return tail
            return text.split("</think>")[1]
    """)
    scope = file.fact(Scopes).of(function(file, "f"))
    checks = file.fact(MarkerChecks)
    assert checks.checked(scope) == {"</think>", "<answer>", "####", "<think>"}
    assert checks.checks_reasoning_open(scope)


def regexes(source: str):
    file = analyse(source)
    scopes, imports = file.fact(Scopes), file.fact(Imports)
    found = []
    for node in walk(file.module, into_functions=True):
        if isinstance(node, cst.Call):
            regex = regex_of(node, imports, scopes, scopes.module)
            if regex is not None:
                found.append((regex.pattern, regex.dotall, regex.wildcard()))
    return found


def test_regex_patterns_flags_and_wildcards():
    assert regexes(r"""
        import re
        from re import compile as rc
        P = r"<think>.*?</think>"
        A = re.compile(P)
        B = rc(r"(?s)<think>.+</think>")
        re.sub(P, "", text, flags=re.M | re.S)
        re.search(r"<think>[\s\S]*</think>\.", text, re.I)
        re.findall(r"[.*]", text, my_flags)
        A.match(text)
    """) == [
        ("<think>.*?</think>", False, True),
        ("(?s)<think>.+</think>", True, True),
        ("<think>.*?</think>", True, True),
        (r"<think>[\s\S]*</think>\.", False, False),
        ("[.*]", None, False),
        ("<think>.*?</think>", False, True),
    ]


def extractions(source: str):
    file = analyse(source)
    scopes = file.fact(Scopes)
    found = []
    for node in walk(file.module, into_functions=True):
        if isinstance(node, cst.Subscript):
            result = extraction(node, scopes, scopes.module)
            if result is not None:
                found.append((result.kind, result.marker, result.index))
    return found


def test_extractions_after_a_marker():
    assert extractions("""
        M = "####"
        a = t.split("</think>")[1]
        b = t.split(M, 1)[-1]
        c = t.rsplit(sep="<answer>")[-1]
        d = t.partition("</think>")[2]
        e = t.rpartition("####")[-1]
        f = t[t.find("</think>") + 8:]
        g = t.split("</think>")[0]
        h = t.split(x)[1]
        i = t[5:]
    """) == [
        ("split", "</think>", 1), ("split", "####", -1), ("rsplit", "<answer>", -1),
        ("partition", "</think>", 2), ("rpartition", "####", 2), ("find", "</think>", None),
    ]


def test_reward_functions_by_signature_registration_and_name():
    file = analyse("""
        from functools import partial
        from trl import GRPOTrainer

        def fmt(completions, **kwargs): ...
        def compute_score(data_source, solution_str, ground_truth, extra_info=None): ...
        def correctness(prompts, completions, answer): ...
        def length_check(completion: str) -> float: ...
        def judge(completion): ...
        def reward_model_forward(batch): ...
        def helper(x): ...
        def accuracy_reward(completion: str) -> float: ...

        funcs = [correctness, partial(length_check)]
        REWARDS = {"judge": judge}
        trainer = GRPOTrainer(model="m", reward_funcs=funcs)
    """)
    rewards = file.fact(RewardFunctions)
    found = {name: rewards.is_reward(function(file, name)) for name in (
        "fmt", "compute_score", "correctness", "length_check", "judge", "reward_model_forward", "helper",
        "accuracy_reward")}
    assert found == {"fmt": True, "compute_score": True, "correctness": True, "length_check": True, "judge": True,
                     "reward_model_forward": False, "helper": False, "accuracy_reward": True}
    assert rewards.defines_any
    assert {name: rewards.takes_batch(function(file, name)) for name in ("fmt", "compute_score", "accuracy_reward")} \
        == {"fmt": True, "compute_score": False, "accuracy_reward": False}


def test_reward_values_through_returns_appends_and_conditions():
    file = analyse("""
        def a(completions, **kwargs):
            return [1.0 if c else 0.0 for c in completions]

        def b(completions, **kwargs):
            out = []
            for c in completions:
                out.append(1 if c else -1)
            return out

        def c(completion: str) -> float:
            return float(completion == "x")

        def d(completions, **kwargs):
            out = []
            for c in completions:
                score = 0.0
                score += 0.5
                out.append(score)
            return out

        def e(completions, answer, **kwargs):
            return [len(c) for c in completions]
    """)
    rewards = file.fact(RewardFunctions)
    assert [rewards.values(function(file, name)) for name in "abcde"] == [
        {1.0, 0.0}, {1.0, -1.0}, {0.0, 1.0}, None, None]


def test_tokenizer_facts():
    file = analyse("""
        tok.add_special_tokens({"additional_special_tokens": ["<|im_start|>", "<answer>"], "pad_token": "<pad>"})
        tok.add_tokens(["<tool>"], special_tokens=True)
        tok.add_tokens(["<plain>"])
        if tok.pad_token is None:
            tok.pad_token = tok.eos_token

        def render(messages):
            text = tok.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
            ids = tok.apply_chat_template(messages, tokenize=True)
            text2 = text.rstrip() + "<think>"
            many = [tok.apply_chat_template(m, tokenize=False) for m in messages]
            return text, ids, text2, many
    """)
    facts = file.fact(TokenizerFacts)
    assert facts.custom_tokens == ["<answer>", "<tool>"]
    assert not facts.pad_is_eos  # EOS only as a fallback for tokenizers without a pad token of their own
    scope = file.fact(Scopes).of(function(file, "render"))
    assert sorted(facts.rendered_names(scope)) == ["many", "text", "text2"]


def test_a_distinct_pad_token_is_not_eos():
    file = analyse("""
        tok.pad_token = "<|finetune_right_pad_id|>"
        tok.add_special_tokens({"pad_token": "<pad>"})
    """)
    assert not file.fact(TokenizerFacts).pad_is_eos
    assert file.fact(TokenizerFacts).custom_tokens == []


def test_a_reward_functions_text_parameter_is_the_completion():
    file = analyse("""
        def judge_reward(resp, reference):
            return resp

        def http_status(resp):
            return resp
    """)
    assert roles_in(file, "judge_reward") == {"resp": TEXT}
    assert roles_in(file, "http_status") == {"resp": None}


# ---- where text comes from, answer lookups, tokenizer facts of issue 10 -------------------------------------------

def _template_source(file, function_name: str):
    """The render call that the first argument of the last call in `function_name` comes from."""
    fn = function(file, function_name)
    scope = file.fact(Scopes).of(fn)
    call = scope.calls[-1]
    return file.fact(TokenizerFacts).rendered(call.args[0].value, scope)


def test_text_sources_follow_appends_helpers_concatenation_and_callers():
    file = analyse("""
        def make(tok, conv):
            return tok.apply_chat_template(conv, tokenize=False, add_generation_prompt=True)

        def by_append(tok, convs, engine):
            batch = []
            for conv in convs:
                batch.append(make(tok, conv) + "\\n")
            return engine.run(batch)

        def by_augmented(tok, conv, engine):
            text = "Solve: "
            text += make(tok, conv)
            return engine.run(text)

        def by_caller(prompt, engine):
            return engine.run(prompt)

        def caller(tok, conv, engine):
            return by_caller(f"{make(tok, conv)}", engine)

        def plain(question, engine):
            items = [question]
            items.insert(0, "system")
            return engine.run(items)
    """)
    assert [_template_source(file, name) is not None for name in ("by_append", "by_augmented", "by_caller", "plain")] \
        == [True, True, True, False]


def test_a_parameter_is_followed_only_when_every_caller_gives_the_value():
    file = analyse("""
        def helper(text, engine):
            return engine.run(text)

        def one(tok, conv, engine):
            return helper(tok.apply_chat_template(conv, tokenize=False), engine)

        def two(question, engine):
            return helper(question, engine)
    """)
    assert _template_source(file, "helper") is None


def test_completion_text_keeps_its_role_through_pieces_and_extraction_helpers():
    file = analyse("""
        import re

        def body_of(reply):
            reply = reply.strip()
            found = re.search(r"<answer>(.*)</answer>", reply)
            if found is None:
                return None
            return found.group(1)

        def mixed(reply, other):
            return reply if len(reply) > 3 else other

        def reward(completions, **kwargs):
            for c in completions:
                pass
            return c.rsplit("</think>", 1)[-1], body_of(c), mixed(c, "x"), body_of("literal"), c.split("\\n")
    """)
    assert roles_in(file, "reward") == {
        'c.rsplit("</think>", 1)[-1]': TEXT, "body_of(c)": TEXT, 'mixed(c, "x")': None,
        'body_of("literal")': None, 'c.split("\\n")': None,
    }


def test_marker_checks_tell_membership_from_position_lookups():
    file = analyse("""
        def f(text):
            at = text.find("####")
            if "<answer>" in text:
                return text[at:]
            return text
    """)
    scope = file.fact(Scopes).of(function(file, "f"))
    checks = file.fact(MarkerChecks)
    assert checks.checked(scope) == {"####", "<answer>"}
    assert checks.checked(scope, positions=False) == {"<answer>"}
    assert checks.checks(scope, "####") and not checks.checks(scope, "####", positions=False)


def test_answer_lookups_by_regex_position_split_membership_and_last_number():
    file = analyse("""
        import re
        NUM = re.compile(r"[-0-9.,]+")

        def f(out, gold, note):
            m = re.search(r"The answer is: (.*)", out)
            at = gold.rfind("\\\\boxed")
            head = note.split("####")[0]
            if "<answer>" in head:
                pass
            nums = NUM.findall(out)
            words = re.findall(r"[a-z]+", out)
            return nums[-1], float(re.findall(r"\\d+", gold)[-1].strip()), words[-1], nums[0]
    """)
    scope = file.fact(Scopes).of(function(file, "f"))
    lookups = file.fact(AnswerLookups)
    assert lookups.searched(scope) == {"out": ["The answer is: (.*)"]}
    assert lookups.located(scope) == {"gold": ["\\boxed"]}
    assert lookups.attempted(scope) == {"out", "gold", "note", "head"}
    returned = scope.returns[0].value.elements
    assert [lookups.last_number(e.value, scope) for e in returned] == ["out", "gold", None, None]


def test_tokenizer_facts_of_truncation_engines_and_named_token_lists():
    file = analyse("""
        import vllm
        from vllm import LLM as Engine

        tok = AutoTokenizer.from_pretrained("m", truncation_side="left")
        tok.truncation_side = SIDE
        ids = tok(text, truncation=True, truncation_side="right")
        engine = Engine(model="m")
        self.llm = vllm.LLM("m")
        other = make_engine()
        TAGS = ["<answer>", "</answer>"]
        MORE = TAGS + ["<tool>"]
        SPECIAL = {"additional_special_tokens": MORE}
        tok.add_special_tokens(SPECIAL)
        TWICE = ["<a>"]
        TWICE = ["<b>"]
        tok.add_tokens(TWICE, special_tokens=True)
    """)
    facts = file.fact(TokenizerFacts)
    assert facts.vllm_engines == {"engine", "self.llm"}
    assert facts.custom_tokens == ["<answer>", "</answer>", "<tool>"]


# ---------------------------------------------------------------- the file's calls and functions, one walk

def test_call_sites_give_the_function_or_module_each_call_is_in():
    file = analyse("""
        def score(text):
            return grade(text)

        class Judge:
            weight = grade("class body")

            def run(self, text):
                def inner(t):
                    return grade(t)
                return grade(text) + inner(text)

        total = grade("module")
    """)
    scopes = file.fact(Scopes)
    owners = sorted(owner.name.value if isinstance(owner, cst.FunctionDef) else "(module)"
                    for _, owner in scopes.call_sites("grade"))
    assert owners == ["(module)", "inner", "run", "score"]  # the class body's call belongs to no scope
    run = function(file, "run")
    assert [s.node for _, s in scopes.calls_named("inner")] == [run]
    assert scopes.calls_named("missing") == []


def test_calls_in_decorators_and_defaults_belong_to_no_scope():
    file = analyse("""
        @register(name=tag("reward"))
        def reward(text, limit=tag("default")):
            return tag(text)
    """)
    owners = [owner for _, owner in file.fact(Scopes).call_sites("tag")]
    assert owners == [function(file, "reward")]


def test_functions_named_finds_methods_and_nested_functions():
    file = analyse("""
        def parse(x):
            return x

        class A:
            def parse(self, x):
                def parse(y):
                    return y
                return parse(x)
    """)
    assert len(file.fact(Scopes).functions_named("parse")) == 3
    assert file.fact(Scopes).functions_named("absent") == []


def test_comparisons_cover_functions_classes_and_the_module():
    file = analyse("""
        flag = a == b

        class C:
            same = c is d

            def m(self):
                return e in f
    """)
    assert [file.module.code_for_node(c) for c in file.fact(Scopes).comparisons()] == ["a == b", "c is d", "e in f"]
