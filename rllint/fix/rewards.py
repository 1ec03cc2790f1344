"""Fixes of the reward-function rules: RL404."""
from __future__ import annotations

from typing import Optional

import libcst as cst

from rllint.fix import Plan, fixes
from rllint.fix.edits import set_keyword


@fixes("RL404", safe=False, safety="""
    The fix adds `strict=True` to the `zip` call (the rule reports only where the target Python is
    3.10 or later: `target-version`, else `requires-python`, else the Python running rllint). It is
    unsafe: lists of different lengths, which were silently cut to the shortest, now raise
    `ValueError`: that is the point, but a run that used to go on now stops.""")
def strict_zip(node: cst.CSTNode, file) -> Optional[Plan]:
    if not isinstance(node, cst.Call):
        return None
    return Plan("Add `strict=True`", [(node, set_keyword(node, "strict", cst.Name("True")))])
