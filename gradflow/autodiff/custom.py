"""User-defined gradients and gradient checkpointing.

- ``custom_gradient(f)``: ``f`` returns ``(y, grad_fn)``; gradients of ``y`` come from
  ``grad_fn`` instead of from differentiating ``f``'s ops.
- ``recompute_grad(f)``: ``f`` runs as one function call, so its intermediate values
  live only inside the call; its gradient re-runs ``f`` instead of keeping them.
"""
from __future__ import annotations

import functools
import inspect
import re
from typing import Callable

from gradflow.framework.constant import convert_to_tensor
from gradflow.framework.function import FuncGraph, Function
from gradflow.framework.graph import Tensor, get_default_graph
from gradflow.framework.registry import RegisterGradient, define_op
from gradflow.ops.functional import as_function_output, call_function
from gradflow.ops.state import Variable

__all__ = ["custom_gradient", "recompute_grad"]


def _infer_custom(inputs, attrs):
    return [(t.dtype, t.shape) for t in inputs[attrs["num_inputs"]:]]


def _custom_kernel(*values, num_inputs, grad_fn, variables):
    outputs = values[num_inputs:]
    return outputs[0] if len(outputs) == 1 else tuple(outputs)


define_op("CustomGradient", infer=_infer_custom, kernel=_custom_kernel)


@RegisterGradient("CustomGradient")
def _custom_gradient_grad(op, *grads):
    """Calls the user's grad_fn; nothing flows into the ops that computed y."""
    count = op.get_attr("num_inputs")
    variables = op.get_attr("variables")
    grad_fn = op.get_attr("grad_fn")
    if variables:
        input_grads, variable_grads = grad_fn(*grads, variables=variables)
    else:
        input_grads, variable_grads = grad_fn(*grads), []
    input_grads = list(input_grads) if isinstance(input_grads, (list, tuple)) else [input_grads]
    variable_grads = list(variable_grads or [])
    expected = count - len(variables)
    if len(input_grads) != expected or len(variable_grads) != len(variables):
        raise ValueError(f"custom_gradient function for op '{op.name}' returned "
                         f"{len(input_grads)} input gradients and {len(variable_grads)} "
                         f"variable gradients; expected {expected} and {len(variables)}")
    return input_grads + variable_grads + [None] * (len(op.inputs) - count)


def custom_gradient(f: Callable) -> Callable:
    """Decorator giving ``f`` a hand-written gradient (TF's ``tf.custom_gradient``).

    ``f(*xs)`` returns ``(y, grad_fn)``; ``grad_fn(*dys)`` returns the gradients for
    ``xs``. If ``grad_fn`` accepts ``variables=``, the variables ``f`` reads are found
    and ``grad_fn(*dys, variables=vs)`` returns ``(dxs, dvs)``.
    """
    @functools.wraps(f)
    def decorated(*args):
        graph = get_default_graph()
        with graph.atomic():
            xs = [convert_to_tensor(a) for a in args]
            first_new_op = graph.version
            y, grad_fn = f(*xs)
            takes_variables = "variables" in inspect.signature(grad_fn).parameters
            variables = _variables_read_since(graph, first_new_op) if takes_variables else []
            flat = list(y) if isinstance(y, (list, tuple)) else [y]
            flat = [convert_to_tensor(t) for t in flat]
            refs = [v.ref() for v in variables]
            op = graph.create_op("CustomGradient", xs + refs + flat,
                                 {"num_inputs": len(xs) + len(refs), "grad_fn": grad_fn,
                                  "variables": variables}, name="CustomGradient")
        outputs = op.outputs
        if isinstance(y, (list, tuple)):
            return type(y)(outputs)
        return outputs[0]

    return decorated


def _variables_read_since(graph, first_op_id: int) -> list:
    """The Variables whose values the ops created since ``first_op_id`` read."""
    by_ref = {}
    for v in graph.get_collection("variables"):
        if isinstance(v, Variable):
            by_ref[v.ref()] = v
    found = []
    for op in graph.operations_since(first_op_id):
        if op.type != "ReadVariableOp":
            continue
        variable = by_ref.get(op.inputs[0])
        if variable is not None and variable not in found:
            found.append(variable)
    for v in by_ref.values():  # snapshots made before f ran but consumed inside it
        if v not in found and any(c.id >= first_op_id for c in v.value().consumers()):
            found.append(v)
    return found


def recompute_grad(f: Callable) -> Callable:
    """Gradient checkpointing: ``f``'s activations are recomputed in the backward pass.

    ``f`` is traced into a graph function and called as one op; the call's gradient is
    the function's symbolic gradient, which re-runs ``f`` from its inputs.
    """
    traced: dict = {}

    @functools.wraps(f)
    def decorated(*args):
        xs = [convert_to_tensor(a) for a in args]
        graph = get_default_graph()
        key = (graph, tuple((x.dtype, x.shape.as_tuple()) for x in xs))
        function = traced.get(key)
        if function is None:
            function = traced[key] = _trace(f, xs, graph)
        captured = [function.graph.capture_sources[p] for p in function.inputs[len(xs):]]
        outputs = call_function(function, xs + captured, name="recompute_grad")
        return outputs[0] if len(outputs) == 1 else tuple(outputs)

    return decorated


def _trace(f: Callable, xs: list[Tensor], graph) -> Function:
    # '<lambda>', 'f.<locals>.g', ...: only name characters, as the names of the call's
    # ops (and its gradient's, "<name>_grad") derive from it
    label = re.sub(r"[^A-Za-z0-9_.]", "_", getattr(f, "__name__", "f"))
    body = FuncGraph(f"recompute_{label}", graph)
    with body.as_default():
        args = [body.add_input(x.dtype, x.shape, name=f"arg{i}") for i, x in enumerate(xs)]
        result = f(*args)
        outputs = [as_function_output(body, convert_to_tensor(t)) for t in
                   (result if isinstance(result, (list, tuple)) else [result])]
    captured = [body.captures[s] for s in body.captured_sources()]
    return Function(body, args + captured, outputs, name=body.name)
