"""``FileWriter`` and ``FileWriterCache``: TF1's event-file writer for TensorBoard.

Events are TF's ``Event`` protos written by the ``tensorboard`` package's own
``EventFileWriter`` (TFRecord framing, masked CRC32C, a background flush thread), to
``<logdir>/events.out.tfevents.<time>.<host><suffix>``; a ``brain.Event:2`` version event
comes first, as TF writes it.
"""
from __future__ import annotations

import threading
import time
import warnings
from typing import Optional, Union

from tensorboard.compat.proto import event_pb2, graph_pb2, summary_pb2
from tensorboard.summary.writer.event_file_writer import EventFileWriter

from gradflow.framework.graph import Graph, get_default_graph
from gradflow.gfile import MakeDirs

__all__ = ["FileWriter", "FileWriterCache"]


class FileWriter:
    """Writes summaries, graphs, run metadata and session logs to an event file.

    ``graph`` (a gf.Graph) or ``graph_def`` (a GraphDef proto) is written at once, so
    TensorBoard's graph tab shows it. ``max_queue`` events are buffered and written at
    least every ``flush_secs`` seconds. ``session=`` (TF1's writer backed by a summary
    resource) is not supported.
    """

    def __init__(self, logdir: str, graph: Optional[Graph] = None, max_queue: int = 10,
                 flush_secs: float = 120, graph_def=None, filename_suffix: Optional[str] = None,
                 session=None):
        if session is not None:
            raise ValueError("FileWriter(session=...) is not supported: gradflow writes "
                             "event files directly; leave session out")
        if not isinstance(logdir, str) or not logdir:
            raise ValueError(f"logdir must be a non-empty string, got {logdir!r}")
        self._logdir = logdir
        self._options = dict(max_queue_size=int(max_queue), flush_secs=flush_secs,
                             filename_suffix=filename_suffix or "")
        self._lock = threading.Lock()
        self._seen_tags: set = set()
        self._closed = False
        MakeDirs(logdir)
        self._writer = EventFileWriter(logdir, **self._options)
        if graph is not None or graph_def is not None:
            self.add_graph(graph, graph_def=graph_def)

    def get_logdir(self) -> str:
        return self._logdir

    def add_event(self, event: event_pb2.Event) -> None:
        """Writes ``event`` as given (``wall_time`` filled in if left at 0)."""
        if not isinstance(event, event_pb2.Event):
            raise TypeError(f"event must be an Event proto, got {type(event).__name__}")
        if not event.wall_time:
            event.wall_time = time.time()
        with self._lock:
            if self._closed:  # TF1's: a warning, and nothing written until reopen()
                warnings.warn("Attempting to use a closed FileWriter. The operation will be "
                              "a noop unless the FileWriter is explicitly reopened.",
                              stacklevel=2)
                return
            self._writer.add_event(event)

    def _add(self, global_step: Optional[int], **fields) -> None:
        event = event_pb2.Event(wall_time=time.time(), **fields)
        if global_step is not None:
            event.step = int(global_step)
        self.add_event(event)

    def add_summary(self, summary: Union[bytes, summary_pb2.Summary],
                    global_step: Optional[int] = None) -> None:
        """Writes a ``Summary`` (the proto or its serialized bytes, as ``sess.run``
        returns it). A tag's plugin metadata is written only with its first value."""
        if isinstance(summary, (bytes, bytearray)):
            summary = summary_pb2.Summary.FromString(bytes(summary))
        elif hasattr(summary, "item") and not isinstance(summary, summary_pb2.Summary):
            summary = summary_pb2.Summary.FromString(summary.item())  # a 0-d array
        if not isinstance(summary, summary_pb2.Summary):
            raise TypeError(f"summary must be a Summary proto or its serialized bytes, got "
                            f"{type(summary).__name__}")
        copy = summary_pb2.Summary()
        copy.CopyFrom(summary)
        for value in copy.value:
            if value.HasField("metadata"):
                if value.tag in self._seen_tags:
                    value.ClearField("metadata")
                else:
                    self._seen_tags.add(value.tag)
        self._add(global_step, summary=copy)

    def add_session_log(self, session_log: event_pb2.SessionLog,
                        global_step: Optional[int] = None) -> None:
        self._add(global_step, session_log=session_log)

    def add_graph(self, graph: Optional[Graph], global_step: Optional[int] = None,
                  graph_def=None) -> None:
        """Writes ``graph`` (a gf.Graph) or ``graph_def`` for TensorBoard's graph tab."""
        if graph is not None and graph_def is not None:
            raise ValueError("Please pass only graph, or graph_def (deprecated), but not both.")
        if graph is not None:
            if not isinstance(graph, Graph):
                raise TypeError(f"graph must be a gf.Graph, got {type(graph).__name__}")
            graph_def = graph.as_graph_def(add_shapes=True)
        if not isinstance(graph_def, graph_pb2.GraphDef):
            raise TypeError(f"graph_def must be a GraphDef proto, got "
                            f"{type(graph_def).__name__}")
        self._add(global_step, graph_def=graph_def.SerializeToString())

    def add_meta_graph(self, meta_graph_def, global_step: Optional[int] = None) -> None:
        self._add(global_step, meta_graph_def=meta_graph_def.SerializeToString())

    def add_run_metadata(self, run_metadata, tag: str,
                         global_step: Optional[int] = None) -> None:
        """Writes a ``RunMetadata`` (step stats of a traced run) under ``tag``: TensorBoard
        shows it as a session run in the graph tab."""
        tagged = event_pb2.TaggedRunMetadata(tag=tag,
                                             run_metadata=run_metadata.SerializeToString())
        self._add(global_step, tagged_run_metadata=tagged)

    def flush(self) -> None:
        with self._lock:
            if not self._closed:
                self._writer.flush()

    def close(self) -> None:
        """Flushes and closes the file; ``reopen`` starts a new one."""
        with self._lock:
            if not self._closed:
                self._writer.close()
                self._closed = True

    def reopen(self) -> None:
        """After ``close``: writes on, into a new event file in the same directory."""
        with self._lock:
            if self._closed:
                self._writer = EventFileWriter(self._logdir, **self._options)
                self._closed = False

    def __enter__(self) -> "FileWriter":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class FileWriterCache:
    """One shared ``FileWriter`` per log directory (what the summary hooks write with);
    a new one starts with the default graph, as in TF1."""

    _cache: dict = {}
    _lock = threading.Lock()

    @staticmethod
    def get(logdir: str) -> FileWriter:
        with FileWriterCache._lock:
            writer = FileWriterCache._cache.get(logdir)
            if writer is None:
                writer = FileWriterCache._cache[logdir] = FileWriter(
                    logdir, graph=get_default_graph())
            return writer

    @staticmethod
    def clear() -> None:
        """Closes and forgets every cached writer."""
        with FileWriterCache._lock:
            for writer in FileWriterCache._cache.values():
                writer.close()
            FileWriterCache._cache = {}
