"""Tokenizer facts of a file: custom special tokens it registers, whether padding is the EOS
token, which values are chat templates rendered to text, and on which side a tokenizer call pads.

These decide whether a decode strips the tags a reward parser needs (RL304), whether a
pad-id mask also hides the real EOS (RL311), whether rendered text gets a second BOS
(RL312: only where the file names the model and its tokenizer adds one) or a second
`<think>` (RL308), and whether a batch of prompts reaches `generate` padded on the right (RL316).
"""
from __future__ import annotations

import ast
import re
from typing import Dict, Iterator, List, Optional, Set, Tuple

import libcst as cst

from rllint.analysis.domains.text import SAMPLER
from rllint.analysis.facts import DEFAULT_SIDE, DETACHED, NO_GRAD, PADDING_SIDE, TOKENIZER
from rllint.analysis.flow import Event, Flow
from rllint.analysis.imports import Imports
from rllint.analysis.loss import LossSlice
from rllint.analysis.nodes import AstNodes
from rllint.analysis.roles import POLICY, ModelRoles, header
from rllint.analysis.syntax import dotted, keyword, positional, walk
from rllint.analysis.text import (GEN_IDS, PROMPT, PROMPTS, TEXT, TEXTS, Scope, Scopes, TextSources,
                                  call_tail, literal_text, number)
from rllint.analysis.text_roles import TextRoles

# Tokens that begin a sequence, and tokens that end a turn or pad it (a cut at one of them removes what
# skip_special_tokens would).
BOS_TOKENS = ("<|begin_of_text|>", "<s>", "<bos>", "<｜begin▁of▁sentence｜>")
END_TOKENS = ("<|im_end|>", "<|eot_id|>", "<|end_of_text|>", "<|endoftext|>", "<end_of_turn>", "<|end|>", "</s>",
              "<pad>", "[PAD]", "<|pad|>", "<|padding|>", "<eos>")
# Chat-template control and padding tokens: registering them is tokenizer set-up, and
# stripping them from decoded text is what skip_special_tokens is for.
CONTROL_TOKENS = BOS_TOKENS + END_TOKENS + ("<|im_start|>", "<|start_header_id|>", "<|end_header_id|>",
                                            "<start_of_turn>", "<|user|>", "<|assistant|>", "<|system|>", "[INST]",
                                            "[/INST]", "<unk>")


# Model families by whether their tokenizer adds a BOS token with `add_special_tokens=True` and writes one in
# its chat template. DeepSeek's distilled Qwen models use DeepSeek's tokenizer, so DeepSeek is looked for first.
_ADDS_BOS = re.compile(r"llama|mistral|mixtral|gemma|zephyr|deepseek|vicuna", re.I)
_NO_BOS = re.compile(r"qwen|qwq|gpt-?2|pythia|gpt-neo|gpt-j|smollm", re.I)
_MODEL_ID = re.compile(r"^[\w.\-/~:]+$")  # a hub id or a path, not prose
# Model families by the padding side their tokenizer has when nothing sets it: Llama, Gemma and Mistral tokenizer
# classes pad on the left (DeepSeek's distilled Qwen models use Llama's), Qwen's, GPT-2's (which GPT-Neo and GPT-J
# use) and GPT-NeoX's on the right (the transformers default; their saved configs do not change it). Llama 3 ships a plain fast tokenizer
# (right), so "llama" says nothing; vision-language models come with processors of their own.
_PADS_LEFT = re.compile(r"llama|mistral|mixtral|gemma|deepseek|vicuna|zephyr|cohere|-vl|vl-|vision", re.I)
_PADS_RIGHT = re.compile(r"qwen|qwq|gpt-?2|pythia|gpt-neo|gpt-j|smollm", re.I)
# Generation that feeds the prompt to an encoder: padding on either side is harmless there.
_ENCODER_DECODER = re.compile(r"Seq2Seq|T5|Bart|Pegasus|Marian|EncoderDecoder|ConditionalGeneration|flan", re.I)


def _family(name: str, first: "re.Pattern[str]", second: "re.Pattern[str]") -> Optional[bool]:
    """True when a model id is of the `first` families, False of the `second`, None when it says neither."""
    if not _MODEL_ID.match(name):
        return None
    if first.search(name):
        return True
    return False if second.search(name) else None


def _adds_bos(name: str) -> Optional[bool]:
    return _family(name, _ADDS_BOS, _NO_BOS)


def _one(values: Set[Optional[bool]]) -> Optional[bool]:
    """The one answer every model a file names gives; None when they give none or disagree."""
    values = values - {None}
    return values.pop() if len(values) == 1 else None


def _strings(node: ast.expr, bound: Dict[str, List[ast.expr]], depth: int = 0) -> Optional[List[str]]:
    """The strings of a list literal, of a name bound once to one, or of a concatenation of those."""
    node = _resolve(node, bound)
    if depth > 8 or node is None:
        return None
    if isinstance(node, (ast.List, ast.Tuple)) and all(
            isinstance(e, ast.Constant) and isinstance(e.value, str) for e in node.elts):
        return [e.value for e in node.elts]
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = _strings(node.left, bound, depth + 1), _strings(node.right, bound, depth + 1)
        return None if left is None or right is None else left + right
    return None


def _resolve(node: ast.expr, bound: Dict[str, List[ast.expr]]) -> Optional[ast.expr]:
    """A name bound once in the file stands for its value; other names stand for nothing known."""
    if isinstance(node, ast.Name):
        values = bound.get(node.id, [])
        return values[0] if len(values) == 1 else None
    return node


_ENCODE_METHODS = {"encode", "encode_plus", "batch_encode_plus", "apply_chat_template"}
_VLLM_ENGINES = {"vllm.LLM", "vllm.entrypoints.llm.LLM"}
_SGLANG_ENGINES = {"sglang.Engine", "sglang.srt.entrypoints.engine.Engine"}


def _dotted(node: ast.expr) -> Optional[str]:
    """`self.llm` for an attribute chain of names; None for anything else."""
    if isinstance(node, ast.Attribute):
        head = _dotted(node.value)
        return None if head is None else f"{head}.{node.attr}"
    return node.id if isinstance(node, ast.Name) else None


def _qualified(node: ast.expr, aliases: Dict[str, str]) -> Optional[str]:
    """The dotted name `node` stands for, its first part resolved through the file's imports."""
    name = _dotted(node)
    if name is None:
        return None
    head, _, rest = name.partition(".")
    head = aliases.get(head, head)
    return f"{head}.{rest}" if rest else head


def _prefixes(dotted: str) -> Set[str]:
    """`a.b.c` -> {`a`, `a.b`, `a.b.c`}."""
    parts = dotted.split(".")
    return {".".join(parts[:i]) for i in range(1, len(parts) + 1)}


def _loads_tokenizer(node: ast.expr) -> bool:
    """`AutoTokenizer.from_pretrained(...)`, `transformers.GPT2TokenizerFast.from_pretrained(...)`."""
    func = _dotted(node.func) if isinstance(node, ast.Call) else None
    return func is not None and func.endswith(".from_pretrained") and "Tokenizer" in func


def _lookup_keys(nodes: AstNodes) -> Set[int]:
    """The string constants that index a mapping (`PROMPTS["DeepSeekZero"]`, `table.get("llama")`): the name of an
    entry, not a model the run loads (what it loads is the entry's value)."""
    keys = [n.slice for n in nodes.of(ast.Subscript)]
    keys += [n.args[0] for n in nodes.of(ast.Call)
             if isinstance(n.func, ast.Attribute) and n.func.attr in ("get", "pop", "setdefault") and n.args]
    return {id(k) for k in keys if isinstance(k, ast.Constant)}


def _mentions_attr(node: ast.expr, attrs: Tuple[str, ...]) -> bool:
    return any(isinstance(n, ast.Attribute) and n.attr in attrs for n in ast.walk(node))


class TokenizerFacts:
    """File-level facts from the `ast` tree; rendered-template values per scope on request."""

    def __init__(self, file) -> None:
        self.file = file
        self.scopes: Scopes = file.fact(Scopes)
        self.sources: TextSources = file.fact(TextSources)
        self.pad_is_eos = False
        # The names whose pad token the file makes the EOS (`tokenizer` of `tokenizer.pad_token = ...eos_token`),
        # and the names each bound to an object the file loads (`tok = AutoTokenizer.from_pretrained(...)`,
        # `processor = AutoProcessor.from_pretrained(...)`): two loads are two tokenizers.
        self.pad_eos_holders: Set[str] = set()
        self.loaded: Set[str] = set()
        self.custom_tokens: List[str] = []
        # `llm = LLM(...)`, `self.engine = vllm.LLM(...)`: names of vLLM engines, whose `generate` tokenizes text
        # prompts itself, with the tokenizer's special tokens
        self.vllm_engines: Set[str] = set()
        # `engine = sgl.Engine(...)` and the vLLM engines: inference engines, not models whose `generate` is HF's
        self.engines: Set[str] = set()
        aliases = file.fact(Imports).aliases
        nodes = file.fact(AstNodes)
        # The file's tokenizer adds a BOS: every model it names (hub ids, paths) is of a family whose tokenizer
        # does; None when it names none or families of both kinds.
        keys = _lookup_keys(nodes)
        names = [n.value for n in nodes.of(ast.Constant) if isinstance(n.value, str) and id(n) not in keys]
        self.adds_bos: Optional[bool] = _one({_adds_bos(n) for n in names})
        # The file's tokenizer pads on the left by default: every model it names is of a family whose tokenizer does
        # (False: every one pads on the right; None: it names none, or families of both kinds).
        self._pads_left: Optional[bool] = _one({_family(n, _PADS_LEFT, _PADS_RIGHT) for n in names})
        # `tk.padding_side = "left"`, `tk = from_pretrained(..., padding_side="left")`, `tok(..., padding_side=...)`:
        # the tokenizer (None: one the source does not name) -> the sides the file sets on it (None: one it computes)
        self.padding_sides: Dict[Optional[str], Set[Optional[str]]] = {}
        assigned_calls = {id(n.value): n for n in nodes.of(ast.Assign) if isinstance(n.value, ast.Call)}
        # `tk = AutoTokenizer.from_pretrained(...)`: the file loads a tokenizer itself (its side is the file's to
        # know), into these names
        self.loads_tokenizer = False
        self.tokenizers: Set[str] = {name for node in nodes.of(ast.Assign) if _loads_tokenizer(node.value)
                                     for name in filter(None, (_dotted(t) for t in node.targets))}
        # The file builds an encoder-decoder (`AutoModelForSeq2SeqLM`, T5, BART) or names one
        built = [_dotted(c.func) or "" for c in nodes.of(ast.Call)]
        encoder_decoder = any(_ENCODER_DECODER.search(f) for f in built) or any(
            _MODEL_ID.match(n) and _ENCODER_DECODER.search(n) for n in names)
        # The file's models are decoder-only: it builds a causal LM or names decoder-only families, and builds or
        # names no encoder-decoder (T5, BART, `AutoModelForSeq2SeqLM`)
        self.decoder_only = not encoder_decoder and (
            any("CausalLM" in f for f in built) or self._pads_left is not None)
        # `if tokenizer.pad_token is None: tokenizer.pad_token = tokenizer.eos_token`, `pad_token or eos_token`: EOS
        # pads only tokenizers that have no pad token of their own (Llama, not Qwen); which one runs, the file may
        # not say, and then no finding rests on it.
        fallbacks = {id(n) for test in nodes.of(ast.If) if _mentions_attr(test.test, ("pad_token", "pad_token_id"))
                     for statement in test.body for n in ast.walk(statement)}
        bound: Dict[str, List[ast.expr]] = {}  # `tags = ["<answer>", "</answer>"]`: names and their values
        for node in nodes.of(ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    bound.setdefault(target.id, []).append(node.value)
        for node in nodes.of(ast.Assign, ast.Call):
            self._padding_side(node, assigned_calls)
            engine = _qualified(node.value.func, aliases) if isinstance(node, ast.Assign) and isinstance(
                node.value, ast.Call) else None
            if engine in _VLLM_ENGINES or engine in _SGLANG_ENGINES:
                names = set(filter(None, (_dotted(t) for t in node.targets)))
                self.engines.update(names)
                if engine in _VLLM_ENGINES:
                    self.vllm_engines.update(names)
            if isinstance(node, ast.Assign) and any(
                    isinstance(t, ast.Attribute) and t.attr in ("pad_token", "pad_token_id") for t in node.targets):
                if _mentions_attr(node.value, ("eos_token", "eos_token_id")) and id(node) not in fallbacks and \
                        not _fallback_expression(node.value):
                    self.pad_is_eos = True
                    self.pad_eos_holders.update(filter(None, (_dotted(t.value) for t in node.targets
                                                              if isinstance(t, ast.Attribute))))
            elif isinstance(node, ast.Assign) and isinstance(node.value, ast.Call) and \
                    (_dotted(node.value.func) or "").endswith(".from_pretrained"):
                self.loaded.update(filter(None, (_dotted(t) for t in node.targets)))
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
                tokens = _resolve(node.args[0], bound) if node.args else None
                if node.func.attr == "add_special_tokens" and isinstance(tokens, ast.Dict):
                    for key, value in zip(tokens.keys, tokens.values):
                        if isinstance(key, ast.Constant) and key.value == "additional_special_tokens":
                            self._register(_strings(value, bound))
                        elif isinstance(key, ast.Constant) and key.value == "pad_token" and _mentions_attr(
                                value, ("eos_token",)):
                            self.pad_is_eos = True
                            self.pad_eos_holders.update(filter(None, [_dotted(node.func.value)]))
                elif node.func.attr == "add_tokens" and node.args and any(
                        k.arg == "special_tokens" and isinstance(k.value, ast.Constant) and k.value.value is True
                        for k in node.keywords):
                    self._register(_strings(node.args[0], bound))

    def pads_with_eos(self, holder: Optional[str]) -> bool:
        """Whether the tokenizer at the dotted name `holder` (`processor.tokenizer`, `self.tok`) may be one whose
        pad token the file made the EOS: not when it is, or belongs to, an object the file loads under another
        name than those (a processor loaded beside the tokenizer it changed keeps its own pad token)."""
        if not self.pad_is_eos:
            return False
        if holder is None:
            return True
        if any(held == holder or holder.startswith(held + ".") or held.startswith(holder + ".")
               for held in self.pad_eos_holders):
            return True  # that tokenizer, or the object that holds it
        return not _prefixes(holder) & self.loaded

    def _padding_side(self, node: ast.AST, assigned_calls: Dict[int, ast.Assign]) -> None:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Attribute) and t.attr == "padding_side"
                                                for t in node.targets):
            value: Optional[ast.expr] = node.value
            owners = [_dotted(t.value) for t in node.targets if isinstance(t, ast.Attribute)]
        elif isinstance(node, ast.Call):
            self.loads_tokenizer = self.loads_tokenizer or _loads_tokenizer(node)
            value = next((k.value for k in node.keywords if k.arg == "padding_side"), None)
            if value is None:
                return
            assign = assigned_calls.get(id(node))  # `tk = from_pretrained(..., padding_side=...)`
            owners = [_dotted(t) for t in assign.targets] if assign is not None else [None]
        else:
            return
        literal = isinstance(value, ast.Constant) and isinstance(value.value, str)
        for owner in owners:
            self.padding_sides.setdefault(owner, set()).add(value.value if literal else None)

    def padding_side(self, call: cst.Call) -> Tuple[Optional[str], bool]:
        """The side tokenizer call `call` pads on, when the source shows it, and whether the source sets it: its
        own `padding_side=`, else the side the file sets on that tokenizer, else (when the file sets no other
        side than "right" on other tokenizers) the default of the models the file names when it loads the
        tokenizer itself. None when the file computes a side, sets both, may set it on the tokenizer under
        another name, or cannot know (a tokenizer it is given)."""
        own = keyword(call, "padding_side")
        if own is not None:
            return literal_text(own.value), True
        mine = self.padding_sides.get(dotted(tokenizer_of(call)) or "")
        if mine:
            return (next(iter(mine)) if len(mine) == 1 else None), True
        side = self.object_side(call, PADDING_SIDE)
        if side in ("left", "right"):
            return side, True
        if set().union(*self.padding_sides.values()) - {"right"} or self._pads_left is None or (
                not self.loads_tokenizer and side != DEFAULT_SIDE):
            return None, False
        return ("left" if self._pads_left else "right"), False

    def object_side(self, call: cst.Call, side: str) -> Optional[str]:
        """The side (`PADDING_SIDE`, `TRUNCATION_SIDE`) of the tokenizer object tokenizer call `call` uses, as the
        engine follows it to where it was loaded and configured (in this module or another): "left", "right",
        `DEFAULT_SIDE` (loaded with none set), or None when not known."""
        held = self.file.fact(Flow).value(tokenizer_of(call))
        return held.facts.get(side) if held.facts.get("type") == TOKENIZER else None

    def batched(self, text: cst.BaseExpression, scope: Scope, depth: int = 0) -> Optional[bool]:
        """Whether `text`, given to a tokenizer, is several texts (True: a list built or appended to, a
        comprehension, a slice of one, a list of prompts) or one (False: a string, a one-element list); None
        when the source does not show it."""
        if depth > 6:
            return None
        if isinstance(text, (cst.List, cst.Tuple)):
            if not text.elements or any(isinstance(e, cst.StarredElement) for e in text.elements):
                return None
            return len(text.elements) > 1
        if isinstance(text, (cst.ListComp, cst.GeneratorExp)):
            return True
        if isinstance(text, (cst.SimpleString, cst.FormattedString, cst.ConcatenatedString)):
            return False
        if isinstance(text, cst.Subscript) and all(isinstance(e.slice, cst.Slice) for e in text.slice):
            return self.batched(text.value, scope, depth + 1)
        if isinstance(text, cst.Name) and text.value in scope.assigned:
            if any(call_tail(c) in ("append", "extend") and isinstance(c.func, cst.Attribute)
                   and dotted(c.func.value) == text.value for c in scope.calls):
                return True
            return _one({self.batched(v, scope, depth + 1) for v in scope.assigned[text.value]})
        role = self.file.fact(TextRoles).role(text, scope)
        return {PROMPTS: True, TEXTS: True, PROMPT: False, TEXT: False}.get(role or "")

    def hugging_face(self, call: cst.Call, scope: Scope) -> bool:
        """Whether the receiver of `decode` / `batch_decode` call `call` is proven a Hugging Face tokenizer or
        processor, whose decode keeps special tokens unless told to skip them. The engine knows the object: loaded
        with `from_pretrained` of a tokenizer or processor class, or an instance of a project class whose own
        method takes `skip_special_tokens` (or that inherits it from a transformers class); a project class whose
        visible method does not is not one, whatever else the code does with it. Where the engine does not know the
        object, the code uses it through the API only these have: `batch_decode`, `skip_special_tokens=`, and
        `apply_chat_template`, `pad_token_id`, `tokenizer(texts, return_tensors=...)`... on the same name in the
        function (of `self.x`, anywhere in the file)."""
        receiver = call.func.value if isinstance(call.func, cst.Attribute) else None
        if receiver is None:
            return False
        held = self.file.fact(Flow).value(receiver)
        if held.facts.get("type") == TOKENIZER:
            return True
        cls = held.facts.get("cls")
        if cls is not None:
            owner = cls.module.flow
            method = owner.method_of(cls, call_tail(call))
            if method is None:
                return any(base.startswith("transformers.") and ("Tokenizer" in base or "Processor" in base)
                           for base in owner._bases(cls))
            return any(param.name == "skip_special_tokens" for param in method.params)
        if call_tail(call) == "batch_decode" or any(keyword(call, name) is not None for name in _DECODE_KEYWORDS):
            return True
        name = dotted(receiver)
        if name is None:
            return False
        where = self.file.module if name.startswith("self.") else scope.node
        return any(_used_as_hugging_face(node, name) for node in walk(where, into_functions=name.startswith("self.")))

    def _register(self, tokens: Optional[List[str]]) -> None:
        """Only tokens the source spells out count; chat control and padding tokens do not."""
        for token in tokens or ():
            if token not in CONTROL_TOKENS:
                self.custom_tokens.append(token)

    # ---- rendered chat templates -------------------------------------------------

    def rendered(self, expr: cst.BaseExpression, scope: Scope) -> Optional[cst.Call]:
        """The `apply_chat_template(..., tokenize=False)` call whose text `expr` holds, if any."""
        return self.sources.find(expr, scope, _renders_text)

    def rendered_with_bos(self, expr: cst.BaseExpression, scope: Scope) -> Optional[cst.Call]:
        """The render whose text `expr` holds with the template's BOS still at its head: not through a strip of
        the BOS (`text.removeprefix(tokenizer.bos_token)`, `text[len(bos):]`)."""
        return self.sources.find(expr, scope, _renders_text, _strips_bos)

    def engine_prompts(self, call: cst.Call) -> Optional[cst.BaseExpression]:
        """The prompts of `engine.generate(prompts, ...)` when `engine` is one of the file's vLLM engines."""
        if call_tail(call) != "generate" or not isinstance(call.func, cst.Attribute) or \
                dotted(call.func.value) not in self.vllm_engines:
            return None
        prompts = keyword(call, "prompts")
        return prompts.value if prompts is not None else positional(call, 0)

    def decoded(self, expr: cst.BaseExpression, scope: Scope) -> Optional[cst.Call]:
        """The `decode`/`batch_decode(generated ids, skip_special_tokens=True)` whose text `expr` holds, if any."""
        roles: TextRoles = self.file.fact(TextRoles)

        def skips_special_tokens(call: cst.Call, where: Scope) -> bool:
            if call_tail(call) not in ("decode", "batch_decode") or not isinstance(call.func, cst.Attribute):
                return False
            skip, ids = keyword(call, "skip_special_tokens"), positional(call, 0)
            return skip is not None and number(skip.value) == 1.0 and ids is not None \
                and roles.role(ids, where) == GEN_IDS
        return self.sources.find(expr, scope, skips_special_tokens)

    def rendered_names(self, scope: Scope) -> Dict[str, cst.Call]:
        found = {}
        for name in scope.assigned:
            call = self.rendered(cst.Name(name), scope)
            if call is not None:
                found[name] = call
        return found


# What only a Hugging Face tokenizer or processor has: keywords of its decode, methods, attributes, and keywords
# of a call of the tokenizer itself.
_DECODE_KEYWORDS = ("skip_special_tokens", "clean_up_tokenization_spaces")
_HF_METHODS = frozenset({"batch_decode", "apply_chat_template", "convert_ids_to_tokens", "convert_tokens_to_ids",
                         "batch_encode_plus", "encode_plus", "add_special_tokens", "save_pretrained"})
_HF_ATTRIBUTES = frozenset({"pad_token_id", "eos_token_id", "bos_token_id", "pad_token", "eos_token", "padding_side",
                            "all_special_tokens", "all_special_ids", "chat_template"})
_HF_CALL_KEYWORDS = ("return_tensors", "padding", "truncation", "add_special_tokens")


def _used_as_hugging_face(node: cst.CSTNode, name: str) -> bool:
    """`node` uses the object `name` holds through the API only a Hugging Face tokenizer or processor has."""
    if isinstance(node, cst.Attribute) and dotted(node.value) == name:
        return node.attr.value in _HF_ATTRIBUTES or node.attr.value in _HF_METHODS
    if isinstance(node, cst.Call) and dotted(node.func) == name:
        return any(keyword(node, k) is not None for k in _HF_CALL_KEYWORDS)
    return isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and dotted(node.func.value) == name \
        and call_tail(node) == "decode" and any(keyword(node, k) is not None for k in _DECODE_KEYWORDS)


_STRIPS = {"removeprefix", "lstrip", "replace", "strip"}


def _is_bos(expr: cst.CSTNode, scope: Scope, depth: int = 0) -> bool:
    """`tokenizer.bos_token`, `len(tok.bos_token)`, a BOS token spelt out, or a name bound to one of those."""
    for node in walk(expr):
        if isinstance(node, cst.Attribute) and node.attr.value == "bos_token" or literal_text(node) in BOS_TOKENS:
            return True
        if isinstance(node, cst.Name) and depth < 4 and any(
                _is_bos(v, scope, depth + 1) for v in scope.assigned.get(node.value, ())):
            return True
    return False


def _strips_bos(expr: cst.BaseExpression, scope: Scope) -> bool:
    """Text with its BOS removed: `t.removeprefix(bos)`, `t.replace(bos, "")`, `t[len(bos):]`, a comprehension or a
    list of those, `t[len(bos):] if t.startswith(bos) else t`."""
    if isinstance(expr, (cst.ListComp, cst.GeneratorExp)):
        return _strips_bos(expr.elt, scope)
    if isinstance(expr, cst.IfExp):
        return (_strips_bos(expr.body, scope) or _strips_bos(expr.orelse, scope)) and _is_bos(expr.test, scope)
    if isinstance(expr, cst.Call) and expr.args:
        tail = call_tail(expr)
        if tail in ("list", "tuple"):
            return _strips_bos(expr.args[0].value, scope)
        return tail in _STRIPS and _is_bos(expr.args[0].value, scope)
    if isinstance(expr, cst.Subscript) and len(expr.slice) == 1 and isinstance(expr.slice[0].slice, cst.Slice):
        lower = expr.slice[0].slice.lower
        return lower is not None and _is_bos(lower, scope)
    return False


def _renders_text(call: cst.Call, scope: Scope) -> bool:
    """`apply_chat_template(..., tokenize=False)`: the chat rendered to text."""
    if call_tail(call) != "apply_chat_template":
        return False
    tokenize = keyword(call, "tokenize")
    return tokenize is not None and number(tokenize.value) == 0.0


class IdsUse:
    """Where the result of a tokenizer call goes, followed forward through assignments, loop variables,
    container appends and, when a function returns it, its callers (`enc = tokenizer(texts)` ->
    `ids = enc.input_ids` -> `policy(ids)`):

    - `policy_forward(call, function)`: the forward of the policy, with gradient and in the backward slice of
      a policy-gradient loss, that it becomes the input of (None when it only feeds a reward model, a
      reference model, or nothing that trains);
    - `generation(call, function)`: the sampling call (`generate`, `generate_sequences`) it is given to;
    - `sampled(call)`: the engine's `generate` of a model given its ids wherever they go (batches of a
      DataLoader whose collate function makes them, methods of other modules).
    """

    _DEPTH = 4

    def __init__(self, file) -> None:
        self.file = file
        self.sources: TextSources = file.fact(TextSources)
        self.roles: ModelRoles = file.fact(ModelRoles)
        self._stepped: Optional[Set[cst.CSTNode]] = None

    @staticmethod
    def _models(stmt: cst.CSTNode, calls: List[cst.Call], known: List[cst.Call]) -> List[cst.Call]:
        """Calls of a model in the statement: a forward in `known`, or a call whose `.logits` / hidden states
        are read."""
        outputs = [n.value for part in header(stmt) for n in walk(part)
                   if isinstance(n, cst.Attribute) and n.attr.value in _MODEL_OUTPUTS and isinstance(n.value, cst.Call)]
        return [c for c in calls if any(c is k for k in known + outputs)]

    def policy_forward(self, call: cst.Call, function: Optional[cst.FunctionDef]) -> Optional[cst.Call]:
        loss: LossSlice = self.file.fact(LossSlice)
        forwards = [f.node for f in loss.grad.forwards if f.role == POLICY and not f.no_grad]

        stepped = self._policy_gradient_sources()

        def trained(stmt, calls, scope) -> List[cst.Call]:
            engine = [c for c in calls if c in stepped and self._trained_forward(c, scope)]
            step = loss.slice.get(stmt)
            if step is None or not loss.policy_gradient(step.sink):
                return engine
            return [c for c in calls if any(c is f for f in forwards)] or engine
        return self._follow(call, function, trained, [f.node for f in loss.grad.forwards])

    def _policy_gradient_sources(self) -> Set[cst.CSTNode]:
        """The forwards (and other sources) the engine sees flow into a policy-gradient backward, through helpers
        of other modules too (`loss = self.algo.pg_loss(logits, adv)` with `pg_loss` in the project)."""
        if self._stepped is None:
            flow: Flow = self.file.fact(Flow)
            flow.analyze_all()
            terms = flow.policy_gradient_terms
            losses = [event.target for event in flow.backwards if event.target.sources & terms]
            self._stepped = {node for loss in losses
                             for node in loss.sources | (loss.facts.get("forwards") or frozenset())}
        return self._stepped

    def _trained_forward(self, call: cst.Call, function: Optional[cst.FunctionDef]) -> bool:
        """A forward, with gradient, of a model the file gives no other role (the reference, the old policy,
        a reward or value model)."""
        model = self.roles.is_forward(call)
        return model is not None and self.roles.role(model, function) in (POLICY, None) and \
            self.file.fact(Flow).value(call).facts.get("grad") not in (NO_GRAD, DETACHED)

    def generation(self, call: cst.Call, function: Optional[cst.FunctionDef]) -> Optional[cst.Call]:
        found = self._follow(call, function, lambda stmt, calls, scope: [c for c in calls if self._samples(c)], [])
        if found is None:
            event = self.sampled(call)
            found = event.node if event is not None else None
        return found

    def _samples(self, call: cst.Call) -> bool:
        """A call the engine knows samples from what it is given: a sampling method of an engine it knows as a
        sampler (vLLM's `LLM`, verl's worker group), or mlx_lm's `generate`. A method of that name on an object
        of unknown kind is not known to sample."""
        flow: Flow = self.file.fact(Flow)
        if isinstance(call.func, cst.Attribute):
            return call.func.attr.value in _SAMPLERS and \
                flow.value(call.func.value).facts.get("type") == SAMPLER
        return flow.value(call.func).facts.get("qual") in _LIBRARY_SAMPLERS

    def sampled(self, call: cst.Call) -> Optional[Event]:
        """The sampling by a model's `generate` that the engine sees given the ids tokenizer call `call` makes,
        and no other encoding (ids re-tokenized from what the batch also holds are another call's): the event,
        whose node may be in another module, `extra["model"]` the model."""
        flow: Flow = self.file.fact(Flow)
        flow.analyze_all()
        encodings = flow.encodings
        return next((event for event in flow.generations if event.target.sources & encodings == {call}), None)

    def _follow(self, call: cst.Call, function: Optional[cst.FunctionDef], targets,
                models: List[cst.Call]) -> Optional[cst.Call]:
        """The first of `targets(statement, calls, function)` that is given the result of `call`, or a value made from it.
        What a model (one of `models`, or one whose outputs are read) computes from it is not followed."""
        work = [(function, call, 0)]
        seen: Set[int] = set()
        while work:
            scope, source, depth = work.pop()
            if id(source) in seen or depth > self._DEPTH:
                continue
            seen.add(id(source))
            tainted: Set[str] = set()
            for stmt, calls in self.roles.calls.get(scope or self.file.module, ()):
                if not any(c is source for c in calls) and not any(
                        _reads(part, key) for part in header(stmt) for key in tainted):
                    continue
                for target in targets(stmt, calls, scope):
                    if target is not source and _given(target, source, tainted):
                        return target
                if any(_given(c, source, tainted) for c in self._models(stmt, calls, models)):
                    continue  # a model's output (a reward model's scores) is not the ids any more
                tainted.update(_bound(stmt))
                if isinstance(stmt, cst.Return) and isinstance(scope, cst.FunctionDef):
                    work.extend((caller if caller is not self.file.module else None, site, depth + 1)
                                for site, caller in self.sources.callers(scope))
        return None


def _given(call: cst.Call, source: cst.Call, tainted: Set[str]) -> bool:
    """`call` is given the result of `source`, or a value made from it."""
    return any(any(n is source for n in walk(a.value)) or any(_reads(a.value, k) for k in tainted) for a in call.args)


_MODEL_OUTPUTS = {"logits", "last_hidden_state", "hidden_states", "loss"}
# Calls that sample from a model given prompt ids.
_SAMPLERS = {"generate", "generate_sequences", "sample", "chat"}
# Sampling functions of libraries, given the model and the prompt.
_LIBRARY_SAMPLERS = frozenset({"mlx_lm.generate", "mlx_lm.utils.generate", "mlx_lm.stream_generate",
                               "mlx_lm.generate.generate", "mlx_lm.generate.stream_generate"})


def _reads(expr: cst.CSTNode, key: str) -> bool:
    """`expr` reads the dotted name `key` (`enc` in `enc.input_ids`, `batch["ids"]`, `**enc`)."""
    return any(dotted(n) == key for n in walk(expr) if isinstance(n, (cst.Name, cst.Attribute)))


def _bound(stmt: cst.CSTNode) -> Iterator[str]:
    """The dotted names a statement writes: assignment and loop targets, the receiver of `xs.append(x)`."""
    if isinstance(stmt, cst.Assign):
        targets = [t.target for t in stmt.targets]
    elif isinstance(stmt, (cst.AnnAssign, cst.AugAssign, cst.For)):
        targets = [stmt.target]
    elif isinstance(stmt, cst.Expr) and isinstance(stmt.value, cst.Call) and isinstance(stmt.value.func, cst.Attribute) \
            and stmt.value.func.attr.value in ("append", "extend", "insert", "update"):
        targets = [stmt.value.func.value]
    else:
        targets = []
    for target in targets:
        for node in walk(target):
            key = dotted(node) if isinstance(node, (cst.Name, cst.Attribute)) else None
            if key is not None:
                yield key


def tokenizer_of(call: cst.Call) -> cst.BaseExpression:
    """The tokenizer a tokenizer call uses: `tok` of `tok(text)` and of `tok.encode(text)`."""
    if call_tail(call) in _ENCODE_METHODS and isinstance(call.func, cst.Attribute):
        return call.func.value
    return call.func


def _fallback_expression(value: ast.expr) -> bool:
    """EOS only where the tokenizer has no pad token: `tok.pad_token or tok.eos_token`,
    `tok.pad_token_id if tok.pad_token_id is not None else tok.eos_token_id`."""
    if isinstance(value, ast.BoolOp):
        return _mentions_attr(value, ("pad_token", "pad_token_id"))
    return isinstance(value, ast.IfExp) and _mentions_attr(value.test, ("pad_token", "pad_token_id"))
