"""Spreads of a batch computed by any array library: what `std`, `var`, `norm` and a root of a variance are.

The torch domain knows these ops on tensors it has typed. A standard deviation is one whatever holds the
numbers: `np.std(rewards)`, `statistics.pstdev(scores)`, or `.std()` of a batch whose library this file does
not show (a parameter, an array built out of sight) all compute one, and an epsilon added to it guards a
denominator (RL201). Only the `stat` fact is given: the type and shape of the result stay unknown.
"""
from __future__ import annotations

import libcst as cst

from rllint.analysis.domains.base import Domain
from rllint.analysis.facts import NORM, NUMBER, STD, VAR, Value, value, with_sources

# Functions of numpy (and its look-alikes), math and statistics, by their last name.
_FUNCTIONS = {"std": STD, "nanstd": STD, "stdev": STD, "pstdev": STD, "var": VAR, "nanvar": VAR, "variance": VAR,
              "pvariance": VAR, "norm": NORM}
_LIBRARIES = ("numpy.", "jax.numpy.", "cupy.", "math.", "statistics.", "scipy.")
# Methods of numpy arrays, pandas series and tensors alike.
_METHODS = {"std": STD, "var": VAR, "norm": NORM}
# Methods that keep a spread a spread: reshapes, conversions and floors (`std.unsqueeze(-1).clamp(min=1e-6)`).
_KEEP = frozenset({"repeat_interleave", "repeat", "unsqueeze", "view", "reshape", "expand", "expand_as", "squeeze",
                   "to", "float", "double", "detach", "flatten", "clone", "contiguous", "type_as", "cpu",
                   "cuda", "clamp", "clip", "clamp_min"})


def _spread(stat: str, node, sources) -> Value:
    return with_sources(value((node,), stat=stat), sources)


class Stats(Domain):
    def call(self, frame, qual, node, args, kwargs):
        if not qual.startswith(_LIBRARIES):
            return None
        tail = qual.rsplit(".", 1)[-1]
        sources = frozenset().union(*(v.sources for v in list(args) + list(kwargs.values())))
        if tail in _FUNCTIONS:
            return _spread(_FUNCTIONS[tail], node, sources)
        if tail == "sqrt" and args and args[0].facts.get("stat") == VAR:
            return _spread(STD, node, sources)
        return None

    def method(self, frame, receiver, name, node, args, kwargs):
        if receiver.facts.get("type") is not None:  # typed tensors are the torch domain's
            return None
        if name in _METHODS and all(a.facts.get("type") == NUMBER for a in args):  # not a layer: `m.norm(h)`
            return _spread(_METHODS[name], node, receiver.sources)
        stat = receiver.facts.get("stat")
        if name == "sqrt" and stat == VAR:
            return _spread(STD, node, receiver.sources)
        if name in _KEEP and stat is not None:
            return _spread(stat, node, receiver.sources)
        return None

    def call_value(self, frame, callee, node, args, kwargs):
        """`x.std()` of an `x` nothing is known of: the interpreter binds no receiver to such a method."""
        if callee.facts or not isinstance(node.func, cst.Attribute):
            return None
        return self.method(frame, callee, node.func.attr.value, node, args, kwargs)


STATS = Stats()
