"""The distributed domain: values that are the concatenation over ranks of one value per rank, and the numbers
that count one rank's share.

A collective gather gives every rank the values of all ranks laid end to end along the first axis, rank 0's
first: `accelerator.gather(x)` / `gather_for_metrics(x)` of an `accelerate.Accelerator` (or of a transformers /
TRL trainer's `self.accelerator`), `accelerate.utils.gather(x)` / `gather_object(x)`, and
`torch.distributed.all_gather(parts, x)` followed by `torch.cat(parts)` (along the first axis),
`all_gather_object(parts, x)` followed by `[item for part in parts for item in part]`, or
`all_gather_into_tensor(out, x)`. The gathered value (`gathered`: the gather call and the local value it was
given) keeps that layout through elementwise arithmetic, casts and reductions over other axes.

A number is one rank's count when it counts a per-rank value: `len(x)`, `x.size(0)`, `x.shape[0]` (`counts`:
the value counted) of the very value that was gathered, or of the batch a trainer framework hands one process
(`per_rank`: the examples a TRL trainer hands `_generate_and_score_completions`, the entries of the mapping a
transformers / TRL trainer hands `compute_loss`, `training_step`, `_prepare_inputs`, and a list made item by
item from such rows); or the per-device batch setting of a transformers / TRL config
(`per_device_train_batch_size`). The rank itself
(`accelerator.process_index`, `torch.distributed.get_rank()`) is `rank_index`, and a test that it is 0 (or
`accelerator.is_main_process`) is `main_process`.

Everything is resolved through the imports and the objects' construction, never by a variable's name.
"""
from __future__ import annotations

from typing import Optional, Tuple

import libcst as cst

from rllint.analysis.domains.base import Domain
from rllint.analysis.domains.config import CONFIG, CONFIG_DOMAIN
from rllint.analysis.domains.models import ACCELERATOR
from rllint.analysis.domains.torch_ops import TORCH
from rllint.analysis.domains.trainers import is_trainer
from rllint.analysis.facts import (BOOL, INSTANCE, LIST, NO_GRAD, NUMBER, SHAPE, TENSOR, TEXTS, TRAINER, UNKNOWN, Value,
                                   item_of, set_item, value, with_sources)

# Collectives that give each rank every rank's values, laid end to end (rank 0 first).
_ACCELERATE_GATHERS = frozenset({"accelerate.utils.gather", "accelerate.utils.operations.gather",
                                 "accelerate.utils.gather_object", "accelerate.utils.operations.gather_object"})
_ACCELERATOR_GATHERS = frozenset({"gather", "gather_for_metrics"})
# Collectives that write one part per rank into the list they are given (its keyword, the local value's keyword).
_INTO_LIST = {"torch.distributed.all_gather": ("tensor_list", "tensor"),
              "torch.distributed.all_gather_object": ("object_list", "obj")}
_INTO_TENSOR = frozenset({"torch.distributed.all_gather_into_tensor", "torch.distributed._all_gather_base"})
_RANK_CALLS = frozenset({"torch.distributed.get_rank"})
_MAIN_FLAGS = frozenset({"is_main_process", "is_local_main_process"})
# The per-device batch size of a transformers / TRL configuration (`TrainingArguments` and its subclasses).
PER_DEVICE_BATCH = frozenset({"per_device_train_batch_size", "per_device_eval_batch_size"})
# Methods a transformers / TRL trainer calls with one process's batch (`inputs`), by the position of that parameter
# and what the batch is: a list of that process's examples (ROWS: its length counts them), or a mapping (ITEMS)
# whose entries hold the rows (`inputs["input_ids"]`; its own length counts its keys). TRL's GRPO trainers hand
# `_prepare_inputs` the examples and the base trainer a mapping: only its entries are known to be rows.
ROWS, ITEMS = "rows", "items"
_PER_RANK_ENTRIES = {"compute_loss": (2, ITEMS), "training_step": (2, ITEMS), "prediction_step": (2, ITEMS),
                     "_prepare_inputs": (1, ITEMS), "_generate_and_score_completions": (1, ROWS)}


def gathered(local: Value, node: cst.CSTNode) -> Value:
    """What a gather of `local` at `node` gives: a tensor or list shaped like it, laid end to end over ranks."""
    kind = local.facts.get("type")
    shape = {k: local.facts[k] for k in ("rank", "axes", "content") if k in local.facts}
    if kind in (LIST, TEXTS):
        return Value({"type": kind, "gathered": (node, local)}, {"gathered": (node,)})
    return Value({"type": TENSOR, "obj": node, "grad": NO_GRAD, "gathered": (node, local), **shape},
                 {"gathered": (node,), "grad": (node,)})


def same_value(a: Value, b: Value) -> bool:
    """Whether two abstract values are one object of the program: the same value, the same tensor object (not a
    view of it), or the same parameter of unknown content."""
    if a is b:
        return bool(a.facts)  # not two values the engine knows nothing of
    for key in ("obj", "place"):
        if a.facts.get(key) is not None and a.facts.get(key) == b.facts.get(key):
            return a.facts.get("view") == b.facts.get("view")
    return False


def local_count(bound: Value, gathered_value: Value) -> Optional[Tuple[cst.CSTNode, ...]]:
    """Where `bound` is proved to count one rank's share of what `gathered_value` gathered (the nodes that prove
    it), else None: the count of the value that was gathered, of a per-rank batch, or a per-device setting."""
    if bound.facts.get("per_rank") == ROWS and bound.facts.get("type") == NUMBER:
        return bound.reason("per_rank")
    counted = bound.facts.get("counts")
    found = gathered_value.facts.get("gathered")
    if counted is None or found is None or counted.facts.get("gathered"):
        return None
    if counted.facts.get("shared") is found[0] or same_value(counted, found[1]) or \
            counted.facts.get("per_rank") == ROWS:
        return bound.reason("counts")
    return None


def trainer_subclass(flow, cls) -> bool:
    """A project class whose chain of bases reaches a transformers / TRL trainer."""
    return cls is not None and any(is_trainer(base) for base in flow._bases(cls))


def per_rank_parameter(flow, function, param) -> Optional[str]:
    """The batch a transformers / TRL trainer hands one process, the `inputs` of the methods it calls: ROWS or
    ITEMS (see `_PER_RANK_ENTRIES`); None for another parameter."""
    position, kind = _PER_RANK_ENTRIES.get(function.name, (None, None))
    if position == param.index and function.cls is not None and trainer_subclass(flow, function.cls):
        return kind
    return None


def counted(number: Value, of: Value, node: cst.CSTNode) -> Value:
    """A count of the first axis of `of` (`len`, `size(0)`, `shape[0]`)."""
    return number.but(counts=of, why={"counts": (node,)})


def _share(frame, node: cst.Call, expr: Optional[cst.CSTNode], local: Value) -> None:
    """The place `expr` names, which a gather at `node` is given (`local`), holds from here on that value marked as
    this rank's share of the gather (`shared`): a value the code knows nothing else of is still the one value that
    place holds, whose count is this rank's."""
    if expr is not None:
        frame.store_at(expr, local.but(shared=node, why={"shared": (node,)}))


class Distributed(Domain):
    def call(self, frame, qual, node, args, kwargs):
        first = args[0] if args else None
        if qual in _ACCELERATE_GATHERS and first is not None:
            _share(frame, node, _argument(node, 0, "tensor"), first)
            return with_sources(gathered(first, node), first.sources)
        if qual in _INTO_LIST:
            keywords = _INTO_LIST[qual]
            into, local = _argument(node, 0, keywords[0]), _argument(node, 1, keywords[1])
            if into is not None and local is not None:  # `parts` now holds one part per rank, in rank order
                given = args[1] if len(args) > 1 else kwargs.get(keywords[1], UNKNOWN)
                _share(frame, node, local, given)
                frame.store_at(into, Value({"type": LIST, "element": given.derived().but(rank_part=(node, given))},
                                           {"element": (node,)}))
            return UNKNOWN
        if qual in _INTO_TENSOR:
            into, local = _argument(node, 0, "output_tensor"), _argument(node, 1, "input_tensor")
            if into is not None and local is not None:
                given = args[1] if len(args) > 1 else kwargs.get("input_tensor", UNKNOWN)
                _share(frame, node, local, given)
                frame.store_at(into, gathered(given, node))
            return UNKNOWN
        if qual in _RANK_CALLS:
            return value((node,), type=NUMBER, rank_index=True)
        if qual in ("torch.cat", "torch.concat", "torch.concatenate") and first is not None:
            part = (first.facts.get("element") or UNKNOWN).facts.get("rank_part")
            dim = kwargs.get("dim") or (args[1] if len(args) > 1 else None)
            if part is not None and (dim is None or dim.facts.get("number") == 0):
                return with_sources(gathered(part[1], part[0]), first.sources)
        return None

    def method(self, frame, receiver, name, node, args, kwargs):
        if receiver.facts.get("type") == ACCELERATOR and name in _ACCELERATOR_GATHERS and args:
            _share(frame, node, _argument(node, 0, "input_data"), args[0])
            return with_sources(gathered(args[0], node), args[0].sources)
        if name == "size" and len(node.args) == 1 and _zero(node.args[0].value):
            found = TORCH.method(frame, receiver, name, node, args, kwargs) or value((node,), type=NUMBER)
            return counted(found, receiver, node)
        return None

    def attribute(self, frame, base, attr, node):
        kind = base.facts.get("type")
        if kind == INSTANCE and trainer_subclass(frame.flow, base.facts.get("cls")):
            if attr == "accelerator":  # a transformers trainer builds its `Accelerator` in `__init__`
                return value((node,), type=ACCELERATOR)
            if attr == "args":
                return value((node,), trainer_args=True)
        if kind == TRAINER and attr == "accelerator":
            return value((node,), type=ACCELERATOR)
        if kind == ACCELERATOR:
            if attr == "process_index":
                return value((node,), type=NUMBER, rank_index=True)
            if attr in _MAIN_FLAGS:
                return value((node,), type=BOOL, main_process=True)
        if attr in PER_DEVICE_BATCH and (base.facts.get("trainer_args") or kind == CONFIG and
                                         (base.facts.get("framework") or ("",))[0] in ("transformers", "trl")):
            found = CONFIG_DOMAIN.attribute(frame, base, attr, node) if kind == CONFIG else None
            found = found if found is not None and found.facts.get("type") == NUMBER else value((node,), type=NUMBER)
            return found.but(per_rank=ROWS, why={"per_rank": (node,)})
        if attr == "shape" and kind in (TENSOR, None) and base.facts:
            found = (TORCH.attribute(frame, base, attr, node) if kind == TENSOR else None) or \
                value((node,), type=SHAPE)
            first = item_of(found, 0)
            if first is not None:  # `x.shape[0]` of a tensor of known rank: read as an item
                found = set_item(found, 0, counted(first, base, node))
            return found.but(shape_of=base)
        return None

    def subscript(self, frame, base, node):
        key = frame.constant_key(node)
        if base.facts.get("type") == SHAPE and base.facts.get("shape_of") is not None and key == 0:
            return counted(value((node,), type=NUMBER), base.facts["shape_of"], node)
        if base.facts.get("per_rank") and isinstance(key, str):  # `inputs["prompt_ids"]`: one process's rows
            return value((node,), per_rank=ROWS)
        return None


def _argument(node: cst.Call, position: int, keyword: str) -> Optional[cst.BaseExpression]:
    """The expression a call passes its parameter at `position` or named `keyword`."""
    positional = [a.value for a in node.args if a.keyword is None and not a.star]
    if position < len(positional):
        return positional[position]
    return next((a.value for a in node.args if a.keyword is not None and a.keyword.value == keyword), None)


def _zero(node: cst.CSTNode) -> bool:
    return isinstance(node, cst.Integer) and node.evaluated_value == 0


DISTRIBUTED = Distributed()


def main_process_only(flow, tests) -> bool:
    """Whether one of these branch tests holds only on the main process (`accelerator.is_main_process`, `rank ==
    0`): there the first share of a gathered value is that process's own."""
    return any(flow.value(test).facts.get("main_process") for test in tests)
