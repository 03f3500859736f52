"""The TF1 ways of asking for XLA: ``jit_scope`` and ``compile`` (``tf.xla.experimental``).

Both mark ops with the compile attrs of ``framework/compile_scope.py``; the plan
compiler then clusters the marked ops (and their gradients, by the ``_XlaScope`` rules).
Both check first that JAX can be imported, so asking for XLA without it raises
``XlaUnavailableError`` (an ImportError) saying how to install it. Whole graphs are
compiled through ``ConfigProto``'s ``global_jit_level``, read by ``Session``.
"""
from __future__ import annotations

import contextlib
from typing import Any, Callable, Iterator, Optional, Sequence

from gradflow.backends.xla.runtime import jax_module
from gradflow.framework import compile_scope, nest
from gradflow.framework.graph import Operation, Tensor, get_default_graph
from gradflow.ops.array import identity
from gradflow.ops.control import no_op

__all__ = ["jit_scope", "compile"]


@contextlib.contextmanager
def jit_scope(compile_ops: bool = True, separate_compiled_gradients: bool = False) -> Iterator:
    """Compiles the ops created inside (and their gradients) as one XLA cluster."""
    if compile_ops:
        jax_module()  # the clear error now, not at the first run
    with compile_scope.jit_scope(compile_ops, separate_compiled_gradients):
        yield


def compile(computation: Callable, inputs: Optional[Sequence] = None) -> Any:  # noqa: A001
    """Builds ``computation(*inputs)`` with its ops compiled as one cluster.

    As TF1: tensor results come back as a list (a nest keeps its structure but a lone
    tensor or a tuple, which become lists), named ``output_<i>``; ops become a NoOp
    running after them; None becomes a NoOp.
    """
    if inputs is None:
        inputs = []
    if not isinstance(inputs, (list, tuple)):
        raise TypeError("inputs must be a list")
    if not callable(computation):
        raise TypeError(f"computation must be callable, got {type(computation).__name__}")
    jax_module()
    graph = get_default_graph()
    with graph.atomic(), compile_scope.jit_scope():
        result = computation(*inputs)
        if result is None:
            return no_op(name="output_0")
        flat = nest.flatten(result)
        ops = [v for v in flat if isinstance(v, Operation)]
        tensors = [v for v in flat if not isinstance(v, Operation)]
        if ops and not tensors:
            with graph.control_dependencies(ops):
                return no_op(name="output_0")
        if ops:
            raise ValueError("compile: computation must return only tensors or only ops, "
                             f"got both: {result!r}")
        outputs = [identity(t, name=f"output_{i}") for i, t in enumerate(tensors)]
        if isinstance(result, (Tensor, tuple, list)):
            return outputs
        return nest.pack_sequence_as(result, outputs)


