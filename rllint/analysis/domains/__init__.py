"""The libraries the interpreter knows, one domain each: what their calls, methods, attributes and
operators do to abstract values (`rllint.analysis.facts.Value`).

A domain answers None for what it does not know; the interpreter (`rllint.analysis.flow`) then asks
the next one, and an op nobody knows gives an unknown value that keeps its operands' sources. The
facts a domain gives come from the library's documented behaviour (`AutoModelForCausalLM` returns
`[B, T, V]` logits, `log_softmax(dim=-1)` is a distribution over the last axis, `decode` of sampled
ids is completion text), never from how the user named a variable.
"""
from __future__ import annotations

from typing import List

from rllint.analysis.domains.base import Domain
from rllint.analysis.domains.config import CONFIG_DOMAIN
from rllint.analysis.domains.data import DATA
from rllint.analysis.domains.distributed import DISTRIBUTED
from rllint.analysis.domains.models import MODELS
from rllint.analysis.domains.stats import STATS
from rllint.analysis.domains.text import TEXT_DOMAIN
from rllint.analysis.domains.torch_ops import TORCH
from rllint.analysis.domains.trainers import TRAINERS

_DOMAINS: List[Domain] = [MODELS, DISTRIBUTED, TORCH, STATS, TEXT_DOMAIN, TRAINERS, CONFIG_DOMAIN, DATA]


def domains() -> List[Domain]:
    """Every domain, in the order they are asked."""
    return _DOMAINS


__all__ = ["Domain", "domains"]
