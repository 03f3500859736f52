"""``summary_iterator``: the ``Event`` protos of an event file (TF1's
``tf.train.summary_iterator``), read with the ``tensorboard`` package's record reader."""
from __future__ import annotations

from typing import Iterator

from tensorboard.backend.event_processing.event_file_loader import RawEventFileLoader
from tensorboard.compat.proto import event_pb2

from gradflow.framework import errors
from gradflow.gfile import Exists

__all__ = ["summary_iterator"]


def summary_iterator(path: str) -> Iterator[event_pb2.Event]:
    """Yields each ``Event`` of the event file ``path`` in order (the version event
    first); NotFoundError if there is no such file."""
    if not Exists(path):
        raise errors.NotFoundError(None, None, f"{path}; No such file or directory")
    for record in RawEventFileLoader(path).Load():
        yield event_pb2.Event.FromString(record)
