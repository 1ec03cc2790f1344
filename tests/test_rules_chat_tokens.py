"""RL307, RL311, RL312, RL313: chat templates, padding and sampling settings, reported in RL code only,
from evidence of what the text or mask is for, and once per cause."""
import ast
import textwrap

import libcst as cst
import pytest

from rllint.analysis.tokenizer import TokenizerFacts
from rllint.runner import FileContext, lint_text
from rllint.settings import Settings

# A line of RL vocabulary: what makes a file of helpers RL post-training code.
RL = "def policy_loss(logps, advantages):\n    return -(logps * advantages).mean()\n"


def lines(source: str, code: str, path: str = "rollout.py"):
    result = lint_text(textwrap.dedent(source), path, Settings(select=[code]))
    return [d.line for d in result.diagnostics]


def adds_bos(source: str):
    text = textwrap.dedent(source)
    return FileContext("x.py", text, cst.parse_module(text), ast.parse(text), Settings()).fact(TokenizerFacts).adds_bos


# ---- RL307 --------------------------------------------------------------------------------------

CHATML = '''
def build(question):
    return "<|im_start|>user\\n" + question + "<|im_end|>\\n<|im_start|>assistant\\n"
'''


def test_hand_written_template_in_rl_code_is_reported():
    assert lines(RL + CHATML, "RL307") == [5]


def test_hand_written_template_outside_rl_code_is_not():
    """An image pipeline's text-encoder template is not an RL prompt."""
    assert lines(CHATML, "RL307", "pipeline_image.py") == []


def test_a_prompt_module_of_a_language_model_is_reported_when_the_rule_is_named():
    """Named, RL307 reads modules that load a tokenizer or build a generation engine too (a trainer imports
    them); a module that only imports such a library is not one; `ALL` keeps the default form, RL code only."""
    module = "from transformers import AutoTokenizer\ntok = AutoTokenizer.from_pretrained('Qwen/Qwen2.5-7B')\n" + CHATML
    assert lines(module, "RL307", "prompts.py") == [5]
    assert lines("from vllm import SamplingParams\n" + CHATML, "RL307", "prompts.py") == []
    found = lint_text(textwrap.dedent(module), "prompts.py", Settings(select=["ALL"]))
    assert [d.code for d in found.diagnostics] == []


def test_hand_written_template_in_tests_is_a_fixture():
    assert lines(RL + CHATML, "RL307", "tests/test_prompts.py") == []


def test_assistant_message_content_is_a_reply():
    assert lines(RL + '''
def example(question, trace):
    return [{"role": "user", "content": question},
            {"role": "assistant", "content": "<|im_start|>think\\n" + trace}]


def example_dict(trace):
    return dict(role="assistant", content="<|im_start|>answer\\n" + trace)
''', "RL307") == []


def test_marker_read_only_by_parsing_calls():
    assert lines(RL + '''
def no_think(rendered):
    user_turn = "<|im_start|>user"
    if user_turn in rendered:
        return rendered[rendered.find(user_turn):]
    return rendered
''', "RL307") == []


def test_marker_that_also_builds_text_is_reported():
    assert lines(RL + '''
def ask(rendered, question):
    user_turn = "<|im_start|>user\\n"
    if user_turn in rendered:
        return rendered
    return user_turn + question
''', "RL307") == [5]


# ---- RL311 --------------------------------------------------------------------------------------

PAD_IS_EOS = '''
tokenizer.pad_token = tokenizer.eos_token
'''


def test_pad_mask_given_only_as_attention_mask_is_not_reported():
    assert lines(RL + PAD_IS_EOS + '''
def logps(model, full_ids):
    attention_mask = (full_ids != tokenizer.pad_token_id).long()
    return model(input_ids=full_ids, attention_mask=attention_mask).logits


def logps_inline(model, full_ids):
    return model(full_ids, attention_mask=(full_ids != tokenizer.pad_token_id).long()).logits
''', "RL311") == []


def test_pad_mask_put_under_the_attention_key_of_a_batch_is_not_reported():
    assert lines(PAD_IS_EOS + '''
def collate(rows):
    ids = torch.nn.utils.rnn.pad_sequence(rows, batch_first=True, padding_value=tokenizer.pad_token_id)
    keep = ids.ne(tokenizer.pad_token_id)
    return {"input_ids": ids, "attention_mask": keep}


def collate_inline(ids, labels):
    return dict(input_ids=ids, labels=labels), {"attention_mask": (ids != tokenizer.pad_token_id).int()}
''', "RL311", "train_sft.py") == []


def test_pad_mask_under_another_key_of_a_batch_is_reported():
    assert lines(PAD_IS_EOS + '''
def collate(ids):
    keep = ids.ne(tokenizer.pad_token_id)
    return {"input_ids": ids, "attention_mask": keep, "loss_mask": keep}


def collate_inline(ids, mask):
    return {"attention_mask": mask, "completion_mask": (ids != tokenizer.pad_token_id).int()}
''', "RL311", "train_sft.py") == [5, 10]


def test_pad_mask_that_also_masks_the_loss_is_reported():
    assert lines(RL + PAD_IS_EOS + '''
def loss(model, full_ids, advantages):
    attention_mask = (full_ids != tokenizer.pad_token_id).long()
    logps = model(full_ids, attention_mask=attention_mask).logits
    return -(logps * advantages * attention_mask).sum() / attention_mask.sum()
''', "RL311") == [7]


@pytest.mark.parametrize("holder, reported", [
    ("processor.tokenizer", False),  # another object the file loads: its own pad token
    ("self.tokenizer", True),  # the one made pad = eos, under the name it is stored as
    ("tok", True),  # a parameter: may be that tokenizer
])
def test_pad_mask_of_the_tokenizer_whose_pad_is_eos(holder, reported):
    """The pad id compared must be that of a tokenizer the file made pad = eos, or one it may be: a processor
    loaded beside it keeps its own pad token."""
    assert lines(RL + f'''
from transformers import AutoProcessor, AutoTokenizer

class Labeller:
    def __init__(self, name):
        self.tokenizer = AutoTokenizer.from_pretrained(name)
        self.tokenizer.pad_token = self.tokenizer.eos_token
        self.processor = processor = AutoProcessor.from_pretrained(name)

    def labels_of(self, full_ids, tok):
        labels = full_ids.clone()
        labels[full_ids == {holder}.pad_token_id] = -100
        return labels
'''.replace("processor.tokenizer", "self.processor.tokenizer"), "RL311") == ([14] if reported else [])


LABELS = '''
def labels_of(full_ids):
    labels = full_ids.clone()
    labels[full_ids == tokenizer.pad_token_id] = -100
    return labels
'''


def test_pad_mask_labels_are_reported():
    assert lines(PAD_IS_EOS + LABELS, "RL311", "train_sft.py") == [6]


def test_pad_mask_in_test_helpers_is_not_reported():
    assert lines(PAD_IS_EOS + LABELS, "RL311", "pkg/test_utils/training.py") == []


@pytest.mark.parametrize("fallback", [
    "if tokenizer.pad_token is None:\n    tokenizer.pad_token = tokenizer.eos_token\n",
    "tokenizer.pad_token = tokenizer.pad_token or tokenizer.eos_token\n",
    "tokenizer.pad_token_id = (\n    tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id\n)\n",
    "tokenizer.pad_token = tokenizer.eos_token if tokenizer.pad_token is None else tokenizer.pad_token\n",
])
def test_eos_as_a_fallback_pad_is_not_known_to_pad(fallback):
    """Only tokenizers without a pad token of their own (Llama, not Qwen) take the fallback."""
    assert lines(fallback + LABELS, "RL311", "train_sft.py") == []


# ---- RL312 --------------------------------------------------------------------------------------

def render_and_tokenize(model: str) -> str:
    return RL + f'''
tokenizer = AutoTokenizer.from_pretrained("{model}")


def encode(messages):
    text = tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    return tokenizer(text, return_tensors="pt")
'''


@pytest.mark.parametrize("model", ["meta-llama/Llama-3.1-8B-Instruct", "google/gemma-2-2b-it",
                                   "deepseek-ai/DeepSeek-R1-Distill-Qwen-7B"])
def test_rendered_text_tokenized_again_for_a_bos_model(model):
    assert lines(render_and_tokenize(model), "RL312") == [9]


@pytest.mark.parametrize("model", ["Qwen/Qwen2.5-7B-Instruct", "/data/models/Qwen2.5-Coder-3B-Instruct", "gpt2"])
def test_tokenizers_without_bos_are_not_reported(model):
    assert lines(render_and_tokenize(model), "RL312") == []


def test_model_not_named_in_the_file_is_not_reported():
    assert lines(render_and_tokenize("{args.model}").replace('"{args.model}"', "args.model"), "RL312") == []


def test_models_of_both_kinds_are_mixed_evidence():
    source = render_and_tokenize("meta-llama/Llama-3.1-8B-Instruct") + 'JUDGE = "Qwen/Qwen2.5-72B-Instruct"\n'
    assert lines(source, "RL312") == []


def test_one_render_tokenized_twice_is_one_finding():
    assert lines(RL + '''
tokenizer = AutoTokenizer.from_pretrained("meta-llama/Llama-3.1-8B-Instruct")


def encode(messages):
    text = tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    length = len(tokenizer.encode(text))
    return tokenizer(text, return_tensors="pt"), length
''', "RL312") == [9]


STRIPPED = RL + '''
tokenizer = AutoTokenizer.from_pretrained("meta-llama/Llama-3.1-8B-Instruct")


def encode(batch):
    texts = [tokenizer.apply_chat_template(m, tokenize=False, add_generation_prompt=True) for m in batch]
    {strip}
    return tokenizer({text}, return_tensors="pt", padding=True)
'''


@pytest.mark.parametrize("strip, text", [
    ("", "[t.replace('<|begin_of_text|>', '') for t in texts]"),
    ("texts = [t[len(tokenizer.bos_token):] if t.startswith(tokenizer.bos_token) else t for t in texts]", "texts"),
    ("bos = tokenizer.bos_token\n    texts = list(t.lstrip(bos) for t in texts)", "texts"),
])
def test_text_whose_bos_was_stripped_is_not_reported(strip, text):
    """One BOS is left: the one the tokenizer adds."""
    assert lines(STRIPPED.format(strip=strip, text=text), "RL312") == []


@pytest.mark.parametrize("strip, text", [
    ("", "[t.removeprefix('<|start_header_id|>') for t in texts]"),
    ("texts = [t.replace(tokenizer.eos_token, '') for t in texts]", "texts"),
    ("clean = [t.removeprefix(tokenizer.bos_token) for t in texts]", "texts"),
    ("texts = [t.strip() for t in texts]", "texts"),
])
def test_a_strip_of_something_else_or_of_another_copy_is_still_reported(strip, text):
    assert lines(STRIPPED.format(strip=strip, text=text), "RL312") == [10]


def test_adds_bos_from_the_models_the_file_names():
    assert adds_bos('m = "meta-llama/Llama-3.2-1B"') is True
    assert adds_bos('m = "Qwen/Qwen3-8B"') is False
    assert adds_bos('m = "my-org/policy-7b"') is None
    assert adds_bos('m = "a llama and a qwen walk into a bar"') is None  # prose names no model


@pytest.mark.parametrize("source", ['prompt = TEMPLATES["llama3"]', 'style = styles.get("mistral-instruct", "plain")',
                                    'cfg.pop("gemma_chat")'])
def test_a_key_that_looks_up_an_entry_names_no_model(source):
    """A string that indexes a mapping names the entry; the run loads its value."""
    assert adds_bos(source) is None
    assert adds_bos(source + '\nm = "Qwen/Qwen3-1.7B"') is False


@pytest.mark.parametrize("source", ['MODELS = {"small": "meta-llama/Llama-3.2-1B"}\nm = MODELS["small"]',
                                    'm = os.environ.get("MODEL", "google/gemma-2-2b-it")'])
def test_the_value_a_lookup_finds_or_defaults_to_names_a_model(source):
    assert adds_bos(source) is True


# ---- RL313 --------------------------------------------------------------------------------------

FIXED_LENGTH = '''
params = SamplingParams(n=8, max_tokens=1024, ignore_eos=True)
'''


def test_ignore_eos_in_rl_code_is_reported():
    assert lines(RL + FIXED_LENGTH, "RL313") == [4]


@pytest.mark.parametrize("path", ["tests/rollout/run_vllm.py", "benchmark_throughput.py"])
def test_ignore_eos_in_tests_and_other_code_is_not(path):
    source = FIXED_LENGTH if path.startswith("bench") else RL + FIXED_LENGTH
    assert lines(source, "RL313", path) == []


def test_rendered_text_given_to_a_vllm_engine_as_text():
    source = RL + '''
from vllm import LLM
ENGINE = LLM(model="google/gemma-2-9b-it")


def as_prompt(tokenizer, turns):
    return tokenizer.apply_chat_template(turns, tokenize=False, add_generation_prompt=True)


def sample(tokenizer, dialogues, params):
    queue = []
    for turns in dialogues:
        queue.append(as_prompt(tokenizer, turns))
    return ENGINE.generate(queue, params)


def sample_ids(tokenizer, dialogues, params):
    ids = [tokenizer.apply_chat_template(t, add_generation_prompt=True) for t in dialogues]
    return ENGINE.generate([{"prompt_token_ids": i} for i in ids], params)


def chat(dialogues, params):
    return ENGINE.chat(dialogues, params)
'''
    assert lines(source, "RL312") == [16]


def test_a_generate_that_is_not_a_vllm_engine_is_not_one():
    source = RL + '''
MODEL = "meta-llama/Llama-3.1-8B-Instruct"


def sample(tokenizer, client, turns):
    text = tokenizer.apply_chat_template(turns, tokenize=False, add_generation_prompt=True)
    return client.generate(text)
'''
    assert lines(source, "RL312") == []


def test_a_vllm_engine_of_a_model_without_bos_is_not_reported():
    source = RL + '''
from vllm import LLM
ENGINE = LLM(model="Qwen/Qwen2.5-7B-Instruct")


def sample(tokenizer, turns):
    return ENGINE.generate([tokenizer.apply_chat_template(turns, tokenize=False, add_generation_prompt=True)])
'''
    assert lines(source, "RL312") == []


def test_think_prefill_after_a_render_helper():
    source = RL + '''
def as_prompt(tokenizer, turns):
    return tokenizer.apply_chat_template(turns, tokenize=False, add_generation_prompt=True)


def prompts(tokenizer, dialogues):
    return [as_prompt(tokenizer, t) + "<think>\\n" for t in dialogues]
'''
    assert lines(source, "RL308") == [9]


def test_template_named_prompt_format_strings_are_hand_written():
    source = RL + '''
CHATML_TEMPLATE = "<|im_start|>user\\n{q}<|im_end|>\\n<|im_start|>assistant\\n"
JINJA_LIKE = "<|im_start|>{role}\\n{content}<|im_end|>"


def build(q):
    return CHATML_TEMPLATE.format(q=q)


def configure(tokenizer):
    tokenizer.chat_template = JINJA_LIKE
'''
    assert lines(source, "RL307") == [4]


def test_special_tokens_registered_through_named_lists():
    source = '''
from transformers import AutoTokenizer
tok = AutoTokenizer.from_pretrained("Qwen/Qwen2.5-0.5B")
FORMAT_TAGS = ("<plan>", "</plan>")
tok.add_tokens(FORMAT_TAGS, special_tokens=True)
extra = {"additional_special_tokens": ["<calc>"] + ["</calc>"]}
tok.add_special_tokens(extra)


def texts(completion_ids):
    return tok.batch_decode(completion_ids, skip_special_tokens=True)
'''
    result = lint_text(textwrap.dedent(source), "rollout.py", Settings(select=["RL304"]))
    assert [(d.line, d.message.split(" removes the registered special tokens ")[1].split(" from")[0])
            for d in result.diagnostics] == [(11, "<plan>, </plan>, <calc>, ...")]
