"""TensorBoard event files, read with the `tensorboard` package (the optional `rllint[tensorboard]` extra).

Scalars written by PyTorch's `SummaryWriter` (`simple_value`) and by TF2 / tensorboard's own
summary API (one-element tensors) are both read. A folder of event files is one run.
"""
from __future__ import annotations

import logging

from rllint.logs.readers import LogReadError, Run

INSTALL_HINT = "reading TensorBoard event files needs the `tensorboard` extra: pip install 'rllint[tensorboard]'"


def read_events(path: str) -> Run:
    try:
        from tensorboard.backend.event_processing import event_accumulator
        from tensorboard.util import tensor_util
    except ImportError:
        raise LogReadError(INSTALL_HINT) from None
    logging.getLogger("tensorboard").setLevel(logging.ERROR)  # it warns on every odd record
    everything = {event_accumulator.SCALARS: 0, event_accumulator.TENSORS: 0}
    for kind in (event_accumulator.IMAGES, event_accumulator.AUDIO, event_accumulator.HISTOGRAMS,
                 event_accumulator.COMPRESSED_HISTOGRAMS):
        everything[kind] = 1
    accumulator = event_accumulator.EventAccumulator(path, size_guidance=everything)
    try:
        accumulator.Reload()
    except Exception as error:  # tensorboard raises its own DataLossError and others on damaged files
        raise LogReadError(f"cannot read the event file: {type(error).__name__}: {error}") from None
    run = Run(path)
    tags = accumulator.Tags()
    for tag in tags.get(event_accumulator.SCALARS, []):
        for event in accumulator.Scalars(tag):
            run.add(tag, event.step, event.value, 1)
    for tag in tags.get(event_accumulator.TENSORS, []):
        for event in accumulator.Tensors(tag):
            value = tensor_util.make_ndarray(event.tensor_proto)
            if value.size == 1 and value.dtype.kind in "fiu":
                run.add(tag, event.step, float(value.reshape(())), 1)
    return run
