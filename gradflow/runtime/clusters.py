"""The hook through which a compiling backend turns parts of a plan into clusters.

The runtime knows nothing of any compiler. A backend (``gradflow/backends/xla``)
registers a *cluster compiler*: a function given a plan's program and whether the whole
graph was asked to compile (``ConfigProto``'s ``global_jit_level``); it returns the
program with groups of nodes replaced by ``ClusterNode``s. The plan compiler consults
it only when a plan asks: the session's config turns global jit on, or an op of the
plan carries ``_XlaCompile`` (``jit_scope``). Without a registered compiler a global-jit
plan raises ``XlaUnavailableError``; ops marked by attrs alone run on NumPy.
"""
from __future__ import annotations

import os
from typing import Callable, Optional, Sequence

import numpy as np

from gradflow.framework.graph import Operation

__all__ = ["ClusterNode", "DeviceValue", "register_cluster_compiler", "cluster_compiler",
           "jit_requested", "global_jit_requested", "XlaUnavailableError", "INSTALL_HINT"]

INSTALL_HINT = 'XLA compilation needs JAX: pip install "gradflow[xla]" (or pip install jax)'


class XlaUnavailableError(ImportError):
    """Raised when a graph asks for XLA compilation and no backend can provide it."""


class ClusterNode:
    """Program nodes compiled as one: ``call(ctx, *input values)`` returns ``outputs``' values.

    ``ops`` are the member ops in creation order; ``inputs`` the values (tensors or
    plan constants) read from outside; ``outputs`` the member outputs read outside or
    fetched; ``device`` the device the cluster runs on, in TF's spelling.
    """

    __slots__ = ("ops", "inputs", "outputs", "call", "device")

    def __init__(self, ops: Sequence[Operation], inputs: list, outputs: list, call: Callable,
                 device: str):
        self.ops = tuple(ops)
        self.inputs = inputs
        self.outputs = outputs
        self.call = call
        self.device = device


class DeviceValue:
    """A variable's value as a compiled cluster left it: on its device, perhaps still
    being computed. The session's store holds it so the next compiled run takes it
    as it is (no copy to the host and back); ``host()`` is the NumPy view every
    other reader gets (``RunContext.read_variable``), waiting for the value first."""

    __slots__ = ("array", "_host")

    def __init__(self, array):
        self.array = array
        self._host = None

    def host(self):
        """The value as a read-only NumPy array (a view of the device buffer on CPU)."""
        if self._host is None:
            self._host = np.asarray(self.array)
        return self._host


_compiler: list = []


def register_cluster_compiler(compiler: Callable) -> None:
    """Installs ``compiler(program, global_jit) -> program`` (the last one registered wins)."""
    _compiler[:] = [compiler]


def cluster_compiler(required: bool) -> Optional[Callable]:
    """The registered cluster compiler. Without one: None, or XlaUnavailableError when
    compilation is ``required`` (global jit; compile attrs alone leave ops on NumPy)."""
    if not _compiler:
        if required:
            raise XlaUnavailableError(f"This graph asks for XLA compilation, but no XLA "
                                      f"backend is loaded. {INSTALL_HINT}")
        return None
    return _compiler[0]


# Testing switch: GRADFLOW_XLA=1 compiles every session's graphs as global_jit_level
# ON_1 would, so whole test suites can run under the XLA backend.
_FORCE_GLOBAL_JIT = os.environ.get("GRADFLOW_XLA", "") not in ("", "0")


# OptimizerOptions.GlobalJitLevel: DEFAULT = 0 and OFF = -1 leave graphs on NumPy.
def global_jit_requested(config) -> bool:
    """Whether a ``ConfigProto`` asks for whole-graph compilation (``ON_1``/``ON_2``)."""
    if config is None:
        return _FORCE_GLOBAL_JIT
    level = config.graph_options.optimizer_options.global_jit_level
    return level > 0 or (_FORCE_GLOBAL_JIT and level == 0)


def jit_requested(ops: Sequence[Operation], global_jit: bool) -> bool:
    """Whether a plan of ``ops`` asks to be clustered."""
    return global_jit or any(op._attrs.get("_XlaCompile") is True for op in ops)
