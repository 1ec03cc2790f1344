"""Fixes of the decoding and text rules: RL302, RL303, RL312."""
from __future__ import annotations

from typing import Optional

import libcst as cst

from rllint.analysis.imports import Imports
from rllint.analysis.syntax import keyword, positional
from rllint.analysis.text import RE_FUNCTIONS
from rllint.fix import Plan, fixes
from rllint.fix.edits import bit_or, module_alias, set_keyword
from rllint.rules.decoding import tokenized_text


@fixes("RL302", safe=True, safety="""
    The fix adds `re.DOTALL` to the call's flags (`flags=re.DOTALL`, or `| re.DOTALL` after the flags
    given). It is safe: the pattern spans reasoning markers, and without DOTALL it can match no
    multi-line reasoning at all. There is no fix when the `re` module itself is not imported under a
    name (`from re import compile` alone), since the flag would need a new import.""")
def add_dotall(node: cst.CSTNode, file) -> Optional[Plan]:
    imports = file.fact(Imports)
    alias = module_alias(imports, "re")
    qualified = imports.qualified(node.func) if isinstance(node, cst.Call) else None
    if alias is None or qualified is None or not qualified.startswith("re."):
        return None
    _, flags_at = RE_FUNCTIONS.get(qualified[3:], (None, None))
    if flags_at is None or any(arg.star for arg in node.args):
        return None
    dotall = cst.Attribute(value=cst.Name(alias), attr=cst.Name("DOTALL"))
    given = keyword(node, "flags")
    flags = given.value if given is not None else positional(node, flags_at)
    if flags is None:
        return Plan("Add `flags=re.DOTALL`", [(node, set_keyword(node, "flags", dotall))])
    return Plan("Add `re.DOTALL` to the flags", [(flags, bit_or(flags, dotall))])


@fixes("RL303", safe=False, safety="""
    The fix sets `skip_special_tokens=True`. It is unsafe: besides padding and EOS it removes every
    special token from the text, including custom ones such as `<think>` when they were added as
    special tokens (RL304), which format rewards may look for.""")
def skip_special_tokens(node: cst.CSTNode, file) -> Optional[Plan]:
    if not isinstance(node, cst.Call):
        return None
    return Plan("Set `skip_special_tokens=True`", [(node, set_keyword(node, "skip_special_tokens", cst.Name("True")))])


@fixes("RL312", safe=True, safety="""
    The fix sets `add_special_tokens=False`. It is safe: the text was rendered by the chat template,
    which already wrote the BOS and every other special token the model expects.""")
def no_special_tokens(node: cst.CSTNode, file) -> Optional[Plan]:
    if not isinstance(node, cst.Call) or tokenized_text(node) is None:
        return None  # a vLLM engine's `generate` takes no `add_special_tokens`
    return Plan("Set `add_special_tokens=False`", [(node, set_keyword(node, "add_special_tokens", cst.Name("False")))])
