"""Tokenizer padding facts (RL316): the side a tokenizer call pads on, whether it encodes a batch, and whether
the file's models are decoder-only."""
import ast
import textwrap

import libcst as cst

from rllint.analysis.syntax import walk
from rllint.analysis.text import Scopes
from rllint.analysis.tokenizer import TokenizerFacts
from rllint.runner import FileContext
from rllint.settings import Settings


def context(source: str) -> FileContext:
    text = textwrap.dedent(source)
    return FileContext("x.py", text, cst.parse_module(text), ast.parse(text), Settings())


def encode_call(file: FileContext) -> cst.Call:
    """The call named `enc` is bound to (the file's one tokenizer call in these tests)."""
    for node in walk(file.module, into_functions=True):
        if isinstance(node, cst.Assign) and isinstance(node.targets[0].target, cst.Name) and \
                node.targets[0].target.value == "enc":
            return node.value
    raise AssertionError("no `enc = ...`")


def side(source: str):
    file = context(source)
    return file.fact(TokenizerFacts).padding_side(encode_call(file))[0]


def test_a_qwen_tokenizer_loaded_here_and_never_set_pads_right():
    assert side("""
        from transformers import AutoTokenizer
        tk = AutoTokenizer.from_pretrained("Qwen/Qwen3-4B")
        enc = tk(texts, padding="longest")
    """) == "right"


def test_a_left_default_family_pads_left_and_mixed_families_are_unknown():
    assert side("""
        tk = AutoTokenizer.from_pretrained("google/gemma-2-2b-it")
        enc = tk(texts, padding=True)
    """) == "left"
    assert side("""
        tk = AutoTokenizer.from_pretrained(MODEL)
        CHOICES = ["Qwen/Qwen2.5-7B", "mistralai/Mistral-7B-v0.1"]
        enc = tk(texts, padding=True)
    """) is None


def test_distilled_deepseek_qwen_uses_llamas_tokenizer_and_pads_left():
    assert side("""
        tk = AutoTokenizer.from_pretrained("deepseek-ai/DeepSeek-R1-Distill-Qwen-1.5B")
        enc = tk(texts, padding=True)
    """) == "left"


def test_a_tokenizer_the_file_is_given_has_no_known_side():
    assert side("""
        MODEL = "Qwen/Qwen2.5-0.5B"
        def sample(tk, texts):
            enc = tk(texts, padding=True)
    """) is None


def test_the_side_set_by_assignment_constructor_or_call_wins_over_the_family():
    assert side("""
        tk = AutoTokenizer.from_pretrained("Qwen/Qwen2.5-0.5B")
        tk.padding_side = "left"
        enc = tk(texts, padding=True)
    """) == "left"
    assert side("""
        tk = AutoTokenizer.from_pretrained("gpt2", padding_side="left")
        enc = tk(texts, padding=True)
    """) == "left"
    assert side("""
        tk = AutoTokenizer.from_pretrained("Qwen/Qwen2.5-0.5B")
        enc = tk(texts, padding=True, padding_side="left")
    """) == "left"
    assert side("""
        tk = AutoTokenizer.from_pretrained("meta-llama/Llama-2-7b-hf")
        tk.padding_side = "right"
        enc = tk(texts, padding=True)
    """) == "right"


def test_a_side_set_on_another_tokenizer_leaves_this_ones_default():
    assert side("""
        tk = AutoTokenizer.from_pretrained("meta-llama/Llama-2-7b-chat-hf")
        rm_tok = AutoTokenizer.from_pretrained("OpenAssistant/reward-model-deberta-v3-large")
        rm_tok.padding_side = "right"
        enc = tk(texts, padding=True)
    """) == "left"  # the reward tokenizer's side says nothing of `tk`, a Llama 2 one
    assert side("""
        tk = AutoTokenizer.from_pretrained("Qwen/Qwen2.5-0.5B")
        self.rm_tok.padding_side = "right"
        enc = tk(texts, padding=True)
    """) == "right"
    assert side("""
        tk = AutoTokenizer.from_pretrained("Qwen/Qwen2.5-0.5B")
        gen_tok = tk
        gen_tok.padding_side = "left"
        enc = tk(texts, padding=True)
    """) is None  # maybe the same tokenizer under another name


def test_a_computed_side_or_both_sides_are_unknown():
    assert side("""
        tk = AutoTokenizer.from_pretrained("Qwen/Qwen2.5-0.5B")
        tk.padding_side = args.side
        enc = tk(texts, padding=True)
    """) is None
    assert side("""
        tk = AutoTokenizer.from_pretrained("Qwen/Qwen2.5-0.5B")
        def train_batch(x):
            tk.padding_side = "right"
        def gen_batch(x):
            tk.padding_side = "left"
        enc = tk(texts, padding=True)
    """) is None


def batched(source: str):
    file = context(source)
    call = encode_call(file)
    return file.fact(TokenizerFacts).batched(call.args[0].value, file.fact(Scopes).module)


def test_batches_lists_comprehensions_appended_lists_and_slices():
    assert batched("enc = tk([a, b], padding=True)") is True
    assert batched("enc = tk([f'Q: {q}' for q in questions], padding=True)") is True
    assert batched("""
        batch = []
        for row in rows:
            batch.append(row["prompt"])
        enc = tk(batch, padding=True)
    """) is True
    assert batched("""
        pool = [r["q"] for r in rows]
        enc = tk(pool[i:i + 8], padding=True)
    """) is True


def test_one_text_is_no_batch_and_an_opaque_value_is_unknown():
    assert batched("enc = tk('Solve: 2 + 2', padding=True)") is False
    assert batched("enc = tk([question], padding=True)") is False
    assert batched("""
        question = row["question"]
        text = f"Q: {question}"
        enc = tk(text, padding=True)
    """) is False
    assert batched("enc = tk(load_texts(), padding=True)") is None


def test_decoder_only_from_causal_lm_classes_or_named_families_not_seq2seq():
    facts = context("""
        m = AutoModelForCausalLM.from_pretrained(path)
    """).fact(TokenizerFacts)
    assert facts.decoder_only is True
    assert context('m = AutoModelForSeq2SeqLM.from_pretrained("google/flan-t5-base")').fact(
        TokenizerFacts).decoder_only is False
    assert context('m = load("Qwen/Qwen2.5-0.5B")').fact(TokenizerFacts).decoder_only is True
    assert context("m = load(path)").fact(TokenizerFacts).decoder_only is False


def test_names_the_file_loads_a_tokenizer_into():
    facts = context("""
        tk = AutoTokenizer.from_pretrained(path)
        self.tok = transformers.GPT2TokenizerFast.from_pretrained("gpt2")
        model = AutoModelForCausalLM.from_pretrained(path)
    """).fact(TokenizerFacts)
    assert facts.tokenizers == {"tk", "self.tok"}
    assert facts.loads_tokenizer is True


def test_vllm_and_sglang_engines_by_their_constructors():
    facts = context("""
        import sglang as sgl
        from vllm import LLM
        self.llm = LLM(model=path)
        eng = sgl.Engine(model_path=path)
        model = AutoModelForCausalLM.from_pretrained(path)
    """).fact(TokenizerFacts)
    assert facts.engines == {"self.llm", "eng"}
    assert facts.vllm_engines == {"self.llm"}
