"""The hook through which a ``Session`` with a non-empty target runs on a cluster.

The runtime knows nothing of clusters: ``gradflow.distribute`` registers a runner factory
here when it is imported. ``Session(target)`` asks ``target_runner`` for a runner and hands
each run's flattened fetches and checked feeds to it.
"""
from __future__ import annotations

from typing import Callable, Optional, Protocol, Sequence

from gradflow.framework.graph import Graph, Operation, Tensor

__all__ = ["TargetRunner", "set_target_runner", "target_runner"]


class TargetRunner(Protocol):
    """What a session needs from a cluster: run a step, list devices, close."""

    def run(self, fetches: Sequence[Tensor], targets: Sequence[Operation],
            feeds: Sequence[Tensor], feed_values: Sequence) -> list: ...

    def list_devices(self) -> list: ...

    def close(self) -> None: ...


_factory: Optional[Callable[[str, Graph, object], TargetRunner]] = None


def set_target_runner(factory: Optional[Callable[[str, Graph, object], TargetRunner]]) -> None:
    """Registers ``factory(target, graph, config)`` making the runner of a session target."""
    global _factory
    _factory = factory


def target_runner(target, graph: Graph, config) -> Optional[TargetRunner]:
    """The runner for ``target`` (None for the in-process target "")."""
    if isinstance(target, bytes):
        target = target.decode("utf-8")
    if not isinstance(target, str):
        raise TypeError(f"target must be a string, got {type(target).__name__}")
    if not target:
        return None
    if _factory is None:
        raise ValueError(f"Session target {target!r} names a cluster, but no cluster runner "
                         "is available: install the distributed extra "
                         "(pip install \"gradflow[distributed]\") and import "
                         "gradflow.distribute (gradflow.train.Server does).")
    return _factory(target, graph, config)
