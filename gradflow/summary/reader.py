"""``summary_iterator``: the ``Event`` protos of an event file (TF1's
``tf.train.summary_iterator``), read with the hardened TFRecord framing of
``gradflow/io/tfrecord.py`` (regular files only, lengths and CRCs checked before reading)."""
from __future__ import annotations

from typing import Iterator

from tensorboard.compat.proto import event_pb2

from gradflow.io.tfrecord import read_records

__all__ = ["summary_iterator"]


def summary_iterator(path: str) -> Iterator[event_pb2.Event]:
    """Yields each ``Event`` of the event file ``path`` in order (the version event
    first). NotFoundError if there is no such file, ValueError if it is not a regular
    file, DataLossError (naming the file and the offset) for a corrupt or truncated
    record, protobuf's DecodeError for a record that is not an ``Event``."""
    for record in read_records(path):
        yield event_pb2.Event.FromString(record)
