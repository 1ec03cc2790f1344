"""TensorBoard event files, read with the `tensorboard` package (the optional `rllint[tensorboard]` extra).

Scalars written by PyTorch's `SummaryWriter` (`simple_value`) and by TF2 / tensorboard's own
summary API (one-element tensors) are both read. A folder of event files is one run, its files
read in name order (the order they were written in).

tensorboard's loaders stop in silence at the first damaged record, so that a damaged file would
read as a run that logged nothing, or less than it did. So each file's framing is walked as
well (every record is its length, that length's checksum, the data and its checksum): a file
whose records were not all read is damaged, and the message names it and where. A last record
cut short is a run still being written: a warning, as for JSON lines.
"""
from __future__ import annotations

import logging
import os
import struct
from typing import BinaryIO, Callable, Optional, Tuple

from rllint.logs.readers import EVENTS_PREFIX, MAX_STREAMED_BYTES, LogReadError, Run, open_log

INSTALL_HINT = "reading TensorBoard event files needs the `tensorboard` extra: pip install 'rllint[tensorboard]'"
_HEADER = 12  # a record's length (8 bytes, little-endian) and its masked CRC-32C (4)
_TRAILER = 4  # the data's masked CRC-32C


def read_events(folder: str, wants: Callable[[str], bool] = lambda key: True) -> Run:
    """The scalars of the event files in `folder` whose tags `wants` accepts."""
    try:
        from tensorboard.backend.event_processing import event_file_loader
        from tensorboard.compat.proto import event_pb2
        from tensorboard.util import tensor_util
    except ImportError:
        raise LogReadError(INSTALL_HINT) from None
    logging.getLogger("tensorboard").setLevel(logging.ERROR)  # it warns on every odd record
    run = Run(folder, wants)
    for name in sorted(n for n in os.listdir(folder) if n.startswith(EVENTS_PREFIX)):
        path = os.path.join(folder, name)
        try:
            with open_log(path, MAX_STREAMED_BYTES) as handle:  # a regular file, within the bound
                framed, problem = _framing(handle)
        except LogReadError as error:
            raise LogReadError(f"{name}: {error}") from None
        read = 0
        for record in event_file_loader.RawEventFileLoader(path).Load():
            read += 1
            event = event_pb2.Event.FromString(record)
            for value in event.summary.value:
                if value.HasField("simple_value"):
                    run.add(value.tag, event.step, value.simple_value, 1)
                elif value.HasField("tensor") and wants(value.tag):
                    array = tensor_util.make_ndarray(value.tensor)
                    if array.size == 1 and array.dtype.kind in "fiu":
                        run.add(value.tag, event.step, float(array.reshape(())), 1)
        if read < framed:  # a record whose data fails its checksum: the loader stopped there
            problem = f"damaged: record {read + 1} of {framed} fails its checksum"
        if problem is None:
            continue
        if problem.startswith("truncated") and read == framed:
            run.warnings.append(f"{name}: its last record is cut short (a run still being written?); read up to it")
        elif read:
            run.warnings.append(f"{name}: {problem}; the {read} record{'s' if read > 1 else ''} before it were read")
        else:
            raise LogReadError(f"{name}: {problem}; no record could be read")
    return run


def _framing(handle: BinaryIO) -> Tuple[int, Optional[str]]:
    """How many whole records an event file holds by its framing, and what is wrong with it: None, "truncated
    ..." (the last record cut short) or "damaged ..." (a length that fails its checksum: not an event file
    from there on)."""
    from tensorboard.compat.tensorflow_stub.pywrap_tensorflow import masked_crc32c

    size = os.fstat(handle.fileno()).st_size
    records = 0
    while True:
        start = handle.tell()
        header = handle.read(_HEADER)
        if not header:
            return records, None
        if len(header) < _HEADER:
            return records, f"truncated at byte {start}"
        length, checksum = struct.unpack("<QI", header)
        if masked_crc32c(header[:8]) != checksum:
            return records, f"damaged at byte {start}: not a record of an event file"
        if start + _HEADER + length + _TRAILER > size:
            return records, f"truncated at byte {start}"
        handle.seek(length + _TRAILER, os.SEEK_CUR)
        records += 1
