"""Symbolic reverse-mode differentiation: ``gradients(ys, xs)``.

The backward pass, step by step:

1. collect the ops between xs and ys (on a differentiable path from an x to a y);
2. count, for each of them, the contributions its outputs will receive;
3. seed the ys with their ``grad_ys`` and queue the ops whose count is zero;
4. pop an op, sum the contributions to each output, call its gradient rule, hand the
   results to its inputs, and queue every input op whose count drops to zero.

Work is proportional to the ops between xs and ys, never to the whole graph.
"""
from __future__ import annotations

import collections
import enum
import logging
import threading
from typing import Optional, Sequence

from gradflow.autodiff.aggregation import aggregate, validate_aggregation_method
from gradflow.framework import dtypes
from gradflow.framework.compile_scope import gradient_compile_attrs
from gradflow.framework.constant import constant, convert_to_tensor
from gradflow.framework.function import Function, carries_gradient, set_symbolic_gradient_builder
from gradflow.framework.graph import Graph, Operation, Tensor, gc_paused, get_default_graph
from gradflow.framework.indexed_slices import IndexedSlices
from gradflow.framework.registry import get_gradient_function, gradient_targets
from gradflow.framework.traversal import reachable
from gradflow.ops import array, control
from gradflow.ops.common import graph_for
from gradflow.ops.functional import zeros_like_any

__all__ = ["gradients", "gradients_v2", "UnconnectedGradients"]

logger = logging.getLogger("gradflow")


class UnconnectedGradients(enum.Enum):
    """What ``gradients`` returns for an x that no y depends on: None or zeros."""

    NONE = "none"
    ZERO = "zero"


def gradients(ys, xs, grad_ys=None, name: str = "gradients",
              colocate_gradients_with_ops: bool = False, gate_gradients: bool = False,
              aggregation_method=None, stop_gradients=None,
              unconnected_gradients=UnconnectedGradients.NONE) -> list:
    """Constructs symbolic derivatives of ``sum(ys)`` with respect to each x in ``xs``.

    Returns a list of ``len(xs)`` entries: the Tensor (or IndexedSlices) holding
    ``sum over y of d(y . grad_y)/dx``, or None where x does not affect any y (zeros
    with ``unconnected_gradients='zero'``).

    Args:
      ys: a Tensor or list of tensors to differentiate.
      xs: a Tensor, Variable or list of them to differentiate with respect to.
      grad_ys: optional gradients received by the ys (default: ones shaped like each y).
      name: name scope for all the ops added (made unique: ``gradients_1``...).
      colocate_gradients_with_ops: put each gradient op with its forward op.
      gate_gradients: group the gradients an op returns so none is used before all exist.
      aggregation_method: an ``AggregationMethod`` for summing contributions.
      stop_gradients: tensors to treat as constants (partial instead of total derivatives).
      unconnected_gradients: ``UnconnectedGradients`` or 'none'/'zero'.

    Raises:
      LookupError: an op between xs and ys has no registered gradient.
      ValueError, TypeError: invalid arguments (the graph is left unchanged).
    """
    unconnected = _unconnected_mode(unconnected_gradients)
    method = validate_aggregation_method(aggregation_method)
    with get_default_graph().atomic():  # where constants made from non-tensor ys/xs go
        ys = _as_tensor_list(ys, "ys")
        xs = _as_tensor_list(xs, "xs", as_ref=True)
        graph = graph_for(ys + xs)
        with graph.mutation_lock(), graph.atomic(), graph.as_default(), gc_paused():
            grad_ys = _grad_ys_list(grad_ys, ys)
            stop = _as_tensor_list(stop_gradients, "stop_gradients") \
                if stop_gradients is not None else []
            check_one_graph(graph, {"ys": ys, "xs": xs, "grad_ys": grad_ys,
                                    "stop_gradients": stop})
            with graph.name_scope(name or "gradients") as scope:
                seeds = _seed_gradients(ys, grad_ys, colocate_gradients_with_ops)
                backward = _BackwardPass(graph, ys, xs, stop, method,
                                         colocate_gradients_with_ops, gate_gradients, scope)
                x_grads = backward.run(seeds)
                _check_not_through_loop_inputs(graph, ys, xs, x_grads)
                return [_unconnected_result(x, g, unconnected) for x, g in zip(xs, x_grads)]


def gradients_v2(ys, xs, grad_ys=None, name: str = "gradients", gate_gradients: bool = False,
                 aggregation_method=None, stop_gradients=None,
                 unconnected_gradients=UnconnectedGradients.NONE) -> list:
    """``gradients`` with gradient ops colocated with their forward ops (TF2 signature)."""
    return gradients(ys, xs, grad_ys, name, True, gate_gradients, aggregation_method,
                     stop_gradients, unconnected_gradients)


# ------------------------------------------------------------------- arguments
def _as_tensor_list(values, what: str, as_ref: bool = False) -> list[Tensor]:
    items = list(values) if isinstance(values, (list, tuple)) else [values]
    tensors = []
    for i, value in enumerate(items):
        if value is None:
            raise ValueError(f"{what}[{i}] is None; {what} must be tensors")
        try:
            tensors.append(convert_to_tensor(value, as_ref=as_ref))
        except (TypeError, ValueError) as err:
            raise TypeError(f"{what}[{i}] must be a Tensor or Variable, got "
                            f"{type(value).__name__}: {err}") from None
    return tensors


def check_one_graph(graph: Graph, arguments: dict) -> None:
    """Every tensor of ``arguments`` (name -> list) must share the first one's graph, or
    live in ``graph`` or a graph enclosing it (a capture). The error names the offending
    argument and index, the tensor it was compared with, and both graphs."""
    allowed = set()
    enclosing = graph
    while enclosing is not None:
        allowed.add(enclosing)
        enclosing = enclosing.outer_graph
    labelled = [(f"{what}[{i}]", t) for what, values in arguments.items()
                for i, t in enumerate(values) if isinstance(getattr(t, "graph", None), Graph)]
    if all(t.graph in allowed for _, t in labelled):
        return
    ref_label, ref = labelled[0]
    label, t = next(((lb, x) for lb, x in labelled if x.graph is not ref.graph
                     and not (x.graph in allowed and ref.graph in allowed)), (ref_label, ref))
    if t is ref:  # all in one graph, but not one this call may use
        other, where = "this call's graph", f"{label} is in {t.graph!r}, the call in {graph!r}"
    else:
        other, where = f"Tensor {ref.name}", (f"{label} is in {t.graph!r}, {ref_label} in "
                                              f"{ref.graph!r}")
    raise ValueError(f"Tensor {t.name} must be from the same graph as {other} ({where}; the "
                     f"{', '.join(arguments)} of one call share a graph)")


def _check_not_through_loop_inputs(graph: Graph, ys: list[Tensor], xs: list[Tensor],
                                   x_grads: list) -> None:
    """Inside a loop body, an outer x that the ys reach only through the initial values
    of loop variables has no gradient there; TF1 refuses to differentiate with respect
    to it rather than answer None."""
    inits = getattr(graph, "loop_inputs", ())  # set on while-loop bodies
    missing = [x for x, g in zip(xs, x_grads, strict=True) if g is None and x.graph is not graph]
    if not inits or not missing:
        return
    loop_vars = {t.op: init for t, init in zip(graph.inputs[:len(inits)], inits, strict=True)}
    used = reachable([y.op for y in ys if y.graph is graph],
                     lambda op: [t.op for t in op.inputs if t.graph is graph])
    reached = [loop_vars[op] for op in used if op in loop_vars]
    upstream = reachable([t.op for t in reached], _producers) if reached else set()
    for x in missing:
        if x.op in upstream:
            raise ValueError(f"Cannot compute gradient inside while loop with respect to op "
                             f"'{x.op.name}'. We do not support taking the gradient wrt or "
                             "through the initial value of a loop variable. Gradients can be "
                             "computed through loop invariants or wrt the input parameters "
                             "to the loop body.")


def _producers(op: Operation) -> list:
    """The ops feeding ``op``, through function captures to the enclosing graphs."""
    sources = getattr(op.graph, "capture_sources", {})
    ops = [t.op for t in op.inputs]
    ops.extend(sources[t].op for t in op.outputs if t in sources)
    return ops


def _unconnected_mode(value) -> UnconnectedGradients:
    try:
        return UnconnectedGradients(value.value if isinstance(value, UnconnectedGradients)
                                    else value)
    except ValueError:
        raise ValueError(f"Unknown value for unconnected_gradients: {value!r}") from None


def _grad_ys_list(grad_ys, ys: list[Tensor]) -> list:
    if grad_ys is None:
        return [None] * len(ys)
    grad_ys = list(grad_ys) if isinstance(grad_ys, (list, tuple)) else [grad_ys]
    if len(grad_ys) != len(ys):
        raise ValueError(f"Passed {len(grad_ys)} grad_ys for {len(ys)} ys")
    return [g if g is None or isinstance(g, IndexedSlices) else convert_to_tensor(g)
            for g in grad_ys]


def _seed_gradients(ys: list[Tensor], grad_ys: list, colocate: bool) -> list:
    """The gradient each y starts with: the given grad_y (checked), else ones like y."""
    seeds = []
    for i, (y, grad_y) in enumerate(zip(ys, grad_ys)):
        with _maybe_colocate(y.op, colocate):
            if grad_y is None:
                _check_default_seed(y)
                # TF1's seed: ``Shape`` of y, then the Fill ``grad_ys_i`` of its Const one
                shape = array.shape_of_input(y)
                with get_default_graph().name_scope(f"grad_ys_{i}") as scope:
                    one = constant(1, dtype=y.dtype, name="Const")
                    seeds.append(array.fill(shape, one, name=scope))
            else:
                _check_given_seed(y, grad_y)
                if isinstance(grad_y, IndexedSlices):
                    seeds.append(IndexedSlices(array.identity(grad_y.values,
                                                              name=f"grad_ys_{i}_values"),
                                               grad_y.indices, grad_y.dense_shape))
                else:
                    seeds.append(array.identity(grad_y, name=f"grad_ys_{i}"))
    return seeds


def _check_default_seed(y: Tensor) -> None:
    if y.dtype.is_complex:
        raise TypeError(f"Gradients of complex tensors must set grad_ys (y.dtype = "
                        f"{y.dtype.name})")
    if not y.dtype.is_numeric:
        raise TypeError(f"Tensor {y.name} with type {y.dtype.name} must be numeric to obtain "
                        "a default gradient")


def _check_given_seed(y: Tensor, grad_y) -> None:
    g = grad_y.dtype
    if y.dtype is dtypes.variant:
        if g is not dtypes.variant:
            raise TypeError(f"Gradient for variant tensor {y.name} must be a variant, got "
                            f"{g.name}")
    elif y.dtype.is_floating or y.dtype.is_integer:
        if not (g.is_floating or g.is_integer):
            raise TypeError(f"Gradient type {g.name} generated for real or integer-valued "
                            f"tensor {y.name} with type {y.dtype.name} must be real or integer")
    elif y.dtype.is_complex:
        if not g.is_complex:
            raise TypeError(f"Gradient type {g.name} generated for complex-valued tensor "
                            f"{y.name} with type {y.dtype.name} must be complex")
    else:
        raise TypeError(f"Tensor {y.name} with type {y.dtype.name} must be numeric to obtain "
                        "a default gradient")


def _maybe_colocate(op: Operation, colocate: bool):
    if colocate:
        return op.graph.colocate_with(op, ignore_existing=True)
    return _NULL_CONTEXT


class _NullContext:
    def __enter__(self):
        return None

    def __exit__(self, *exc):
        return False


_NULL_CONTEXT = _NullContext()


def _unconnected_result(x: Tensor, grad, mode: UnconnectedGradients):
    if grad is None and mode is UnconnectedGradients.ZERO:
        return array.zeros_like(x)
    return grad


def is_backpropagatable(t: Tensor) -> bool:
    """Gradients flow only through floating, complex and handle tensors (G9)."""
    return t._dtype in _BACKPROPAGATABLE


_BACKPROPAGATABLE = frozenset({dtypes.float16, dtypes.bfloat16, dtypes.float32, dtypes.float64,
                               dtypes.complex64, dtypes.complex128,
                               dtypes.resource, dtypes.variant})


# ---------------------------------------------------------------- backward pass
class _BackwardPass:
    """The state of one ``gradients`` call: the subgraph, counts and contributions."""

    def __init__(self, graph: Graph, ys: list[Tensor], xs: list[Tensor], stop: list[Tensor],
                 method: int, colocate: bool, gate: bool, scope: str):
        self.graph = graph
        self.scope = scope
        self.ys, self.xs = ys, xs
        self.method = method
        self.colocate = colocate
        self.gate = gate
        self.x_set = set(xs)
        self.edges = Edges(graph, self.x_set)
        self.between = ops_between([y.op for y in ys], [x.op for x in xs], self.edges)
        self.pending = pending_counts(self.between, self.edges)
        self.stop_ops = self._stop_ops(stop)
        self.contributions: dict[Tensor, list] = {}
        self.x_grads: dict[Tensor, object] = {}

    def _stop_ops(self, stop: list[Tensor]) -> set:
        """Ops whose rule is not called: the xs with no other x upstream, and stop tensors."""
        between = self.between
        stops = {x.op for x in self.xs
                 if not any(t.op in between for t in self.edges.inputs(x.op))}
        stops.update(t.op for t in stop)
        return stops

    def run(self, seeds: list) -> list:
        for y, seed in zip(self.ys, seeds):
            self.contributions.setdefault(y, []).append(seed)
        queue = collections.deque()
        queued = set()
        for y in self.ys:
            op = y.op
            if op in self.between and self.pending[op] == 0 and op not in queued:
                queue.append(op)
                queued.add(op)
        with gradient_targets(self._tensors_needing_gradients()):
            while queue:
                op = queue.popleft()
                in_grads = self._backprop(op)
                self._hand_to_inputs(op, in_grads, queue)
        return [self.x_grads[x] if x in self.x_grads else self._leftover(x) for x in self.xs]

    def _tensors_needing_gradients(self) -> set:
        between = self.between
        needed = set(self.xs)
        for op in between:  # rules ask about their raw inputs (maybe capture placeholders)
            for raw, resolved in zip(op._inputs, self.edges.inputs(op)):
                if resolved._op in between:
                    needed.add(raw)
                    needed.add(resolved)
        return needed

    def _leftover(self, x: Tensor):
        """The gradient of an x whose op was never processed (not between xs and ys)."""
        return aggregate(self.contributions.pop(x, []), x.op.name, self.method)

    def _backprop(self, op: Operation) -> list:
        """Sums the gradients of ``op``'s outputs and calls its rule; one entry per input."""
        with _maybe_colocate(op, self.colocate):
            out_grads = [self._summed(t, op) for t in op._outputs]
        has_gradient = False
        for t, g in zip(op._outputs, out_grads):
            if t in self.x_set:
                self.x_grads[t] = g
            if g is not None and t._dtype in _BACKPROPAGATABLE:
                has_gradient = True
        rule = get_gradient_function(op) if has_gradient and op not in self.stop_ops else None
        if rule is None:
            return [None] * len(op._inputs)
        return self._call_rule(op, rule, out_grads)

    def _summed(self, t: Tensor, op: Operation):
        contributions = self.contributions.pop(t, None)
        if contributions is None:
            return None
        if len(contributions) == 1:
            return contributions[0]
        return aggregate(contributions, op.name, self.method)

    def _call_rule(self, op: Operation, rule, out_grads: list) -> list:
        graph = self.graph
        with _maybe_colocate(op, self.colocate):
            if any(g is None for g in out_grads):  # zeros for outputs with no gradient
                out_grads = [g if g is not None or not t._dtype.is_trainable
                             else array.zeros_like(t) for t, g in zip(op._outputs, out_grads)]
            with graph.gradient_scope(op, gradient_compile_attrs(op, self.scope)):
                in_grads = rule(op, *out_grads)
                in_grads = _as_grad_list(in_grads, op)
                if self.gate and sum(g is not None for g in in_grads) > 1:
                    with graph.device(None), graph.colocate_with(None, ignore_existing=True):
                        in_grads = control.tuple(in_grads)
        if logger.isEnabledFor(logging.DEBUG):
            _log_gradients(op, out_grads, in_grads)
        return in_grads

    def _hand_to_inputs(self, op: Operation, in_grads: list, queue) -> None:
        between, pending, contributions = self.between, self.pending, self.contributions
        for index, (t, grad) in enumerate(zip(self.edges.inputs(op), in_grads)):
            source = t._op
            upstream = source in between
            if grad is not None and (upstream or t in self.x_set):
                if isinstance(grad, Tensor):
                    _check_gradient_shape(op, index, t, grad)
                contributions.setdefault(t, []).append(grad)
            if upstream:
                pending[source] -= 1
                if pending[source] == 0:
                    queue.append(source)


class Edges:
    """How the backward pass sees the graph: each op's inputs, each tensor's consumers.

    Inside a function graph, a capture placeholder stands for a tensor of an enclosing
    graph. Unless it is itself one of the xs, the walk goes through it to that tensor,
    so gradients taken inside a function reach the outer tensors it captured (at any
    depth of nesting); the gradient ops are built inside the function graph. Captures
    are followed lazily, for the tensors the walk meets, and each chain once: the
    cost does not grow with the number of enclosing graphs and their captures.
    """

    def __init__(self, graph: Graph, x_set: set):
        self._graph = graph
        self._x_set = x_set
        self._nested = graph.outer_graph is not None
        self._resolved: dict[Tensor, Tensor] = {}

    def inputs(self, op: Operation) -> tuple:
        if not self._nested:
            return op._inputs
        return tuple(self._resolve(t) for t in op._inputs)

    def _resolve(self, t: Tensor) -> Tensor:
        """The outermost tensor ``t`` stands for (stopping at an x)."""
        resolved = self._resolved.get(t)
        if resolved is not None:
            return resolved
        walked = []
        while t not in self._x_set:
            source = getattr(t._op._graph, "capture_sources", _NO_CAPTURES).get(t)
            if source is None:
                break
            walked.append(t)
            t = source
        for tensor in walked:
            self._resolved[tensor] = t
        return t

    def consumers(self, t: Tensor) -> list:
        """``t``'s consumers, and those of the placeholders of the graphs from this one
        outwards that stand for it."""
        graph = t._op._graph
        if not self._nested or graph is self._graph:
            return t._consumers
        extra = []
        inner = self._graph
        while inner is not None and inner is not graph:
            placeholder = getattr(inner, "captures", _NO_CAPTURES).get(t)
            if placeholder is not None and self._resolve(placeholder) is t:
                extra.extend(placeholder._consumers)
            inner = inner.outer_graph
        return t._consumers + extra if extra else t._consumers


_NO_CAPTURES: dict = {}


def ops_between(y_ops: Sequence[Operation], x_ops: Sequence[Operation],
                edges: Optional[Edges] = None) -> set:
    """Ops on a differentiable path from some x op to some y op (both ends included).

    Walks back from the ys through floating-point edges, then forward from the xs
    within what that walk found: cost proportional to the ys' ancestry, not the graph.
    """
    edges = edges or Edges(y_ops[0].graph if y_ops else Graph(), set())
    inputs, consumers = edges.inputs, edges.consumers
    upstream: set = set()
    stack = list(y_ops)
    while stack:  # the walks are written out: this is the hot start of every call
        op = stack.pop()
        if op not in upstream:
            upstream.add(op)
            stack.extend(t._op for t in inputs(op) if t._dtype in _BACKPROPAGATABLE)
    between: set = set()
    stack = [op for op in x_ops if op in upstream]
    while stack:
        op = stack.pop()
        if op not in between:
            between.add(op)
            for t in op._outputs:
                if t._dtype in _BACKPROPAGATABLE:
                    stack.extend(c for c in consumers(t) if c in upstream)
    return between


def pending_counts(between: set, edges: Edges) -> dict:
    """For each op in ``between``, how many input edges of ops in ``between`` read it."""
    pending = dict.fromkeys(between, 0)
    for op in between:
        for t in edges.inputs(op):
            if t._op in pending:
                pending[t._op] += 1
    return pending


def _as_grad_list(in_grads, op: Operation) -> list:
    if isinstance(in_grads, (Tensor, IndexedSlices)) or in_grads is None:
        in_grads = [in_grads]
    else:
        in_grads = list(in_grads)
    if len(in_grads) != len(op.inputs):
        raise ValueError(f"Num gradients {len(in_grads)} generated for op {op.name} (type "
                         f"{op.type}) do not match num inputs {len(op.inputs)}")
    return in_grads


def _check_gradient_shape(op: Operation, index: int, t: Tensor, grad: Tensor) -> None:
    if grad._shape is t._shape or grad._shape.as_tuple() == t._shape.as_tuple():
        return
    try:
        grad.set_shape(t.shape)
    except ValueError:
        raise ValueError(
            "Incompatible shapes between op input and calculated input gradient.  Forward "
            f"operation: {op.name}.  Input index: {index}. Original input shape: {t.shape}.  "
            f"Calculated input gradient shape: {grad.shape}") from None


def _log_gradients(op: Operation, out_grads: list, in_grads: list) -> None:
    def names(grads):
        return ", ".join(g.name for g in grads if g is not None)
    logger.debug("Gradient for '%s'", op.name)
    logger.debug("  in  --> %s", names(out_grads))
    logger.debug("  out --> %s", names(in_grads))


def _function_gradient(function: Function) -> Function:
    """A function of (inputs..., output gradients...) -> gradients of trainable inputs.

    Built inside the function's own graph, so the forward ops it needs are simply
    recomputed when the gradient runs. Inputs without a gradient get zeros.

    The gradient rule of a call, cond or loop op inside asks for its functions'
    gradients, which would recurse once per level of nesting. So the gradients of the
    functions nested inside (on a differentiable path, at any depth) are built first,
    innermost first, each finding the ones it needs already built: the Python stack
    stays as deep for 1,000 nested levels as for one.
    """
    if not getattr(_nesting, "active", False):
        _nesting.active = True
        try:
            for inner in _ungraded_functions_within(function):
                inner.symbolic_gradient()
        finally:
            _nesting.active = False
    return _build_function_gradient(function)


_nesting = threading.local()  # set while nested function gradients are built first


def _ungraded_functions_within(function: Function) -> list:
    """Functions used on a differentiable path inside ``function``, at any depth, whose
    symbolic gradient is not built yet: each after every function it contains."""
    order: list = []
    seen = {function}
    stack = [(function, iter(_functions_on_path(function)))]
    while stack:  # depth-first, post-order, with an explicit stack
        current, children = stack[-1]
        child = next(children, None)
        if child is None:
            stack.pop()
            if current is not function:
                order.append(current)
        elif child not in seen:
            seen.add(child)
            stack.append((child, iter(_functions_on_path(child))))
    return order


def _functions_on_path(function: Function) -> list:
    """Functions called by ops between ``function``'s trainable inputs and its outputs
    whose gradient is the symbolic one (not a user-given gradient), not built yet."""
    targets = [function.inputs[i] for i in function.trainable_input_indices()]
    ys = [y for y in function.outputs if carries_gradient(y)]
    if not targets or not ys:
        return []
    edges = Edges(function.graph, set(targets))
    found = []
    for op in ops_between([y.op for y in ys], [x.op for x in targets], edges):
        for value in op._attrs.values():
            if isinstance(value, Function) and value._gradient is None and \
                    value.python_grad_func is None and value.grad_func is None:
                found.append(value)
    return found


def _build_function_gradient(function: Function) -> Function:
    graph = function.graph
    with graph.as_default(), graph.name_scope(None):
        output_grads = [graph.add_input(t.dtype, t.shape, name="output_grad")
                        for t in function.outputs]
        targets = [function.inputs[i] for i in function.trainable_input_indices()]
        differentiable = [(y, dy) for y, dy in zip(function.outputs, output_grads, strict=True)
                          if carries_gradient(y)]
        if differentiable and targets:
            # inputs are independent arguments, even those that are not placeholders
            # (a loop gradient's recorded forward values): partial derivatives
            grads = gradients([y for y, _ in differentiable], targets,
                              grad_ys=[dy for _, dy in differentiable],
                              stop_gradients=targets)
        else:
            grads = [None] * len(targets)
        outputs = [zeros_like_any(x) if g is None else convert_to_tensor(g)
                   for x, g in zip(targets, grads, strict=True)]
    return Function(graph, function.inputs + output_grads, outputs,
                    name=f"{function.name}_grad")


# Function.symbolic_gradient (ground floor) builds through this, as it needs gradients().
set_symbolic_gradient_builder(_function_gradient)
