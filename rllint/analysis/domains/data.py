"""The data domain: what a torch `DataLoader` yields, and the wrappers that iterate what they are given.

A loop over `DataLoader(dataset, collate_fn=collate)` binds what `collate` returns for a list of the
dataset's items (its `__getitem__`, when the dataset is an instance of a project class); without a
collate function, the items themselves (the default collation keeps their keys). Progress bars (`tqdm`)
iterate their first argument as it is.
"""
from __future__ import annotations

from typing import Optional

from rllint.analysis.domains.base import Domain
from rllint.analysis.facts import FUNCTION, INSTANCE, LIST, UNKNOWN, Value, with_sources

LOADERS = frozenset({"torch.utils.data.DataLoader", "torch.utils.data.dataloader.DataLoader"})
PROGRESS_BARS = frozenset({"tqdm.tqdm", "tqdm.auto.tqdm", "tqdm.notebook.tqdm", "tqdm.std.tqdm", "tqdm.rich.tqdm"})
LOADER = "loader"  # the type of a DataLoader's value: `element` is one batch


class Data(Domain):
    def call(self, frame, qual, node, args, kwargs):
        if qual in PROGRESS_BARS:
            iterable = kwargs.get("iterable") or (args[0] if args else None)
            return iterable
        if qual not in LOADERS:
            return None
        dataset = kwargs.get("dataset") or (args[0] if args else UNKNOWN)
        item = _item(frame, node, dataset)
        collate = kwargs.get("collate_fn")
        if collate is not None and collate.facts.get("type") == FUNCTION and "function" in collate.facts:
            function = collate.facts["function"]
            params = [p for p in function.params if not p.star]
            bound = collate.facts.get("bound")
            if bound is not None:
                params = params[1:]
            samples = Value({"type": LIST, "element": item}) if item is not None else UNKNOWN
            batch = frame.run_function(function, node, {params[0].name: samples} if params else {}, bound)
        else:
            batch = item if item is not None else UNKNOWN
        return with_sources(Value({"type": LOADER, "element": batch}), batch.sources)


def _item(frame, node, dataset: Value) -> Optional[Value]:
    """What `dataset[i]` is, when the dataset is an instance of a project class with a `__getitem__`."""
    cls = dataset.facts.get("cls")
    if dataset.facts.get("type") != INSTANCE or cls is None:
        return None
    method = cls.module.flow.method_of(cls, "__getitem__")
    if method is None:
        return None
    index = [p for p in method.params if not p.star][1:2]
    return frame.run_function(method, node, {index[0].name: UNKNOWN} if index else {}, dataset)


DATA = Data()
