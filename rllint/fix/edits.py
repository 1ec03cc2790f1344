"""Small libcst node builders the fix builders share: keyword arguments, method calls, flags."""
from __future__ import annotations

from typing import Optional

import libcst as cst

from rllint.analysis.syntax import keyword

_NO_SPACE = cst.SimpleWhitespace("")


def set_keyword(call: cst.Call, name: str, value: cst.BaseExpression) -> cst.Call:
    """`call` with `name=value`: the value replaced when the keyword is there, else appended after the
    last argument in the call's own layout (a trailing comma and one argument per line are kept)."""
    given = keyword(call, name)
    if given is not None:
        return call.with_changes(args=[arg.with_changes(value=value) if arg is given else arg for arg in call.args])
    added = cst.Arg(value=value, keyword=cst.Name(name),
                    equal=cst.AssignEqual(whitespace_before=_NO_SPACE, whitespace_after=_NO_SPACE))
    if not call.args:
        return call.with_changes(args=[added])
    *before, last = call.args
    if isinstance(last.comma, cst.Comma):  # a trailing comma: the new argument takes it, and the layout of the one before
        separator = before[-1].comma if before and isinstance(before[-1].comma, cst.Comma) else cst.Comma(
            whitespace_after=cst.SimpleWhitespace(" "))
        return call.with_changes(args=[*before, last.with_changes(comma=separator), added.with_changes(comma=last.comma)])
    return call.with_changes(args=[*before, last.with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))),
                                   added])


def method_call(receiver: cst.BaseExpression, method: str, *args: cst.BaseExpression) -> cst.Call:
    """`receiver.method(args)`, with parentheses around a receiver that needs them (`(a + b).float()`)."""
    if not isinstance(receiver, (cst.Name, cst.Attribute, cst.Call, cst.Subscript)) and not receiver.lpar:
        receiver = receiver.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
    arguments = [cst.Arg(value, comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))) for value in args[:-1]]
    arguments += [cst.Arg(value) for value in args[-1:]]
    return cst.Call(func=cst.Attribute(value=receiver, attr=cst.Name(method)), args=arguments)


def bit_or(left: cst.BaseExpression, right: cst.BaseExpression) -> cst.BinaryOperation:
    """`left | right`, with parentheses around a `left` that binds more loosely than `|`."""
    if not isinstance(left, (cst.Name, cst.Attribute, cst.Call, cst.Integer, cst.Subscript)) and not left.lpar and not (
            isinstance(left, cst.BinaryOperation) and isinstance(left.operator, cst.BitOr)):
        left = left.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
    return cst.BinaryOperation(left=left, operator=cst.BitOr(), right=right)


def module_alias(imports, module: str) -> Optional[str]:
    """The local name under which `module` itself is imported (`import re` -> "re"), if it is."""
    return next((local for local, qualified in imports.aliases.items() if qualified == module), None)
