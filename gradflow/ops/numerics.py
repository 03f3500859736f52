"""Numerical checks: ``check_numerics`` and ``add_check_numerics_ops`` (TF1 names).

``check_numerics(t, message)`` passes ``t`` through and fails the run with
``InvalidArgumentError("<message> : Tensor had NaN values")`` (or ``Inf``, or ``Inf
and NaN``) when ``t`` holds a non-finite value. Its gradient checks the incoming
gradient the same way. ``add_check_numerics_ops()`` checks every floating tensor of
the default graph, chained in creation order so that the first failing check names the
earliest op that produced a NaN or an infinity.
"""
from __future__ import annotations

from typing import Optional

import numpy as np

from gradflow.framework import errors
from gradflow.framework.constant import convert_to_tensor
from gradflow.framework.graph import Operation, Tensor, get_default_graph
from gradflow.framework.indexed_slices import IndexedSlices
from gradflow.framework.registry import RegisterGradient, define_op
from gradflow.ops import control
from gradflow.ops.common import FLOATING, apply_op, check_dtype_in, constructor

__all__ = ["check_numerics", "add_check_numerics_ops"]


def _infer_check_numerics(inputs, attrs):
    (x,) = inputs
    check_dtype_in(x, FLOATING, "CheckNumerics", "tensor")
    if not isinstance(attrs.get("message"), str):
        raise TypeError(f"CheckNumerics of {x.name}: message must be a string, got "
                        f"{type(attrs.get('message')).__name__}")
    return [(x.dtype, x.shape)]


def _check_numerics_kernel(x, *, message):
    has_nan = bool(np.isnan(x).any())
    has_inf = bool(np.isinf(x).any())
    if has_nan or has_inf:
        found = "Inf and NaN" if has_nan and has_inf else "NaN" if has_nan else "Inf"
        raise errors.InvalidArgumentError(None, None, f"{message} : Tensor had {found} values")
    return x


define_op("CheckNumerics", infer=_infer_check_numerics, kernel=_check_numerics_kernel)


@RegisterGradient("CheckNumerics")
def _check_numerics_grad(op, grad):
    message = ("Not a number (NaN) or infinity (Inf) values detected in gradient. "
               + op.get_attr("message"))
    if isinstance(grad, IndexedSlices):
        return IndexedSlices(check_numerics(grad.values, message), grad.indices,
                             grad.dense_shape)
    return check_numerics(grad, message)


@constructor("CheckNumerics", "tensor", "message", single_op=False)
def check_numerics(tensor, message: str, name: Optional[str] = None) -> Tensor:
    """``tensor`` unchanged; running it fails if it holds a NaN or an infinity."""
    x = convert_to_tensor(tensor, name="tensor")
    return apply_op("CheckNumerics", [x], name=name or "CheckNumerics", message=message)


def add_check_numerics_ops() -> Operation:
    """One ``check_numerics`` per floating tensor of the default graph; returns their group.

    The checks run in the order their tensors were created, and each message is the
    checked tensor's name, so a failure names the first op that produced a NaN or an
    infinity. Checks are built for the ops that exist now (running the group also
    needs every checked placeholder fed, as in TF1). Ops inside ``cond``/``while_loop``
    bodies are checked through the outputs of their ``If``/``While`` op.
    """
    graph = get_default_graph()
    with graph.atomic():
        checks: list[Tensor] = []
        for op in graph.get_operations():
            for output in op.outputs:
                if output.dtype in FLOATING:
                    with graph.control_dependencies(checks[-1:]):
                        checks.append(check_numerics(output, message=output.name))
        return control.group(*checks[-1:])
