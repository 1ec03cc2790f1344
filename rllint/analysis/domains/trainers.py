"""The trainers domain: a transformers or TRL trainer object holds what it was constructed with.

`GRPOTrainer(model=model, processing_class=tok, args=cfg)` keeps those objects as its attributes: a callback
handed the trainer reads `trainer.processing_class` (or `trainer.tokenizer`, the keyword and attribute of the
older releases, which later ones still answer with the same object), `trainer.model`, `trainer.args` and
`trainer.ref_model`. The trainer class is the library's, resolved through the imports (`from trl import
GRPOTrainer`, `transformers.Trainer`), never a class of the project that shares its name.

Only keywords are read (the trainers order their positional parameters differently, across classes and
releases), and only what the trainer keeps as it is given:
- `processing_class` / `tokenizer`: the object given (none given: the trainer loads one from the model id);
- `model`: a model object given (an id, or `model_init=`, loads a new one); with `peft_config=`, the trainer
  wraps it as `get_peft_model` does (`lora`);
- `args`: the config given (none: the trainer's own default config);
- `ref_model`: the reference model given: the model the KL anchors `model` to (an `anchor` event of the flow, as
  `ref_policy=` is of `policy=` in TRL's RLOO and PPO trainers of releases 0.11-0.13).
An attribute not given stays unknown.
"""
from __future__ import annotations

from typing import Dict, List, Optional, Tuple

import libcst as cst

from rllint.analysis.domains.base import Domain
from rllint.analysis.facts import MODEL, NONE, TRAINER, Value, with_sources

# The keywords that hand a trainer the model it trains and the reference its KL anchors that model to: TRL's
# `model=` / `ref_model=`, and `policy=` / `ref_policy=` of its RLOO and PPO trainers of releases 0.11-0.13.
_ANCHORS = (("model", "ref_model"), ("policy", "ref_policy"))
# The keywords that name the tokenizer (or processor), and the attributes that hold it.
_PROCESSING = ("processing_class", "tokenizer")


def is_trainer(qual: str) -> bool:
    """`transformers.Trainer` or a TRL trainer (`trl.GRPOTrainer`, `trl.trainer.grpo_trainer.GRPOTrainer`)."""
    head, _, name = qual.partition(".")
    return head in ("transformers", "trl") and name.rsplit(".", 1)[-1].endswith("Trainer")


class Trainers(Domain):
    def call(self, frame, qual, node, args, kwargs):
        if not is_trainer(qual):
            return None
        kept = _kept(node, kwargs)
        held = {**kwargs, **dict(kept)}
        for policy, reference in _ANCHORS:  # the model the KL anchors the trained one to
            if all(held.get(name) is not None and held[name].facts.get("type") == MODEL for name in (policy, reference)):
                frame.emit("anchor", node, held[reference], reference, policy=held[policy])
        trainer = Value({"type": TRAINER, "trainer": qual, "fields": kept}, {"type": (node,)})
        # handed a model, it trains it out of sight: what it gives back may carry gradient the file does not show
        return with_sources(trainer, frame._opaque(node, args, kwargs).sources)

    def attribute(self, frame, base, attr, node):
        if base.facts.get("type") != TRAINER:
            return None
        return dict(base.facts.get("fields") or ()).get(attr)


def reassigned(trainer: Value, paths: List[List[str]], stored: List[Value]) -> Value:
    """A trainer after the code assigned its attributes (`trainer.processing_class = tok`): an attribute assigned
    whole holds what was stored (the tokenizer under both its names; assigned under both, which came last is not
    kept here: not known); one changed inside (`trainer.args.learning_rate = x`) is no longer known."""
    fields = dict(trainer.facts.get("fields") or ())
    whole = {path[0]: held for path, held in zip(paths, stored) if len(path) == 1}
    for name, held in whole.items():
        fields.update((alias, held) for alias in (_PROCESSING if name in _PROCESSING else (name,)))
    if all(name in whole for name in _PROCESSING) and whole[_PROCESSING[0]] is not whole[_PROCESSING[1]]:
        for name in _PROCESSING:
            fields.pop(name)
    for path in paths:  # changed inside, before or after it was assigned whole
        if len(path) > 1:
            for name in _PROCESSING if path[0] in _PROCESSING else (path[0],):
                fields.pop(name, None)
    return trainer.but(fields=tuple(fields.items()))


def _kept(node: cst.Call, kwargs: Dict[str, Value]) -> Tuple[Tuple[str, Value], ...]:
    """The attributes a trainer constructed with these keywords holds as they were given."""
    kept: List[Tuple[str, Value]] = []
    processing = _given(kwargs, *_PROCESSING)
    if processing is not None:
        kept.extend((name, processing) for name in _PROCESSING)
    model = kwargs.get("model")
    if model is not None and model.facts.get("type") == MODEL and "model_init" not in kwargs:
        wrapped = _given(kwargs, "peft_config") is not None
        kept.append(("model", model.but(lora=True, why={"lora": (node,)}) if wrapped else model))
    for name in ("args", "ref_model"):
        given = _given(kwargs, name)
        if given is not None:
            kept.append((name, given))
    return tuple(kept)


def _given(kwargs: Dict[str, Value], *names: str) -> Optional[Value]:
    """The first of these keywords given a value that may not be None."""
    for name in names:
        found = kwargs.get(name)
        if found is not None and found.facts.get("type") != NONE:
            return found
    return None


TRAINERS = Trainers()
