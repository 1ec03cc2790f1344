"""Names as hints: the vocabularies of model roles that the *pedantic* forms of rules may use.

A name is never the evidence for a default finding (RULES.md, "Evidence, not spelling"): the default forms
ask the fact engine what the code does. Where a rule's page offers a broader form that is reported only
when the rule is selected by name, that form may rank candidates by these vocabularies, extended by the
options `reference-model-names` and `policy-model-names`, and its page says so.
"""
from __future__ import annotations

import fnmatch
import functools
import re
from typing import List, Tuple

from rllint.options import Option

POLICY, REFERENCE, OLD_POLICY, REWARD, VALUE = "policy", "reference", "old policy", "reward model", "value model"

REFERENCE_NAMES = Option(
    "reference-model-names", list, [],
    "Name patterns (fnmatch globs, matched against a variable or attribute name) of reference models, "
    "added to the built-in ones (`ref_model`, `ref_policy`, `reference_model`, `*_ref_model`...).",
    names_models=True,
)
POLICY_NAMES = Option(
    "policy-model-names", list, [],
    "Name patterns (fnmatch globs) of the trained policy, added to the built-in ones "
    "(`model`, `policy`, `actor`, `policy_model`, `unwrapped_model`...).",
    names_models=True,
)

# Built-in vocabularies, as fnmatch patterns over the last name of a dotted expression.
VOCABULARY: Tuple[Tuple[str, Tuple[str, ...]], ...] = (
    (REFERENCE, ("ref", "ref_model", "ref_policy", "ref_module", "ref_actor", "ref_lm", "ref_net", "ref_llm",
                 "reference", "reference_model", "reference_policy", "reference_module", "*_ref_model",
                 "*_ref_policy", "*_reference_model", "initial_model", "initial_policy", "frozen_model",
                 "frozen_policy", "model_ref", "policy_ref", "actor_ref", "ref_*_model", "pi_ref", "ref_pi")),
    (OLD_POLICY, ("old_policy", "old_model", "old_actor", "policy_old", "actor_old", "behavior_policy",
                  "behaviour_policy", "*_old_policy", "old_policy_model", "pi_old", "old_pi")),
    (REWARD, ("reward_model", "rm", "rm_model", "reward_net", "reward_module", "*_reward_model", "reward_lm")),
    (VALUE, ("critic", "critic_model", "critic_net", "critic_module", "value_model", "value_net", "value_network",
             "value_module", "value_head", "v_head", "value_function", "*_critic", "*_value_model", "*_value_head")),
    (POLICY, ("model", "policy", "actor", "policy_model", "actor_model", "policy_net", "policy_module",
              "actor_module", "unwrapped_model", "unwrapped_policy", "wrapped_model", "model_wrapped", "lm", "pi",
              "student", "*_policy_model", "*_actor_model")),
)


@functools.lru_cache(maxsize=8)
def vocabulary(reference: Tuple[str, ...], policy: Tuple[str, ...]) -> List[Tuple[str, "re.Pattern[str]"]]:
    """One compiled pattern per role: the built-in globs plus the options' (compiled once per setting)."""
    extra = {REFERENCE: reference, POLICY: policy}
    return [(role, re.compile("|".join(fnmatch.translate(p) for p in patterns + extra.get(role, ()))))
            for role, patterns in VOCABULARY]


def role_by_name(name: str, settings) -> str:
    """The role a model's name suggests (`ref_model` -> reference), or "": a hint for pedantic forms only."""
    bare = name.rsplit(".", 1)[-1].lstrip("_")
    patterns = vocabulary(tuple(settings.option(REFERENCE_NAMES)), tuple(settings.option(POLICY_NAMES)))
    return next((role for role, pattern in patterns if pattern.match(bare)), "")
