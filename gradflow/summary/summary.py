"""The TF1 summary constructors: ``scalar``, ``histogram``, ``image``, ``audio``, ``text``,
``tensor_summary``, ``merge`` and ``merge_all``.

Each builds its summary op under a name scope named after the summary, whose name is
also the tag (``family`` prefixes both, as in TF1), and adds the output to
``collections`` (default ``GraphKeys.SUMMARIES``).
"""
from __future__ import annotations

import re
from typing import Optional, Sequence

from tensorboard.compat.proto import summary_pb2

from gradflow.framework import dtypes
from gradflow.framework.constant import constant, convert_to_tensor
from gradflow.framework.graph import GraphKeys, Tensor, get_default_graph, name_scope
from gradflow.ops import summary_ops

__all__ = ["scalar", "histogram", "image", "audio", "text", "tensor_summary", "merge",
           "merge_all"]

_INVALID_TAG_CHARACTERS = re.compile(r"[^-/\w\.]")


def _clean_tag(name: str) -> str:
    """Characters TF1 does not allow in a summary name become ``_``; leading ``/`` go."""
    return _INVALID_TAG_CHARACTERS.sub("_", name).lstrip("/")


class _SummaryScope:
    """``with _SummaryScope(name, family) as (tag, scope)``: TF1's summary name scope."""

    def __init__(self, name: str, family: Optional[str], values: Sequence):
        if not isinstance(name, str):
            raise TypeError(f"name must be a string, got {type(name).__name__}")
        self._name = _clean_tag(name)
        self._family = _clean_tag(family) if family else None
        self._values = values
        self._scope = None

    def __enter__(self) -> tuple[str, str]:
        # one scope named "family/name": a second "acc" of a family is "fam/acc_1"
        base = f"{self._family}/{self._name}" if self._family else self._name
        self._scope = name_scope(base, values=self._values)
        full = self._scope.__enter__()
        tag = full.rstrip("/")
        return (f"{self._family}/{tag}" if self._family else tag), full

    def __exit__(self, *exc) -> None:
        self._scope.__exit__(*exc)


def _collect(value: Tensor, collections) -> Tensor:
    for key in [GraphKeys.SUMMARIES] if collections is None else collections:
        value.graph.add_to_collection(key, value)
    return value


def scalar(name: str, tensor, collections=None, family: Optional[str] = None) -> Tensor:
    """A ``ScalarSummary`` of the real scalar ``tensor`` (TensorBoard's scalars tab)."""
    value = convert_to_tensor(tensor, name="tensor")
    if value.shape.ndims is not None and value.shape.ndims != 0:
        raise ValueError(f"Shapes must be equal rank, but are 0 and {value.shape.ndims} for "
                         f"'{name}' (op: 'ScalarSummary') with input shapes: [], "
                         f"{value.shape.as_list()}.")
    with value.graph.atomic(), _SummaryScope(name, family, [value]) as (tag, scope):
        tags = constant(tag, name="tags")
        return _collect(summary_ops.scalar_summary_op(tags, value, name=scope), collections)


def histogram(name: str, values, collections=None, family: Optional[str] = None) -> Tensor:
    """A ``HistogramSummary`` of ``values`` (TensorBoard's histograms/distributions)."""
    value = convert_to_tensor(values, name="values")
    with value.graph.atomic(), _SummaryScope(name, family, [value]) as (tag, scope):
        tag_t = constant(tag, name="tag")
        return _collect(summary_ops.histogram_summary_op(tag_t, value, name=scope), collections)


def image(name: str, tensor, max_outputs: int = 3, collections=None,
          family: Optional[str] = None) -> Tensor:
    """An ``ImageSummary`` of the first ``max_outputs`` images of ``tensor`` [b, h, w, c]."""
    value = convert_to_tensor(tensor, name="tensor")
    with value.graph.atomic(), _SummaryScope(name, family, [value]) as (tag, scope):
        tag_t = constant(tag, name="tag")
        return _collect(summary_ops.image_summary_op(tag_t, value, max_outputs, name=scope),
                        collections)


def audio(name: str, tensor, sample_rate, max_outputs: int = 3, collections=None,
          family: Optional[str] = None) -> Tensor:
    """An ``AudioSummaryV2`` of ``tensor`` ([b, frames, channels] or [b, frames], in
    [-1, 1]) at ``sample_rate`` Hz."""
    value = convert_to_tensor(tensor, name="tensor")
    with value.graph.atomic(), _SummaryScope(name, family, [value]) as (tag, scope):
        rate = convert_to_tensor(sample_rate, dtype=dtypes.float32, name="sample_rate")
        tag_t = constant(tag, name="tag")
        return _collect(summary_ops.audio_summary_op(tag_t, value, rate, max_outputs,
                                                     name=scope), collections)


def _metadata_summary(name: str, value: Tensor, metadata: summary_pb2.SummaryMetadata,
                      collections, family: Optional[str] = None) -> Tensor:
    with value.graph.atomic(), _SummaryScope(name, family, [value]) as (tag, scope):
        tag_t = constant(tag, name="tag")
        serialized = constant(metadata.SerializeToString(),
                              name="serialized_summary_metadata")
        return _collect(summary_ops.tensor_summary_op(tag_t, value, serialized, name=scope),
                        collections)


def text(name: str, tensor, collections=None) -> Tensor:
    """A string tensor for TensorBoard's text tab (a ``TensorSummaryV2`` of the text
    plugin; Markdown is rendered there)."""
    value = convert_to_tensor(tensor, name="tensor")
    if value.dtype is not dtypes.string:
        raise ValueError(f"Expected tensor {value.name} to have dtype string, got "
                         f"{value.dtype!r}")
    metadata = summary_pb2.SummaryMetadata(
        plugin_data=summary_pb2.SummaryMetadata.PluginData(plugin_name="text"))
    return _metadata_summary(name, value, metadata, collections)


def tensor_summary(name: str, tensor, summary_description=None, collections=None,
                   summary_metadata=None, family: Optional[str] = None,
                   display_name: Optional[str] = None) -> Tensor:
    """A ``TensorSummaryV2`` holding the whole ``tensor`` as a ``TensorProto``."""
    value = convert_to_tensor(tensor, name="tensor")
    metadata = summary_pb2.SummaryMetadata()
    if summary_metadata is not None:
        metadata.CopyFrom(summary_metadata)
    if summary_description is not None:
        metadata.summary_description = summary_description
    if display_name is not None:
        metadata.display_name = display_name
    return _metadata_summary(name, value, metadata, collections, family)


def merge(inputs: Sequence, collections=None, name: Optional[str] = None) -> Tensor:
    """One ``Summary`` holding the values of all ``inputs`` (duplicate tags fail the run)."""
    tensors = [convert_to_tensor(t) for t in inputs]
    graph = tensors[0].graph if tensors else get_default_graph()
    with graph.atomic(), name_scope(name, "Merge", tensors):
        merged = summary_ops.merge_summary_op(tensors, name="MergeSummary")
        for key in collections or []:
            graph.add_to_collection(key, merged)
        return merged


def merge_all(key: str = GraphKeys.SUMMARIES, scope: Optional[str] = None,
              name: Optional[str] = None) -> Optional[Tensor]:
    """``merge`` of every summary in collection ``key`` (under ``scope``); None if empty."""
    summaries = get_default_graph().get_collection(key, scope=scope)
    if not summaries:
        return None
    return merge(summaries, name=name)

