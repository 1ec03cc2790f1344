"""RL315 as a query over engine facts: text rendered as a generation prompt (`domains.text`), the truncation side
of the tokenizer object (`domains.models`), and the sampler its ids reach (`Flow.generations`)."""
import textwrap

import pytest

from rllint.analysis.facts import GENERATION_PROMPT
from rllint.runner import lint_files, lint_text
from rllint.settings import Settings
from tests.engine import Engine


def lines(source: str, path: str = "rollout_worker.py"):
    result = lint_text(textwrap.dedent(source), path, Settings(select=["RL315"]))
    assert result.errors == []
    return sorted(d.line for d in result.diagnostics)


def project(tmp_path, files, linted):
    (tmp_path / "pyproject.toml").write_text("")
    for name, text in files.items():
        (tmp_path / name).write_text(textwrap.dedent(text))
    result = lint_files([str(tmp_path / linted)], Settings(select=["RL315"], root=tmp_path), isolated=False)
    assert result.errors == []
    return sorted(d.line for d in result.diagnostics)


# ---------------------------------------------------------------- the engine: rendered generation prompts

RENDERS = """
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained("Qwen/Qwen2.5-0.5B-Instruct")


    def render(question):
        return tok.apply_chat_template([{"role": "user", "content": question}], tokenize=False,
                                       add_generation_prompt=True)


    class Holder:
        def __init__(self, question):
            self.prompt = render(question)
            self.group = 4 * [self.prompt]
            self.table = {"prompt": self.prompt}
            self.pair = [self.prompt, render(question)]
            self.hinted = f"{self.prompt}Think step by step."
            self.whole = tok.apply_chat_template([{"role": "user", "content": question}], tokenize=False)
"""


@pytest.mark.parametrize("code, rendered", [
    ("render(question)", True),  # a return of a project function
    ("self.prompt", True),  # an attribute
    ("self.group", False),  # the list: its element is the prompt
    ("self.hinted", False),  # an f-string makes other text
    ("self.whole", False),  # no add_generation_prompt: a whole conversation
])
def test_a_rendered_generation_prompt_is_known_as_the_same_text(code, rendered):
    engine = Engine(RENDERS)
    assert (engine.facts(code, "rendered")["rendered"] == GENERATION_PROMPT) is rendered


@pytest.mark.parametrize("code", ["self.group", "self.pair"])
def test_lists_of_a_rendered_prompt_hold_it_as_their_element(code):
    element = Engine(RENDERS).value(code).facts["element"]
    assert element.facts.get("rendered") == GENERATION_PROMPT


def test_a_mapping_holds_the_rendered_prompt_as_its_item():
    items = dict(Engine(RENDERS).value("self.table").facts["items"])
    assert items["prompt"].facts.get("rendered") == GENERATION_PROMPT


def test_a_tokenizer_handed_to_a_module_that_sets_only_its_padding_keeps_its_truncation_side():
    engine = Engine("""
        from transformers import AutoTokenizer


        class Prompts:
            def __init__(self, rows, tokenizer):
                self.rows = rows
                self.tokenizer = tokenizer


        def left_padded(tokenizer):
            tokenizer.padding_side = "left"
            return tokenizer


        def load(path):
            tok = AutoTokenizer.from_pretrained(path)
            data = Prompts([], tok)
            return tok
    """)
    assert engine.facts("tok", "truncation_side")["truncation_side"] == "default"


def test_a_side_another_tokenizer_is_built_with_is_not_a_side_of_this_one():
    engine = Engine("""
        from transformers import AutoTokenizer

        grader = AutoTokenizer.from_pretrained("my-org/grader", truncation_side="left", padding_side="left")
        policy_tok = AutoTokenizer.from_pretrained("Qwen/Qwen2.5-0.5B-Instruct")
    """)
    assert engine.facts("policy_tok", "padding_side", "truncation_side") == {
        "padding_side": "default", "truncation_side": "default"}


# ---------------------------------------------------------------- RL315 reports

ROLLOUT = """
    import torch
    from trl import GRPOConfig

    from setup_tokenizer import load_tokenizer
    from transformers import AutoModelForCausalLM


    def rollout(policy, tok, question, width, group):
        chat = [{"role": "user", "content": question}]
        rendered = tok.apply_chat_template(conversation=chat, add_generation_prompt=True, tokenize=False)
        batch = tok(text=%s, max_length=width, truncation="only_first", padding=True, return_tensors="pt")
        with torch.no_grad():
            return policy.generate(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"],
                                   do_sample=True, max_new_tokens=512)


    def main():
        tok = load_tokenizer("Qwen/Qwen2.5-0.5B-Instruct")
        policy = AutoModelForCausalLM.from_pretrained("Qwen/Qwen2.5-0.5B-Instruct")
        rollout(policy, tok, "What is 2 + 2?", 384, 8)
"""

SETUP = """
    from transformers import AutoTokenizer


    def load_tokenizer(path):
        tokenizer = AutoTokenizer.from_pretrained(path)
        tokenizer.padding_side = "left"
        %s
        return tokenizer
"""


@pytest.mark.parametrize("texts", ["[rendered, rendered]", "group * [rendered]", "rendered"])
def test_a_function_cuts_a_rendered_prompt_of_a_tokenizer_another_module_configures(tmp_path, texts):
    files = {"setup_tokenizer.py": SETUP % "", "rollout.py": ROLLOUT % texts}
    assert project(tmp_path, files, "rollout.py") == [12]


def test_the_left_side_set_on_another_tokenizer_of_the_file_is_not_the_side_of_this_one(tmp_path):
    """The reward model's tokenizer truncates on the left; the policy's, loaded in another module, on the right."""
    rollout = ROLLOUT % "[rendered] * group" + """
        reward_tok = AutoTokenizer.from_pretrained("my-org/rm", truncation_side="left")
    """
    rollout = rollout.replace("from transformers import AutoModelForCausalLM",
                              "from transformers import AutoModelForCausalLM, AutoTokenizer")
    files = {"setup_tokenizer.py": SETUP % "", "rollout.py": rollout}
    assert project(tmp_path, files, "rollout.py") == [12]


@pytest.mark.parametrize("setting", ['tokenizer.truncation_side = "left"', "tokenizer.truncation_side = side()"])
def test_a_truncation_side_another_module_sets_on_the_object_is_not_reported(tmp_path, setting):
    files = {"setup_tokenizer.py": SETUP % setting + "\n\ndef side():\n    return 'left'\n",
             "rollout.py": ROLLOUT % "[rendered] * group"}
    assert project(tmp_path, files, "rollout.py") == []


HEAD = """
    import torch
    import torch.nn.functional as F
    from transformers import AutoModelForCausalLM, AutoModelForSequenceClassification, AutoTokenizer
    from trl import GRPOConfig

    tokenizer = AutoTokenizer.from_pretrained("Qwen/Qwen2.5-1.5B-Instruct")
    actor = AutoModelForCausalLM.from_pretrained("Qwen/Qwen2.5-1.5B-Instruct")
    scorer = AutoModelForSequenceClassification.from_pretrained("my-org/rm")
    LIMIT = 640


    class Sampler:
        def __init__(self, n):
            self.n = n

        def prompt(self, chat, generation=True):
            return tokenizer.apply_chat_template(chat, tokenize=False, add_generation_prompt=generation)
"""


def test_a_method_cuts_a_repeated_rendered_prompt_it_samples_from():
    source = HEAD + """
        def sample(self, chat):
            enc = tokenizer([self.prompt(chat)] * self.n, return_tensors="pt", truncation=True, max_length=LIMIT)
            return actor.generate(**enc, do_sample=True)
    """
    assert lines(source) == [21]


@pytest.mark.parametrize("body", [
    # the side chosen on the object
    """tokenizer.truncation_side = "left"
            enc = tokenizer([self.prompt(chat)] * self.n, return_tensors="pt", truncation=True, max_length=LIMIT)
            return actor.generate(**enc, do_sample=True)""",
    # not rendered with a generation prompt
    """enc = tokenizer([self.prompt(chat, False)] * self.n, return_tensors="pt", truncation=True, max_length=LIMIT)
            return actor.generate(**enc, do_sample=True)""",
    # the prompt with more text after it: not the rendered text
    """enc = tokenizer([self.prompt(chat) + "<think>"] * self.n, return_tensors="pt", truncation=True,
                            max_length=LIMIT)
            return actor.generate(**enc, do_sample=True)""",
    # the ids only reach a reward model
    """enc = tokenizer([self.prompt(chat)] * self.n, return_tensors="pt", truncation=True, max_length=LIMIT)
            return scorer(**enc).logits""",
    # ... or a supervised loss
    """enc = tokenizer([self.prompt(chat)] * self.n, return_tensors="pt", truncation=True, max_length=LIMIT)
            logits = actor(input_ids=enc.input_ids).logits
            F.cross_entropy(logits[:, :-1].flatten(0, 1), enc.input_ids[:, 1:].flatten()).backward()""",
    # prompts measured against the limit
    """kept = [c for c in chat if len(tokenizer(self.prompt(c)).input_ids) <= LIMIT]
            enc = tokenizer([self.prompt(c) for c in kept], return_tensors="pt", truncation=True, max_length=LIMIT,
                            padding=True)
            return actor.generate(**enc, do_sample=True)""",
])
def test_look_alikes_are_not_reported(body):
    source = HEAD + f"""
        def sample(self, chat):
            {body}
    """
    assert lines(source) == []


VERL = """
    import torch
    from transformers import AutoModelForCausalLM
    from verl.utils.tokenizer import hf_tokenizer


    class Generator:
        def __init__(self, path, limit):
            self.tokenizer = hf_tokenizer(path, %s)
            self.tokenizer.padding_side = "left"
            self.model = AutoModelForCausalLM.from_pretrained(path)
            self.limit = limit

        def run(self, chats):
            inputs = self.tokenizer.apply_chat_template(chats, tokenize=True, add_generation_prompt=True, padding=True,
                                                        truncation=True, max_length=self.limit, return_tensors="pt",
                                                        return_dict=True)
            with torch.no_grad():
                return self.model.generate(**inputs, do_sample=True, max_new_tokens=2048)
"""


@pytest.mark.parametrize("settings, reported", [
    ("trust_remote_code=True", [15]),  # verl loads it with `from_pretrained`: transformers' right side
    ("trust_remote_code=True, truncation_side='left'", []),
    ("**settings", []),  # keywords not known: a side may be among them
])
def test_a_tokenizer_verl_loads_truncates_as_from_pretrained_does(settings, reported):
    source = VERL % settings
    if "**settings" in settings:
        source = source.replace("def __init__(self, path, limit):", "def __init__(self, path, limit, settings):")
    assert lines(source) == reported


WORKER_GROUP = """
    from transformers import AutoTokenizer
    from verl import DataProto
    from verl.single_controller.ray import RayWorkerGroup

    tokenizer = AutoTokenizer.from_pretrained("Qwen/Qwen2.5-7B-Instruct")


    def main(config, pool, worker, chats):
        %s
        inputs = tokenizer.apply_chat_template(chats, add_generation_prompt=True, padding=True, truncation=True,
                                               max_length=config.prompt_length, return_tensors="pt",
                                               return_dict=True, tokenize=True)
        data = DataProto.from_dict({"input_ids": inputs["input_ids"], "attention_mask": inputs["attention_mask"]})
        return wg.generate_sequences(data)
"""


def test_prompts_cut_for_the_rollouts_of_a_verl_worker_group_are_reported():
    """verl's `RayWorkerGroup` samples with `generate_sequences` the prompt ids it is given (verl's
    main_generation.py, copied into many repositories)."""
    built = "wg = RayWorkerGroup(resource_pool=pool, ray_cls_with_init=worker)"
    assert lines(WORKER_GROUP % built) == [11]


@pytest.mark.parametrize("made", [
    "wg = worker",  # an object from out of sight: a method named like a sampler is no evidence that it samples
    "wg = make_group(pool, worker)",  # a project function of unknown result
])
def test_a_method_named_like_a_sampler_on_an_object_of_unknown_kind_is_not_a_sampler(made):
    assert lines(WORKER_GROUP % made) == []


def test_a_peft_model_merged_back_is_the_model_that_samples():
    """`PeftModel.from_pretrained(base, adapter).merge_and_unload()` is the base model (its adapters merged): its
    `generate` samples, so the cut prompt is reported."""
    source = """
        from peft import PeftModel
        from transformers import AutoModelForCausalLM, AutoTokenizer
        from trl import GRPOConfig

        tokenizer = AutoTokenizer.from_pretrained("Qwen/Qwen2.5-1.5B-Instruct")


        def load(path, adapter):
            model = AutoModelForCausalLM.from_pretrained(path)
            if adapter:
                model = PeftModel.from_pretrained(model, adapter).merge_and_unload()
            return model


        def sample(model, chat):
            text = tokenizer.apply_chat_template(chat, tokenize=False, add_generation_prompt=True)
            enc = tokenizer([text] * 4, return_tensors="pt", padding=True, truncation=True, max_length=512)
            return model.generate(**enc, do_sample=True)


        sample(load("Qwen/Qwen2.5-1.5B-Instruct", "out/lora"), [])
    """
    assert lines(source) == [18]
    engine = Engine(source)
    assert engine.facts("PeftModel.from_pretrained(model, adapter)", "type", "lora") == {"type": "model", "lora": True}
    assert engine.facts("PeftModel.from_pretrained(model, adapter).merge_and_unload()", "type", "lora") == \
        {"type": "model", "lora": None}


MLX_ROLLOUT = """
    from mlx_lm import generate, load
    from trl import GRPOConfig

    model, tokenizer = load("mlx-community/Qwen2.5-0.5B-Instruct-4bit")
    %s

    def rollout(chat):
        text = tokenizer.apply_chat_template(chat, tokenize=False, add_generation_prompt=True)
        ids = tokenizer(text, truncation=True, max_length=256)["input_ids"]
        return generate(model, tokenizer, prompt=ids, max_tokens=128)
"""


def test_mlx_lm_generate_samples_from_the_ids_it_is_given():
    assert lines(MLX_ROLLOUT % "") == [10]


def test_a_project_function_named_generate_is_not_mlx_lms():
    """The same call of a function of the project that shares mlx_lm's name: what it does is its body's."""
    own = "\n\n    def generate(model, tokenizer, prompt, max_tokens):\n        return prompt[:max_tokens]\n"
    assert lines(MLX_ROLLOUT.replace("from mlx_lm import generate, load", "from mlx_lm import load") % own) == []
