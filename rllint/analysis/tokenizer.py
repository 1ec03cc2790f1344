"""Tokenizer facts of a file: custom special tokens it registers, whether padding is the EOS
token, and which values are chat templates rendered to text.

These decide whether a decode strips the tags a reward parser needs (RL304), whether a
pad-id mask also hides the real EOS (RL311), and whether rendered text gets a second BOS
(RL312: only where the file names the model and its tokenizer adds one) or a second
`<think>` (RL308).
"""
from __future__ import annotations

import ast
import re
from typing import Dict, List, Optional, Tuple

import libcst as cst

from rllint.analysis.nodes import AstNodes
from rllint.analysis.syntax import keyword
from rllint.analysis.text import Scope, Scopes, call_tail, number

# Chat-template control and padding tokens: registering them is tokenizer set-up, and
# stripping them from decoded text is what skip_special_tokens is for.
CONTROL_TOKENS = ("<|im_start|>", "<|im_end|>", "<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>",
                  "<|begin_of_text|>", "<|end_of_text|>", "<|endoftext|>", "<start_of_turn>", "<end_of_turn>",
                  "<|user|>", "<|assistant|>", "<|system|>", "<|end|>", "[INST]", "[/INST]", "<s>", "</s>",
                  "<pad>", "[PAD]", "<|pad|>", "<unk>", "<|padding|>", "<bos>", "<eos>")


# Model families by whether their tokenizer adds a BOS token with `add_special_tokens=True` and writes one in
# its chat template. DeepSeek's distilled Qwen models use DeepSeek's tokenizer, so DeepSeek is looked for first.
_ADDS_BOS = re.compile(r"llama|mistral|mixtral|gemma|zephyr|deepseek|vicuna", re.I)
_NO_BOS = re.compile(r"qwen|qwq|gpt-?2|pythia|gpt-neox|smollm", re.I)
_MODEL_ID = re.compile(r"^[\w.\-/~:]+$")  # a hub id or a path, not prose


def _adds_bos(name: str) -> Optional[bool]:
    if not _MODEL_ID.match(name):
        return None
    if _ADDS_BOS.search(name):
        return True
    return False if _NO_BOS.search(name) else None


def _strings(node: ast.expr) -> Optional[List[str]]:
    if isinstance(node, (ast.List, ast.Tuple)) and all(
            isinstance(e, ast.Constant) and isinstance(e.value, str) for e in node.elts):
        return [e.value for e in node.elts]
    return None


def _mentions_attr(node: ast.expr, attrs: Tuple[str, ...]) -> bool:
    return any(isinstance(n, ast.Attribute) and n.attr in attrs for n in ast.walk(node))


class TokenizerFacts:
    """File-level facts from the `ast` tree; rendered-template values per scope on request."""

    def __init__(self, file) -> None:
        self.scopes: Scopes = file.fact(Scopes)
        self.pad_is_eos = False
        self.custom_tokens: List[str] = []
        nodes = file.fact(AstNodes)
        # The file's tokenizer adds a BOS: every model it names (hub ids, paths) is of a family whose tokenizer
        # does; None when it names none or families of both kinds.
        named = {_adds_bos(n.value) for n in nodes.of(ast.Constant) if isinstance(n.value, str)}
        named.discard(None)
        self.adds_bos: Optional[bool] = named.pop() if len(named) == 1 else None
        # `if tokenizer.pad_token is None: tokenizer.pad_token = tokenizer.eos_token`, `pad_token or eos_token`: EOS
        # pads only tokenizers that have no pad token of their own (Llama, not Qwen); which one runs, the file may
        # not say, and then no finding rests on it.
        fallbacks = {id(n) for test in nodes.of(ast.If) if _mentions_attr(test.test, ("pad_token", "pad_token_id"))
                     for statement in test.body for n in ast.walk(statement)}
        for node in nodes.of(ast.Assign, ast.Call):
            if isinstance(node, ast.Assign) and any(
                    isinstance(t, ast.Attribute) and t.attr in ("pad_token", "pad_token_id") for t in node.targets):
                if _mentions_attr(node.value, ("eos_token", "eos_token_id")) and id(node) not in fallbacks and not (
                        isinstance(node.value, ast.BoolOp) and _mentions_attr(node.value, ("pad_token", "pad_token_id"))):
                    self.pad_is_eos = True
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
                if node.func.attr == "add_special_tokens" and node.args and isinstance(node.args[0], ast.Dict):
                    for key, value in zip(node.args[0].keys, node.args[0].values):
                        if isinstance(key, ast.Constant) and key.value == "additional_special_tokens":
                            self._register(_strings(value))
                        elif isinstance(key, ast.Constant) and key.value == "pad_token" and _mentions_attr(
                                value, ("eos_token",)):
                            self.pad_is_eos = True
                elif node.func.attr == "add_tokens" and node.args and any(
                        k.arg == "special_tokens" and isinstance(k.value, ast.Constant) and k.value.value is True
                        for k in node.keywords):
                    self._register(_strings(node.args[0]))

    def _register(self, tokens: Optional[List[str]]) -> None:
        """Only tokens the source spells out count; chat control and padding tokens do not."""
        for token in tokens or ():
            if token not in CONTROL_TOKENS:
                self.custom_tokens.append(token)

    # ---- rendered chat templates -------------------------------------------------

    def rendered(self, expr: cst.BaseExpression, scope: Scope, depth: int = 0) -> Optional[cst.Call]:
        """The `apply_chat_template(..., tokenize=False)` call whose text `expr` holds, if any."""
        if depth > 8:
            return None
        if isinstance(expr, cst.Call):
            if call_tail(expr) == "apply_chat_template":
                tokenize = keyword(expr, "tokenize")
                if tokenize is not None and number(tokenize.value) == 0.0:
                    return expr
                return None
            if call_tail(expr) in ("strip", "rstrip", "lstrip", "replace") and isinstance(expr.func, cst.Attribute):
                return self.rendered(expr.func.value, scope, depth + 1)
            return None
        if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, cst.Add):
            return self.rendered(expr.left, scope, depth + 1)
        if isinstance(expr, (cst.ListComp, cst.GeneratorExp)):
            return self.rendered(expr.elt, scope, depth + 1)
        if isinstance(expr, cst.Subscript):
            return self.rendered(expr.value, scope, depth + 1)
        if isinstance(expr, cst.Name):
            for value in scope.assigned.get(expr.value, ()):
                found = self.rendered(value, scope, depth + 1)
                if found is not None:
                    return found
            for iterable, path in scope.iterated.get(expr.value, ()):
                if not path:
                    found = self.rendered(iterable, scope, depth + 1)
                    if found is not None:
                        return found
        return None

    def rendered_names(self, scope: Scope) -> Dict[str, cst.Call]:
        found = {}
        for name in scope.assigned:
            call = self.rendered(cst.Name(name), scope)
            if call is not None:
                found[name] = call
        return found
