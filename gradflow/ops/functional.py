"""Control flow as functional ops: function calls, ``cond`` and ``while_loop``.

Each construct traces its Python callables into function graphs (see
``framework/function.py``) and adds one op that runs them:

- ``PartitionedCall`` runs a function; its gradient calls the function's symbolic
  gradient (or a user-given one, for ``Defun``).
- ``If`` runs one of two branch functions; its gradient is an ``If`` of the branches'
  gradient functions.
- ``While`` runs ``body`` while ``cond`` holds. When a gradient is requested it also
  records the loop state at the start of each iteration; the gradient is another
  ``While`` that walks the iterations backwards, applying the body's gradient
  function to each recorded state. Since that loop is built from the same three ops,
  differentiating it again (a Hessian of a loop) needs nothing new.
"""
from __future__ import annotations

import inspect
from typing import Callable, Optional, Sequence

import numpy as np

from gradflow.framework import dtypes, errors, nest
from gradflow.framework.constant import constant, constant_value, convert_to_tensor
from gradflow.framework.function import FuncGraph, Function, carries_gradient
from gradflow.framework.function_def import (ArgDef, AttrValue, FunctionDef, NodeDef,
                                             OpDefSignature)
from gradflow.framework.graph import Operation, Tensor, get_default_graph
from gradflow.framework.indexed_slices import IndexedSlices
from gradflow.framework.registry import NotDifferentiable, RegisterGradient, define_op
from gradflow.framework.tensor_shape import TensorShape, as_shape
from gradflow.ops import array, math
from gradflow.ops.common import apply_op
from gradflow.ops.tensor_array import TensorArray
from gradflow.ops.variants import add_gradients, zeros_like_any

__all__ = ["Defun", "cond", "while_loop", "case"]

# --------------------------------------------------------------------- nests
def flatten(structure) -> list:
    """Leaves of a nest of lists, tuples, namedtuples and dicts (sorted keys), in order."""
    leaves, stack = [], [structure]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            stack.extend(item[k] for k in reversed(sorted(item)))
        elif isinstance(item, (list, tuple)):
            stack.extend(reversed(item))
        else:
            leaves.append(item)
    return leaves


def _pack_as(structure, leaves: Sequence):
    """Rebuilds ``structure``'s shape with ``leaves`` (the inverse of ``_flatten``)."""
    iterator = iter(leaves)

    def build(item):
        if isinstance(item, dict):
            built = {k: build(item[k]) for k in sorted(item)}
            return type(item)((k, built[k]) for k in item)
        if isinstance(item, tuple) and hasattr(item, "_fields"):
            return type(item)(*(build(x) for x in item))
        if isinstance(item, (list, tuple)):
            return type(item)(build(x) for x in item)
        return next(iterator)

    return build(structure)  # recursion over a user's small Python structure, not the graph


def _same_structure(a, b) -> bool:
    stack = [(a, b)]
    while stack:
        x, y = stack.pop()
        if isinstance(x, dict) or isinstance(y, dict):
            if not (isinstance(x, dict) and isinstance(y, dict)) or sorted(x) != sorted(y):
                return False
            stack.extend((x[k], y[k]) for k in x)
        elif isinstance(x, (list, tuple)) or isinstance(y, (list, tuple)):
            if not (isinstance(x, (list, tuple)) and isinstance(y, (list, tuple))) \
                    or len(x) != len(y):
                return False
            stack.extend(zip(x, y))
    return True


# ------------------------------------------------------ loop-carried values
def _to_flow(value) -> Tensor:
    """The tensor that carries a loop value (a TensorArray is carried by its flow)."""
    flow = getattr(value, "flow", None)
    if isinstance(flow, Tensor) and hasattr(value, "with_flow"):
        return flow
    return convert_to_tensor(value)


def _from_flow(template, tensor: Tensor):
    if hasattr(template, "with_flow") and isinstance(getattr(template, "flow", None), Tensor):
        return template.with_flow(tensor)
    return tensor


def as_function_output(graph: FuncGraph, t: Tensor) -> Tensor:
    """A function output must be made inside the function: pass outer tensors through."""
    if t.graph is graph and t.op.type != "Placeholder":
        return t
    with graph.as_default():
        return array.identity(t)


# ------------------------------------------------------------ function calls
def _infer_call(inputs, attrs):
    return [(t.dtype, t.shape) for t in attrs["f"].outputs]


def _call_kernel(ctx, *args, f):
    results = ctx.call(f, args)
    return results[0] if len(results) == 1 else tuple(results)


define_op("PartitionedCall", infer=_infer_call, kernel=_call_kernel, stateful=True,
          needs_context=True)


def call_function(function: Function, inputs: Sequence[Tensor], name: Optional[str] = None,
                  attrs: Optional[dict] = None):
    """Adds a call of ``function``; returns its outputs as a list."""
    op = get_default_graph().create_op("PartitionedCall", list(inputs),
                                       {"f": function, **(attrs or {})},
                                       name=name or function.name.split("/")[-1])
    return op if not op.outputs else list(op.outputs)


def _filled(op: Operation, grads: Sequence) -> list:
    """Output gradients with None replaced by zeros (functions need every input)."""
    return [zeros_like_any(t) if g is None else convert_to_tensor(g)
            for t, g in zip(op.outputs, grads)]


def _scatter_to_inputs(count: int, indices: Sequence[int], values: Sequence) -> list:
    result: list = [None] * count
    for i, value in zip(indices, values):
        result[i] = value
    return result


@RegisterGradient("PartitionedCall")
def _call_grad(op, *grads):
    function: Function = op.get_attr("f")
    if function.python_grad_func is not None:
        return function.python_grad_func(op, *grads)
    if function.grad_func is not None:  # a Defun of (args..., output grads...)
        user = function.grad_func(*op.inputs[:function.arg_count], *_filled(op, grads))
        user = list(user) if isinstance(user, (list, tuple)) else [user]
        return user + [None] * (len(op.inputs) - len(user))  # captures get none
    gradient = function.symbolic_gradient()
    results = call_function(gradient, list(op.inputs) + _filled(op, grads))
    return _scatter_to_inputs(len(op.inputs), function.trainable_input_indices(), results)


# Defun keyword arguments that are not function attributes.
_DEFUN_OPTIONS = ("func_name", "grad_func", "python_grad_func", "out_names", "shape_func",
                  "capture_by_value", "noinline", "compiled", "separate_compiled_gradients")


class Defun:
    """TF1's ``function.Defun``: makes a Python function a graph function.

    ``@Defun(gf.float32, gf.float32)`` traces the decorated function on placeholders of
    those dtypes; each call adds one op. Its gradient is ``python_grad_func(op, *grads)``
    or the Defun ``grad_func(*inputs, *grads)`` when given, else the symbolic gradient
    of the body. Without input types the function is traced per call's dtypes.
    ``capture_by_value=True`` copies outer tensors of known value into the body instead
    of passing them in; ``noinline`` and other keyword attrs are recorded in
    ``definition.attr``; ``compiled`` marks calls for XLA as ``jit_scope`` does.
    """

    def __init__(self, *input_types, **kwargs):
        options = {key: kwargs.pop(key) for key in _DEFUN_OPTIONS if key in kwargs}
        self._attrs = dict(kwargs)  # the rest: attrs of the function (TF1 rule)
        for key, value in self._attrs.items():
            if not key.startswith("experimental_"):
                raise ValueError(f"Unknown keyword arguments: dict_keys({[key]!r}).")
            AttrValue.of(value)
        func_name = options.get("func_name")
        if options.get("grad_func") is not None and \
                options.get("python_grad_func") is not None:
            raise ValueError(f"Gradient defined twice for function {func_name or '<lambda>'}")
        self._input_types = [dtypes.as_dtype(t) for t in input_types]
        self._options = options
        if options.get("noinline") is not None:
            self._attrs["_noinline"] = bool(options["noinline"])

    def __call__(self, func: Callable) -> "DefinedFunction":
        if not callable(func):
            raise TypeError(f"Defun must decorate a callable, got {func!r}")
        options = self._options
        name = options.get("func_name") or func.__name__
        compile_attrs = {"_XlaCompile": True, "_XlaScope": f"function_{name}",
                         "_XlaSeparateCompiledGradients":
                             bool(options.get("separate_compiled_gradients", False))} \
            if options.get("compiled") else {}
        return DefinedFunction(func, self._input_types, name, options.get("grad_func"),
                               options.get("python_grad_func"), options.get("shape_func"),
                               compile_attrs, out_names=options.get("out_names"),
                               capture_by_value=bool(options.get("capture_by_value")),
                               attrs=self._attrs)


class _ByValueFuncGraph(FuncGraph):
    """A function graph that copies outer tensors of known value in as constants."""

    def capture(self, tensor: Tensor) -> Tensor:
        value = constant_value(tensor) if tensor.graph is not self else None
        if value is None:
            if tensor.graph is not self and tensor.op.type == "Placeholder":
                raise ValueError(f"Cannot capture a placeholder (name:{tensor.op.name}, "
                                 "type:Placeholder) by value.")
            return super().capture(tensor)
        copied = self.captures.get(tensor)
        if copied is None:
            with self.as_default(), self.control_dependencies(None), \
                    self.name_scope(None):
                copied = self.captures[tensor] = constant(value, dtype=tensor.dtype,
                                                          name=tensor.op.name.split("/")[-1])
        return copied


class DefinedFunction:
    """A Python function traced into a graph function, once per calling graph."""

    def __init__(self, func: Callable, input_types: list, name: str, grad_func,
                 python_grad_func, shape_func, compile_attrs: dict, out_names=None,
                 capture_by_value: bool = False, attrs: Optional[dict] = None):
        self._func = func
        self._compile_attrs = compile_attrs
        self._input_types = input_types
        self.name = name
        self._grad_func = grad_func
        self._python_grad_func = python_grad_func
        self._shape_func = shape_func
        self._out_names = None if out_names is None else list(out_names)
        self._capture_by_value = capture_by_value
        self._attrs = dict(attrs or {})
        self._traced: dict = {}

    @property
    def python_grad_func(self):
        return self._python_grad_func

    @property
    def grad_func(self):
        return self._grad_func

    @property
    def declared_input_types(self) -> tuple:
        """The input dtypes given to ``Defun`` (empty for a generic function)."""
        return tuple(self._input_types)

    def _default_trace(self) -> Function:
        if not self._input_types:
            raise ValueError(f"Function {self.name} has no declared input types: use "
                             "instantiate(input_types) to make a concrete one")
        return self._trace(get_default_graph(), tuple(self._input_types))

    @property
    def captured_inputs(self) -> list:
        """Outer tensors the body uses, passed to each call as extra inputs."""
        return list(self._default_trace().captured_sources)

    @property
    def stateful_ops(self) -> list:
        """``(name, type)`` of each stateful op of the body (variables, random ops, ...)."""
        return [(op.name, op.type) for op in self._default_trace().graph.get_operations()
                if op.op_def.stateful]

    @property
    def definition(self):
        """The function as a FunctionDef: signature, body nodes, attrs, output bindings."""
        function = self._default_trace()
        inputs = function.inputs[:function.arg_count]
        signature = OpDefSignature(
            self.name, [ArgDef(name, t.dtype) for name, t in
                        zip(_argument_names(self._func, len(inputs)), inputs, strict=True)],
            [ArgDef(name, t.dtype) for name, t in
             zip(self._output_names(function), function.outputs, strict=True)],
            is_stateful=bool(self.stateful_ops))
        nodes = [NodeDef(op.name, op.type, [t.name for t in op.inputs] +
                         [f"^{c.name}" for c in op.control_inputs], op.device)
                 for op in function.graph.get_operations() if op.type != "Placeholder"]
        return FunctionDef(signature, nodes, {k: AttrValue.of(v) for k, v in self._attrs.items()},
                           dict(zip(self._output_names(function),
                                    (t.name for t in function.outputs), strict=True)))

    def _output_names(self, function: Function) -> list:
        if self._out_names is not None:
            return list(self._out_names)
        names: list = []
        for t in function.outputs:
            base = t.op.name.replace("/", "_").lower()
            names.append(base if base not in names else f"{base}_{len(names)}")
        return names

    def instantiate(self, input_types) -> "DefinedFunction":
        """This function with concrete input dtypes (for a generic ``Defun()``)."""
        types = [dtypes.as_dtype(t) for t in input_types]
        if self._input_types and types != self._input_types:
            raise ValueError(f"Function {self.name} is declared with input types "
                             f"{[t.name for t in self._input_types]}, not "
                             f"{[t.name for t in types]}")
        name = self.name if self._input_types else \
            f"{self.name}_{'_'.join(t.name for t in types)}"
        return DefinedFunction(self._func, types, name, self._grad_func,
                               self._python_grad_func, self._shape_func,
                               self._compile_attrs, self._out_names,
                               self._capture_by_value, self._attrs)

    def _trace(self, graph, dtypes_: tuple) -> Function:
        key = (graph, dtypes_)
        function = self._traced.get(key)
        if function is not None:
            return function
        body = (_ByValueFuncGraph if self._capture_by_value else FuncGraph)(self.name, graph)
        with body.as_default():
            args = [body.add_input(d, None, name=f"arg{i}") for i, d in enumerate(dtypes_)]
            result = self._func(*args)
            outputs = [] if result is None else (
                list(result) if isinstance(result, (list, tuple)) else [result])
            outputs = [as_function_output(body, convert_to_tensor(t)) for t in outputs]
        if body.outer_control_inputs:  # TF1 Defun bodies cannot capture control inputs
            raise ValueError(f"Operation '{body.outer_control_inputs[0].name}' (a control input "
                             f"named inside Defun {self.name}) is not an element of this "
                             "graph.")
        if self._out_names is not None and len(self._out_names) != len(outputs):
            raise errors.InvalidArgumentError(
                None, None, f"output names must be either empty or equal in size to outputs. "
                f"output names size = {len(self._out_names)} outputs size = {len(outputs)}")
        captured = [body.captures[s] for s in body.captured_sources()]
        function = Function(body, args + captured, outputs, name=self.name)
        function.arg_count = len(args)
        function.python_grad_func = self._python_grad_func
        function.grad_func = self._grad_func
        function.captured_sources = body.captured_sources()
        self._traced[key] = function
        return function

    def __call__(self, *args, name: Optional[str] = None):
        types = self._input_types or [convert_to_tensor(a).dtype for a in args]
        if len(args) != len(types):
            raise ValueError(f"Function {self.name} expects {len(types)} arguments, got "
                             f"{len(args)}")
        tensors = [convert_to_tensor(a, dtype=t) for a, t in zip(args, types)]
        graph = get_default_graph()
        function = self._trace(graph, tuple(types))
        outputs = call_function(function, tensors + function.captured_sources, name=name,
                                attrs=self._compile_attrs)
        if isinstance(outputs, Operation):
            return outputs
        if self._shape_func is not None:
            for t, shape in zip(outputs, self._shape_func(outputs[0].op)):
                t.set_shape(shape)
        return outputs[0] if len(outputs) == 1 else tuple(outputs)


def _argument_names(func: Callable, count: int) -> list:
    """The Python parameter names of ``func`` (``arg<i>`` past named ones), as TF1."""
    try:
        params = [p.name for p in inspect.signature(func).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        params = []
    return [params[i] if i < len(params) else f"arg{i}" for i in range(count)]


# ---------------------------------------------------------------------- cond
def _infer_if(inputs, attrs):
    then_outputs = attrs["then_branch"].outputs
    else_outputs = attrs["else_branch"].outputs
    return [(a.dtype, a.shape.most_specific_compatible_shape(b.shape))
            for a, b in zip(then_outputs, else_outputs)]


def _if_kernel(ctx, predicate, *args, then_branch, else_branch):
    branch = then_branch if bool(predicate) else else_branch
    results = ctx.call(branch, args)
    return results[0] if len(results) == 1 else tuple(results)


define_op("If", infer=_infer_if, kernel=_if_kernel, stateful=True, needs_context=True)


@RegisterGradient("If")
def _if_grad(op, *grads):
    then_branch, else_branch = op.get_attr("then_branch"), op.get_attr("else_branch")
    then_grad, else_grad = then_branch.symbolic_gradient(), else_branch.symbolic_gradient()
    inputs = list(op.inputs[1:]) + _filled(op, grads)
    if not then_grad.outputs:
        return [None] * len(op.inputs)
    results = get_default_graph().create_op(
        "If", [op.inputs[0]] + inputs, {"then_branch": then_grad, "else_branch": else_grad},
        name="If").outputs
    return [None] + _scatter_to_inputs(len(op.inputs) - 1, then_branch.trainable_input_indices(),
                                       results)


def _trace_branch(fn: Callable, what: str, taken: bool,
                  strict: bool) -> tuple[FuncGraph, object]:
    """Traces one branch; ops among its results become bool tensors (``taken``)."""
    graph = FuncGraph("cond_true" if taken else "cond_false", get_default_graph())
    with graph.as_default():
        result = fn()
        if result is None:
            raise ValueError(f"'{what}' must have a return value.")
        if not strict:
            result = _unpack_singleton(result)
        result = nest.map_structure(lambda v: _op_as_flag(v, taken), result)
    return graph, result


def _branch_outputs(graph: FuncGraph, result) -> list:
    """The tensors a branch function returns: its result's leaves, made inside it."""
    with graph.as_default():
        return [as_function_output(graph, _to_flow(v))
                for v in nest.flatten(result, expand_composites=True)]


def _reconcile_indices(then_graph: FuncGraph, then_result, else_graph: FuncGraph,
                       else_result) -> tuple:
    """IndexedSlices whose index (or dense shape) dtypes differ, int32 in one branch and
    int64 in the other, are made int64 in both (as TF1's cond does)."""
    pairs = list(zip(nest.flatten(then_result), nest.flatten(else_result), strict=True))
    if not any(isinstance(a, IndexedSlices) for a, _ in pairs):
        return then_result, else_result
    then_leaves, else_leaves = [], []
    for a, b in pairs:
        if isinstance(a, IndexedSlices) and isinstance(b, IndexedSlices):
            a, b = (_widened(then_graph, a, b), _widened(else_graph, b, a))
        then_leaves.append(a)
        else_leaves.append(b)
    return (nest.pack_sequence_as(then_result, then_leaves),
            nest.pack_sequence_as(else_result, else_leaves))


def _widened(graph: FuncGraph, mine: IndexedSlices, other: IndexedSlices) -> IndexedSlices:
    def widen(t, u):
        if t is None or u is None or not (t.dtype is dtypes.int32 and u.dtype is dtypes.int64):
            return t
        with graph.as_default():
            return math.cast(t, dtypes.int64)
    return IndexedSlices(mine.values, widen(mine.indices, other.indices),
                         widen(mine.dense_shape, other.dense_shape))


def _op_as_flag(value, taken: bool):
    """An op returned by a branch: a bool tensor that is ready once the op has run."""
    if not isinstance(value, Operation):
        return value
    with get_default_graph().control_dependencies([value]):
        return constant(taken, name="pivot")


def _shared_inputs(graphs: Sequence[FuncGraph]) -> tuple[list, list[list]]:
    """The union of the graphs' captures, and each graph's placeholders for them."""
    sources: list = []
    for graph in graphs:
        for source in graph.captured_sources():
            if source not in sources:
                sources.append(source)
    placeholders = [[graph.capture(s) for s in sources] for graph in graphs]
    return sources, placeholders


def cond(pred, true_fn: Optional[Callable] = None, false_fn: Optional[Callable] = None,
         strict: bool = False, name: Optional[str] = None, fn1=None, fn2=None):
    """Returns ``true_fn()`` if ``pred`` is true else ``false_fn()``; only one branch runs.

    Both branches return the same structure of tensors (ops, such as ``no_op`` or
    ``group``, become bool tensors: true in the branch that ran) with matching dtypes.
    Unless ``strict``, one-element lists and tuples are unpacked. Gradients flow through
    the branch that ran.
    """
    true_fn = _renamed_argument(true_fn, fn1, "true_fn", "fn1")
    false_fn = _renamed_argument(false_fn, fn2, "false_fn", "fn2")
    if not callable(true_fn):
        raise TypeError("'true_fn' must be callable.")
    if not callable(false_fn):
        raise TypeError("'false_fn' must be callable.")
    if isinstance(pred, bool):
        raise TypeError("'pred' must not be a Python bool.")
    graph = get_default_graph()
    with graph.atomic(), graph.name_scope(name or "cond"):
        predicate = convert_to_tensor(pred)
        _check_predicate(predicate, "Switch", "pred")
        then_graph, then_result = _trace_branch(true_fn, "true_fn", True, strict)
        else_graph, else_result = _trace_branch(false_fn, "false_fn", False, strict)
        nest.assert_same_structure(then_result, else_result)
        then_result, else_result = _reconcile_indices(then_graph, then_result,
                                                      else_graph, else_result)
        then_leaves = _branch_outputs(then_graph, then_result)
        else_leaves = _branch_outputs(else_graph, else_result)
        _check_branches_match(then_result, else_result, then_leaves, else_leaves)
        sources, (then_inputs, else_inputs) = _shared_inputs([then_graph, else_graph])
        then_branch = Function(then_graph, then_inputs, then_leaves, name="cond_true")
        else_branch = Function(else_graph, else_inputs, else_leaves, name="cond_false")
        with graph.control_dependencies(_outer_controls([then_graph, else_graph])):
            op = graph.create_op("If", [predicate] + sources,
                                 {"then_branch": then_branch, "else_branch": else_branch},
                                 name="If")
    outputs = [_from_flow(t, o) for t, o in zip(nest.flatten(then_result, True), op.outputs,
                                                   strict=True)]
    return nest.pack_sequence_as(then_result, outputs, expand_composites=True)


def _renamed_argument(value, old_value, name: str, old_name: str):
    """TF1's deprecated ``fn1``/``fn2`` spellings of ``true_fn``/``false_fn``."""
    if old_value is not None:
        if value is not None:
            raise TypeError(f"cond(): '{name}' and '{old_name}' may not be set simultaneously.")
        value = old_value
    if value is None:
        raise TypeError(f"cond(): '{name}' argument required")
    return value


def _check_predicate(predicate: Tensor, op_type: str, what: str) -> None:
    if predicate.dtype is not dtypes.bool:
        raise TypeError(f"Input '{what}' of '{op_type}' Op has type {predicate.dtype.name} "
                        "that does not match expected type of bool.")
    if predicate.shape.ndims not in (None, 0):
        raise ValueError(f"Shape must be rank 0 but is rank {predicate.shape.ndims} for "
                         f"'{op_type}' ({what} {predicate.name}) with input shapes: "
                         f"{predicate.shape}.")


def _check_branches_match(then_result, else_result, then_leaves, else_leaves) -> None:
    nest.assert_same_structure(then_result, else_result, expand_composites=True)
    for a, b in zip(then_leaves, else_leaves, strict=True):
        if a.dtype is not b.dtype:
            raise ValueError("Outputs of 'true_fn' and 'false_fn' must have the same type(s). "
                             f"Received {a.dtype.name} from 'true_fn' and {b.dtype.name} from "
                             "'false_fn'.")


def _unpack_singleton(result):
    while isinstance(result, (list, tuple)) and len(result) == 1:
        result = result[0]
    return result


define_op("CaseCheck", infer=lambda inputs, attrs: [], kernel=lambda *preds, **attrs:
          _case_check_kernel(*preds, **attrs), stateful=True)
NotDifferentiable("CaseCheck")


def _case_check_kernel(*preds, exclusive: bool, names: list):
    """Fails the run as TF1's ``case`` does: none true (no default), or several true."""
    flags = " ".join(str(int(bool(p))) for p in preds)
    if exclusive and sum(bool(p) for p in preds) > 1:
        chosen = ", ".join(n for n, p in zip(names, preds, strict=True) if p)
        raise errors.InvalidArgumentError(
            None, None, f"assertion failed: [Input error: exclusive=True: more than 1 "
                        f"conditions ({chosen}) evaluated as True:] [{flags}]")
    if not exclusive and not any(bool(p) for p in preds):
        raise errors.InvalidArgumentError(
            None, None, "assertion failed: [Input error: None of conditions evaluated as "
                        f"True:] [{flags}]")
    return ()


def _case_check(predicates: list, exclusive: bool) -> Operation:
    return get_default_graph().create_op(
        "CaseCheck", predicates, {"exclusive": exclusive,
                                  "names": [p.name for p in predicates]},
        name="Assert")


def case(pred_fn_pairs, default: Optional[Callable] = None, exclusive: bool = False,
         strict: bool = False, name: str = "case"):
    """The ``fn`` of the first ``pred`` that holds, else ``default`` (TF1 ``tf.case``).

    Without a default the last pair's ``fn`` stands in for it, and the run fails with
    InvalidArgumentError when no predicate holds. ``exclusive=True`` makes the run fail
    when more than one of the predicates (the last one aside, without a default) holds.
    """
    pairs = _case_pairs(pred_fn_pairs)
    graph = get_default_graph()
    with graph.atomic(), graph.name_scope(name):
        predicates = [convert_to_tensor(p) for p, _ in pairs]
        if default is None:
            all_predicates = predicates
            last_fn = pairs[-1][1]
            pairs, predicates = pairs[:-1], predicates[:-1]

            def default():
                with get_default_graph().control_dependencies(
                        [_case_check(all_predicates, exclusive=False)]):
                    return nest.map_structure(_guarded, last_fn())
        checks = [_case_check(predicates, exclusive=True)] if exclusive and len(predicates) > 1 \
            else []
        result_fn = default
        for predicate, (_, fn) in reversed(list(zip(predicates, pairs, strict=True))):
            result_fn = (lambda p, f, otherwise: lambda: cond(p, f, otherwise, strict=strict))(
                predicate, fn, result_fn)
        with graph.control_dependencies(checks):
            result = result_fn()
        return result if pairs or strict else _unpack_singleton(result)


def _guarded(value):
    """``value`` made inside the running control-dependency block (outer ones included)."""
    if isinstance(value, Operation):
        return value
    return array.identity(_to_flow(value))


def _case_pairs(pred_fn_pairs) -> list:
    if isinstance(pred_fn_pairs, dict):
        pairs = list(pred_fn_pairs.items())
    elif isinstance(pred_fn_pairs, (list, tuple)):
        pairs = list(pred_fn_pairs)
    else:
        raise TypeError("'pred_fn_pairs' must be a list, tuple, or dict. Received: "
                        f"{type(pred_fn_pairs)}")
    if not pairs:
        raise ValueError("'pred_fn_pairs' must not be empty.")
    for pair in pairs:
        if not isinstance(pair, tuple) or len(pair) != 2:
            raise TypeError(f"Each entry in 'pred_fn_pairs' must be a 2-tuple. Received {pair}.")
        predicate, fn = pair
        if not isinstance(predicate, Tensor) or predicate.dtype is not dtypes.bool:
            raise TypeError("pred must be Tensor of type bool: "
                            f"{getattr(predicate, 'name', predicate)}")
        if not callable(fn):
            raise TypeError(f"fn for pred {predicate.name} must be callable.")
    return pairs


# --------------------------------------------------------------------- while
class LoopHistory:
    """The run-time record of a While op: the loop state at the start of each iteration."""

    __slots__ = ("states",)

    def __init__(self, states: list):
        self.states = states

    def __len__(self) -> int:
        return len(self.states)


class HistoryCotangent:
    """A sparse gradient for a LoopHistory: per iteration, one gradient per loop variable."""

    __slots__ = ("entries",)

    def __init__(self, entries: dict):
        self.entries = entries

    def __add__(self, other: "HistoryCotangent") -> "HistoryCotangent":
        merged = dict(self.entries)
        for i, grads in other.entries.items():
            mine = merged.get(i)
            merged[i] = grads if mine is None else tuple(
                b if a is None else a if b is None else a + b for a, b in zip(mine, grads))
        return HistoryCotangent(merged)


def _infer_while(inputs, attrs):
    n = attrs["num_loop_vars"]
    specs = [(t.dtype, shape) for t, shape in zip(inputs[:n], attrs["shapes"])]
    return specs + [(dtypes.variant, TensorShape([]))]


def _while_kernel(ctx, *args, cond, body, num_loop_vars, shapes, record_history,
                  parallel_iterations=10, saving=None):
    state = list(args[:num_loop_vars])
    extras = list(args[num_loop_vars:])
    if not record_history:
        while bool(ctx.call(cond, state + extras)[0]):
            state = ctx.call(body, state + extras)
        return tuple(state) + (LoopHistory([]),)
    # Recording for a gradient: each iteration's state and, with ``saving`` (the body
    # with the values its gradient reads as extra outputs), those values too.
    step = body if saving is None else saving
    history = []
    while bool(ctx.call(cond, state + extras)[0]):
        results = ctx.call(step, state + extras)
        history.append(tuple(state) + tuple(results[num_loop_vars:]))
        state = results[:num_loop_vars]
    return tuple(state) + (LoopHistory(history),)


define_op("While", infer=_infer_while, kernel=_while_kernel, stateful=True, needs_context=True)


def _infer_history_read(inputs, attrs):
    return [(d, s) for d, s in zip(attrs["dtypes"], attrs["shapes"])]


def _history_read_kernel(history, index, *, dtypes, shapes):
    record = history.states[int(index)]
    return record[0] if len(dtypes) == 1 else record[:len(dtypes)]


define_op("LoopHistoryRead", infer=_infer_history_read, kernel=_history_read_kernel)


@RegisterGradient("LoopHistoryRead")
def _history_read_grad(op, *grads):
    cotangent = apply_op("LoopHistoryCotangent", [op.inputs[1]] + _filled(op, grads),
                         name="LoopHistoryCotangent")
    return cotangent, None


def _history_cotangent_kernel(index, *grads):
    return HistoryCotangent({int(index): tuple(grads)})


define_op("LoopHistoryCotangent",
          infer=lambda inputs, attrs: [(dtypes.variant, TensorShape([]))],
          kernel=_history_cotangent_kernel)


@RegisterGradient("LoopHistoryCotangent")
def _history_cotangent_grad(op, grad):
    reads = apply_op("LoopHistoryCotangentRead", [grad, op.inputs[0]] + list(op.inputs[1:]),
                     name="LoopHistoryCotangentRead")
    reads = reads if isinstance(reads, list) else [reads]
    return [None] + reads


def _cotangent_read_kernel(cotangent, index, *like):
    grads = cotangent.entries.get(int(index)) if cotangent is not None else None
    values = [g if grads is not None and g is not None
              else np.zeros_like(x) if isinstance(x, (np.ndarray, np.generic)) else None
              for x, g in zip(like, grads or [None] * len(like))]
    return values[0] if len(values) == 1 else tuple(values)


define_op("LoopHistoryCotangentRead",
          infer=lambda inputs, attrs: [(t.dtype, t.shape) for t in inputs[2:]],
          kernel=_cotangent_read_kernel)


@RegisterGradient("LoopHistoryCotangentRead")
def _cotangent_read_grad(op, *grads):
    cotangent = apply_op("LoopHistoryCotangent", [op.inputs[1]] + _filled(op, grads),
                         name="LoopHistoryCotangent")
    return [cotangent, None] + [None] * (len(op.inputs) - 2)


def _set_recording(op: Operation) -> None:
    """From now on the loop records its states (needed by its gradient)."""
    if not op.get_attr("record_history"):
        op.graph.set_op_attr(op, "record_history", True)


@RegisterGradient("While")
def _while_grad(op, *grads):
    """A backward While over the recorded iterations, applying the body's gradient.

    The forward loop records, per iteration, its state and the body values that the
    gradient reads (``_saving_body``); the backward body feeds them to the gradient
    function instead of recomputing the forward body (TF1's stack push and pop).
    A loop-invariant input's gradient is the sum of its per-iteration gradients; where
    that is a product ``a^T b`` (a weight's) or a bias gradient, the loop collects the
    rows of the operands and one op after it makes the sum (``_deferred_sums``).
    """
    n = op.get_attr("num_loop_vars")
    body: Function = op.get_attr("body")
    _set_recording(op)
    saving = _saving_body(op)
    saved = saving.outputs[len(body.outputs):]
    init, extras = list(op.inputs[:n]), list(op.inputs[n:])
    history = op.outputs[n]
    state_grads = _filled(op, grads[:n])
    history_grad = grads[n]
    # With a gradient for the history (a loop's second derivative), the recorded
    # values get cotangents too: the step then differentiates the saving body.
    step_grad = _fed_gradient(body if history_grad is None else saving, saved)
    trainable = body.trainable_input_indices()
    trainable_vars = [i for i in trainable if i < n]
    deferred = _deferred_sums(step_grad, trainable, n)
    kept = [k for k in range(len(trainable)) if k not in deferred]
    collected = list(dict.fromkeys(t for _, operands in deferred.values() for t in operands))
    made = [t for t in collected if t not in step_grad.inputs]
    if deferred:  # the step returns the operands it makes instead of the deferred terms
        step_grad = Function(step_grad.graph, step_grad.inputs,
                             [step_grad.outputs[k] for k in kept] + made,
                             name=f"{step_grad.name}_rows")
    kept_inputs = [trainable[k] for k in kept]
    summed = [i - n for i in kept_inputs if i >= n]
    extra_sums = [zeros_like_any(extras[j]) for j in summed]
    count = apply_op("LoopHistorySize", [history], name="iterations")
    # (infer_shape off: the number of rows may change from one iteration to the next)
    rows = [TensorArray(t.dtype, size=count, element_shape=t.shape, infer_shape=False,
                        name="rows") for t in collected]
    recorded_types = [t.dtype for t in init + saved]
    recorded_shapes = [t.shape for t in init + saved]

    def backward_cond(i, *_):
        return math.greater_equal(i, 0)

    def backward_body(i, *carried):
        d_state = list(carried[:n])
        d_sums, d_rows = list(carried[n:n + len(summed)]), list(carried[n + len(summed):])
        record = apply_op("LoopHistoryRead", [history, i], name="state",
                          dtypes=recorded_types, shapes=recorded_shapes)
        record = record if isinstance(record, list) else [record]
        state, values = record[:n], record[n:]
        d_record = []
        if history_grad is not None:  # the recorded values themselves were used too
            d_record = apply_op("LoopHistoryCotangentRead", [history_grad, i] + record,
                                name="history_grad")
            d_record = d_record if isinstance(d_record, list) else [d_record]
        arguments = state + extras + d_state + d_record[n:] + values
        results = call_function(step_grad, arguments)
        by_input = dict(zip(kept_inputs, results))
        d_state = [by_input[j] if j in by_input else d for j, d in enumerate(d_state)]
        if history_grad is not None:
            d_state = [add_gradients([d, r]) if carries_gradient(d) else d
                       for d, r in zip(d_state, d_record[:n], strict=True)]
        d_sums = [add_gradients([s, by_input[n + j]]) for s, j in zip(d_sums, summed)]
        value_of = dict(zip(step_grad.inputs, arguments))
        value_of.update(zip(made, results[len(kept):]))
        d_rows = [ta.write(i, value_of[t]) for ta, t in zip(d_rows, collected, strict=True)]
        return [i - 1] + d_state + d_sums + d_rows

    start = math.subtract(count, 1)
    finals = while_loop(backward_cond, backward_body,
                        [start] + state_grads + extra_sums + rows, name="while_grad",
                        back_prop=True, _skip_invariant_check=True)
    d_init, d_sums = finals[1:1 + n], finals[1 + n:1 + n + len(summed)]
    joined = dict(zip(collected, (ta.concat() for ta in finals[1 + n + len(summed):])))
    by_extra = dict(zip(summed, d_sums))
    for position, (term, operands) in deferred.items():
        by_extra[trainable[position] - n] = term(*(joined[t] for t in operands))
    result = [d if i in trainable_vars else None for i, d in enumerate(d_init)]
    return result + _scatter_to_inputs(len(extras), list(by_extra), list(by_extra.values()))


def _deferred_sums(grad: Function, trainable: list, num_loop_vars: int) -> dict:
    """The loop-invariant inputs whose per-iteration gradient (an output of ``grad``,
    read by nothing else) is a product ``a^T b`` (a weight's) or a rank-2 BiasAddGrad:
    {output position: (builder, operands)}. The sum over iterations of ``a_t^T b_t`` is
    one product of the rows of every ``a_t`` and ``b_t``; of the bias gradients, one
    over every row: ``builder(*joined_rows)`` makes it after the loop. That spares each
    iteration a product into a fresh weight-sized array and the sum with it. Operands
    are rank 2 with a known width (an empty loop's rows concatenate to 0 x width)."""
    deferred = {}
    for position, (index, out) in enumerate(zip(trainable, grad.outputs, strict=True)):
        op = out.op
        if index < num_loop_vars or not out.dtype.is_floating or out.consumers() or \
                grad.outputs.count(out) != 1:
            continue
        if op.type == "MatMul" and op.get_attr("transpose_a") and \
                not op.get_attr("transpose_b"):
            term = _product_of_rows
        elif op.type == "BiasAddGrad":  # of rank 2 (checked below): row sums either layout
            term = _row_sums
        else:
            continue
        if all(_collectable(t, grad) for t in op.inputs):
            deferred[position] = (term, list(op.inputs))
    return deferred


def _collectable(t: Tensor, grad: Function) -> bool:
    """An input of ``grad`` or a tensor made in it, of rank 2 and known width."""
    dims = t.shape.as_tuple()
    return dims is not None and len(dims) == 2 and dims[1] is not None and \
        (t in grad.inputs or (t.graph is grad.graph and t.op.type != "Placeholder"))


def _product_of_rows(a: Tensor, b: Tensor) -> Tensor:
    return math.matmul(a, b, transpose_a=True)


def _row_sums(rows: Tensor) -> Tensor:
    """The sum of an [R, C] tensor's rows, as a product with a column of ones: BLAS makes
    it in one pass, without the temporaries of a tall reduction."""
    ones = array.ones_like(array.slice(rows, [0, 0], [-1, 1]))
    return array.reshape(math.matmul(ones, rows, transpose_a=True), [-1])


def _saving_body(op: Operation) -> Function:
    """The loop body with, as extra outputs, the values its gradient reads (made once
    per While op, kept in its ``saving`` attr, which its kernel then runs)."""
    saving = op.attr_or("saving")
    if saving is None:
        body: Function = op.get_attr("body")
        saved = _values_to_save(body, body.symbolic_gradient(), op.get_attr("num_loop_vars"))
        saving = Function(body.graph, body.inputs, body.outputs + saved,
                          name=f"{body.name}_saving")
        op.graph.set_op_attr(op, "saving", saving)
    return saving


def _values_to_save(body: Function, grad: Function, num_loop_vars: int) -> list:
    """The forward values of ``body`` that ``grad`` (its symbolic gradient) reads and that
    change between iterations: the frontier between the forward ops the gradient would
    recompute and its own ops. Loop-invariant values (of constants and captured
    tensors only, no stateful op) are recomputed instead; a stateful op's are saved,
    so a backward iteration sees the random values and variable reads of its forward
    iteration and runs no assignment again."""
    loop_vars = set(body.inputs[:num_loop_vars])
    output_grads = set(grad.inputs[len(body.inputs):])
    backward: set = set()
    varying: set = set()
    saved: dict = {}  # insertion-ordered set
    for op in _ops_feeding(grad.outputs, set(grad.inputs)):
        if any(t in output_grads or t._op in backward for t in op._inputs):
            backward.add(op)
            saved.update((t, None) for t in op._inputs
                         if t._op in varying and t not in output_grads)
        elif op._op_def.stateful or any(t in loop_vars or t._op in varying
                                        for t in op._inputs) or \
                any(c in varying for c in op._control_inputs):
            varying.add(op)
    saved.update((t, None) for t in grad.outputs if t._op in varying)
    return list(saved)


def _ops_feeding(outputs: Sequence[Tensor], inputs: set) -> list:
    """The ops computing ``outputs`` from ``inputs`` (by data and control edges), in
    creation order: producers before consumers."""
    needed: set = set()
    stack = [t._op for t in outputs if t not in inputs]
    while stack:
        op = stack.pop()
        if op in needed:
            continue
        needed.add(op)
        stack.extend(t._op for t in op._inputs if t not in inputs and t._op not in needed)
        stack.extend(c for c in op._control_inputs if c not in needed)
    return sorted(needed, key=lambda op: op._id)


def _fed_gradient(function: Function, saved: list) -> Function:
    """``function``'s symbolic gradient taking the ``saved`` forward values as inputs
    (after its own), so running it computes only the gradient's ops."""
    grad = function.symbolic_gradient()
    return Function(grad.graph, grad.inputs + saved, grad.outputs, name=f"{grad.name}_fed")


define_op("LoopHistorySize", infer=lambda inputs, attrs: [(dtypes.int32, TensorShape([]))],
          kernel=lambda history: np.int32(len(history)))
NotDifferentiable("LoopHistorySize")


def while_loop(cond: Callable, body: Callable, loop_vars, shape_invariants=None,
               parallel_iterations: int = 10, back_prop: bool = True, swap_memory: bool = False,
               name: Optional[str] = None, maximum_iterations=None,
               return_same_structure: bool = False, _skip_invariant_check: bool = False):
    """Repeats ``body`` while ``cond`` is true (TF1 ``tf.while_loop``).

    ``loop_vars`` is a list or tuple of (nested structures of) tensors and TensorArrays;
    ``body`` returns the same structure (a lone tensor for a single loop variable). The
    result has the structure ``body`` returns; when that holds a single tensor and
    ``return_same_structure=False``, it is that tensor itself. A variable's shape may
    only change across iterations within its ``shape_invariants`` entry.
    """
    if not callable(cond):
        raise TypeError("'cond' must be callable.")
    if not callable(body):
        raise TypeError("'body' must be callable.")
    if parallel_iterations < 1:
        raise TypeError("'parallel_iterations' must be a positive integer.")
    if not isinstance(parallel_iterations, int):  # TF1 takes Python ints only
        raise ValueError(f"'parallel_iterations' must be a positive integer: "
                         f"{parallel_iterations}")
    bare = not nest.is_nested(loop_vars)  # a lone tensor (TF2 style) comes back alone
    loop_vars = [loop_vars] if bare else loop_vars
    if not loop_vars:
        raise ValueError("'loop_vars' must be provided.")
    graph = get_default_graph()
    with graph.atomic(), graph.name_scope(name or "while"):
        try_to_pack = bare or (len(loop_vars) == 1 and not return_same_structure)
        if maximum_iterations is not None:
            cond, body, loop_vars, shape_invariants = _bounded_loop(
                cond, body, loop_vars, shape_invariants, maximum_iterations, try_to_pack)
        result = _build_while(graph, cond, body, loop_vars, shape_invariants, back_prop,
                              parallel_iterations, _skip_invariant_check)
    if maximum_iterations is not None:
        return result[1]
    if bare or (not return_same_structure and len(nest.flatten(result, True)) == 1):
        return result[0]  # TF1 unpacks a result of a single tensor
    return result


def _bounded_loop(cond, body, loop_vars, shape_invariants, maximum_iterations,
                  try_to_pack: bool):
    """``maximum_iterations``: a counter carried before the loop variables (as TF1)."""
    limit = convert_to_tensor(maximum_iterations, name="maximum_iterations")
    if limit.shape.ndims != 0:
        raise ValueError(f"'maximum_iterations' must be a scalar. Received shape: "
                         f"{limit.shape}")
    counter = constant(0, dtype=limit.dtype, name="iteration_counter")
    if try_to_pack:
        inner = loop_vars[0]

        def bounded_cond(i, value):
            return math.logical_and(math.less(i, limit), cond(value))

        def bounded_body(i, value):
            return i + 1, body(value)
    else:
        inner = loop_vars

        def bounded_cond(i, values):
            return math.logical_and(math.less(i, limit), cond(*values))

        def bounded_body(i, values):
            # Beyond TF1 (which raises TypeError): a tuple body result for list loop_vars
            # (or the reverse) is accepted, as it is without maximum_iterations.
            result = body(*values)
            if type(result) in (list, tuple) and type(values) in (list, tuple):
                result = type(values)(result)
            return i + 1, result
    if shape_invariants is not None:
        shape_invariants = (TensorShape([]), shape_invariants)
    return bounded_cond, bounded_body, (counter, inner), shape_invariants


def _build_while(graph, cond, body, loop_vars, shape_invariants, back_prop: bool,
                 parallel_iterations: int, skip_check: bool):
    """Traces ``cond`` and ``body``, adds the While op; returns the packed results."""
    templates = nest.flatten(loop_vars, expand_composites=True)
    init = [_to_flow(v) for v in templates]
    shapes = _loop_shapes(loop_vars, init, shape_invariants)
    cond_graph, body_graph, cond_out, body_result, body_outs = _trace_loop(
        cond, body, loop_vars, templates, init, shapes, skip_check)
    sources, (cond_extra, body_extra) = _shared_inputs([cond_graph, body_graph])
    n = len(init)
    cond_fn = Function(cond_graph, cond_graph.inputs[:n] + cond_extra, [cond_out],
                       name="while_cond")
    body_fn = Function(body_graph, body_graph.inputs[:n] + body_extra, body_outs,
                       name="while_body")
    with graph.control_dependencies(_outer_controls([cond_graph, body_graph])):
        op = graph.create_op("While", init + sources,
                             {"cond": cond_fn, "body": body_fn, "num_loop_vars": n,
                              "shapes": shapes, "record_history": False,
                              "parallel_iterations": parallel_iterations},
                             name="While")
    outputs = op.outputs[:n]
    if not back_prop:
        outputs = [array.stop_gradient(t) if t.dtype.is_trainable else t for t in outputs]
    leaves = [_from_flow(tmpl, t)
              for tmpl, t in zip(nest.flatten(body_result, expand_composites=True), outputs,
                                  strict=True)]
    return nest.pack_sequence_as(body_result, leaves, expand_composites=True)


def _outer_controls(graphs: Sequence[FuncGraph]) -> list:
    """Control inputs that the functions' bodies named from enclosing graphs."""
    ops: list = []
    for graph in graphs:
        ops.extend(op for op in graph.outer_control_inputs if op not in ops)
    return ops


def _loop_shapes(loop_vars, init: list, shape_invariants) -> list:
    if shape_invariants is None:
        return [t.shape for t in init]
    nest.assert_same_structure(loop_vars, shape_invariants)
    invariants = nest.flatten(nest.map_structure(_composite_invariant, loop_vars,
                                                 shape_invariants), expand_composites=True)
    shapes = []
    for t, invariant in zip(init, invariants, strict=True):
        invariant = as_shape(invariant)
        if not invariant.is_compatible_with(t.shape):
            raise ValueError(f"The shape invariant specified for {t.name} is not compatible "
                             f"with the initial shape of the loop variable. It enters the "
                             f"loop with shape {t.shape}, but the specified shape invariant "
                             f"is {invariant}.")
        shapes.append(invariant)
    return shapes


def _composite_invariant(value, invariant):
    """An IndexedSlices loop variable's invariant covers its values; its indices (and
    dense shape) keep their own rank."""
    if not isinstance(value, IndexedSlices):
        return invariant
    invariant = as_shape(invariant)
    rows = TensorShape([invariant[0] if invariant.ndims else None])
    dense = None if value.dense_shape is None else value.dense_shape.shape
    return IndexedSlices(invariant, rows, dense)


def _trace_loop(cond, body, loop_vars, templates, init, shapes, skip_check):
    outer = get_default_graph()
    cond_graph = FuncGraph("while_cond", outer)
    body_graph = FuncGraph("while_body", outer)
    body_graph.loop_inputs = list(init)
    for graph in (cond_graph, body_graph):
        with graph.as_default():
            for i, (t, shape) in enumerate(zip(init, shapes)):
                graph.add_input(t.dtype, shape, name=f"loop_var{i}")
    with cond_graph.as_default():
        args = _loop_args(loop_vars, templates, cond_graph.inputs[:len(init)])
        cond_out = _check_cond_output(convert_to_tensor(cond(*args)))
        cond_out = as_function_output(cond_graph, cond_out)
    with body_graph.as_default():
        args = _loop_args(loop_vars, templates, body_graph.inputs[:len(init)])
        result = _body_structure(args, body(*args))
        outputs = [as_function_output(body_graph, _to_flow(v))
                   for v in nest.flatten(result, expand_composites=True)]
    _check_body_outputs(init, outputs, shapes, skip_check)
    return cond_graph, body_graph, cond_out, result, outputs


def _check_cond_output(cond_out: Tensor) -> Tensor:
    if cond_out.dtype is not dtypes.bool:
        raise TypeError(f"Input 'input' of 'LoopCond' Op has type {cond_out.dtype.name} that "
                        "does not match expected type of bool.")
    if cond_out.shape.ndims not in (None, 0):
        raise ValueError(f"Shape must be rank 0 but is rank {cond_out.shape.ndims} for "
                         f"'LoopCond' (the value returned by cond) with input shapes: "
                         f"{cond_out.shape}.")
    return cond_out


def _loop_args(loop_vars, templates, placeholders) -> list:
    """The loop variables as the user's callables receive them (positional arguments)."""
    leaves = [_from_flow(tmpl, p) for tmpl, p in zip(templates, placeholders, strict=True)]
    return list(nest.pack_sequence_as(loop_vars, leaves, expand_composites=True))


def _body_structure(args: list, result):
    """``body``'s result as a sequence matching the loop variables (TF1's rules).

    A lone value is wrapped in a list. Beyond TF1, a single nested loop variable may
    come back without its one-element wrapper.
    """
    if not nest.is_nested(result):
        result = [result]
    elif len(args) == 1 and nest.is_nested(args[0]) and \
            not _mismatch_free(args, list(result)) and _mismatch_free(args[0], result):
        result = [result]
    nest.assert_same_structure(args, list(result), expand_composites=True)
    return result


def _mismatch_free(a, b) -> bool:
    try:
        nest.assert_same_structure(a, b, check_types=False, expand_composites=True)
    except (TypeError, ValueError):
        return False
    return True


def _check_body_outputs(init: list, outputs: list, shapes: list, skip_check: bool) -> None:
    for i, (t, out, shape) in enumerate(zip(init, outputs, shapes)):
        if out.dtype is not t.dtype:
            raise TypeError(f"Loop variable {i} ({t.name}) enters the loop with dtype "
                            f"{t.dtype.name}, but body returns dtype {out.dtype.name} "
                            f"({out.name})")
        if not skip_check and not shape.is_compatible_with(out.shape):
            raise ValueError(f"Input tensor '{t.name}' enters the loop with shape {shape}, but "
                             f"has shape {out.shape} after one iteration. To allow the shape "
                             "to vary across iterations, use the `shape_invariants` argument "
                             "of tf.while_loop to specify a less-specific shape.")
