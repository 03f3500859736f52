"""Variables: state that lives in a Session and survives across runs.

A variable is a ``VariableV2`` op whose output is a reference (a handle at run time).
Reading goes through ``v/read``; ``Assign``-family ops write. Writes made during a run
become visible to later ops of that run and are committed when the run succeeds.
"""
from __future__ import annotations

import contextlib
from typing import Optional

import numpy as np

from gradflow.framework import dtypes, errors
from gradflow.framework.constant import (constant, convert_to_tensor,
                                         register_tensor_conversion_function)
from gradflow.framework.default_session import get_default_session
from gradflow.framework.graph import GraphKeys, Tensor, get_default_graph
from gradflow.framework.indexed_slices import IndexedSlices
from gradflow.framework.registry import NotDifferentiable, RegisterGradient, define_op
from gradflow.framework.tensor_shape import TensorShape, as_shape
from gradflow.ops import array, control, math

__all__ = ["Variable", "global_variables", "trainable_variables", "local_variables",
           "moving_average_variables", "model_variables",
           "global_variables_initializer", "local_variables_initializer",
           "variables_initializer", "initialize_all_variables", "assign", "assign_add",
           "assign_sub", "is_variable_initialized", "report_uninitialized_variables",
           "scatter_update", "scatter_add", "scatter_sub", "scatter_mul", "scatter_div",
           "scatter_nd_update", "scatter_max", "scatter_min", "scatter_nd_add",
           "scatter_nd_sub"]


class VariableRef:
    """The run-time value of a variable's reference tensor: which variable it names."""

    __slots__ = ("key",)

    def __init__(self, key: str):
        self.key = key

    def __repr__(self) -> str:
        return f"VariableRef({self.key!r})"


define_op("VariableV2", infer=lambda inputs, attrs: [(attrs["dtype"], attrs["shape"])],
          kernel=lambda ctx, *, dtype, shape, shared_name, container="": VariableRef(shared_name),
          stateful=True, needs_context=True)
NotDifferentiable("VariableV2")


def _read_kernel(ctx, ref):
    return ctx.read_variable(ref.key, ref.key)


define_op("ReadVariableOp", infer=lambda inputs, attrs: [(inputs[0].dtype, inputs[0].shape)],
          kernel=_read_kernel, stateful=True, needs_context=True)


@RegisterGradient("ReadVariableOp")
def _read_variable_grad(op, grad):
    return grad


def _merge_failure(a: TensorShape, b: TensorShape) -> str:
    """TF's words for two incompatible shapes (both of known rank)."""
    da, db = a.as_tuple(), b.as_tuple()
    if len(da) != len(db):
        return f"Shapes must be equal rank, but are {len(da)} and {len(db)}"
    i = next(i for i, (p, q) in enumerate(zip(da, db, strict=True))
             if p is not None and q is not None and p != q)
    texts = ["[" + ",".join("?" if d is None else str(d) for d in dims) + "]"
             for dims in (da, db)]
    return (f"Dimension {i} in both shapes must be equal, but are {da[i]} and {db[i]}. "
            f"Shapes are {texts[0]} and {texts[1]}.")


def _infer_assign(inputs, attrs):
    ref, value = inputs
    if value.dtype is not ref.dtype:
        raise TypeError(f"Input 'value' of 'Assign' Op has type "
                        f"{value.dtype.name} that does not match type {ref.dtype.name} of "
                        f"variable {ref.op.name}")
    if attrs.get("validate_shape", True) and not ref.shape.is_compatible_with(value.shape):
        raise errors.InvalidShapeError(
            _merge_failure(ref.shape, value.shape),
            f" (cannot assign a value of shape {value.shape} to variable {ref.op.name} of "
            f"shape {ref.shape})")
    return [(ref.dtype, ref.shape if attrs.get("validate_shape", True) else value.shape)]


def _assign_kernel(ctx, ref, value, *, validate_shape=True, use_locking=False):
    stored = np.array(value, copy=True)
    if validate_shape and ctx.is_initialized(ref.key):
        current = ctx.read_variable(ref.key, ref.key)
        if current.shape != stored.shape:
            raise ValueError(f"Assign requires shapes of both tensors to match. lhs shape= "
                             f"{list(current.shape)} rhs shape= {list(stored.shape)}")
    ctx.write_variable(ref.key, stored)
    return stored


def _update_kernel(sign: int):
    def kernel(ctx, ref, delta, *, use_locking=False):
        current = ctx.read_variable(ref.key, ref.key)
        if current.shape != delta.shape:
            raise ValueError(f"Update of {ref.key} requires shapes to match: variable "
                             f"{list(current.shape)}, delta {list(delta.shape)}")
        updated = current + delta if sign > 0 else current - delta
        ctx.write_variable(ref.key, updated)
        return updated
    return kernel


def _infer_update(inputs, attrs):
    ref, delta = inputs
    if delta.dtype is not ref.dtype:
        raise TypeError(f"Update of variable {ref.op.name} ({ref.dtype.name}) with a value of "
                        f"type {delta.dtype.name}")
    if not ref.shape.is_compatible_with(delta.shape):
        raise ValueError(f"Shapes {ref.shape} and {delta.shape} are incompatible for updating "
                         f"variable {ref.op.name}")
    return [(ref.dtype, ref.shape)]


def _divide(a, b):
    """TF's division: integers truncate toward zero."""
    if np.issubdtype(np.asarray(a).dtype, np.integer):
        return (np.abs(a) // np.abs(b) * np.sign(a) * np.sign(b)).astype(np.asarray(a).dtype)
    return a / b


# How each scatter op combines the old rows with the updates (None: replaces them).
_SCATTER_COMBINE = {"ScatterUpdate": None, "ScatterAdd": np.add, "ScatterSub": np.subtract,
                    "ScatterMul": np.multiply, "ScatterDiv": _divide,
                    "ScatterMax": np.maximum, "ScatterMin": np.minimum}
# The same for the N-d scatters.
_SCATTER_ND_COMBINE = {"ScatterNdUpdate": None, "ScatterNdAdd": np.add,
                       "ScatterNdSub": np.subtract}


def _check_row_indices(indices: np.ndarray, rows: int) -> None:
    flat = np.asarray(indices).reshape(-1)
    bad = np.flatnonzero((flat < 0) | (flat >= rows))
    if bad.size:
        raise errors.InvalidArgumentError(
            None, None, f"indices[{bad[0]}] = {flat[bad[0]]} is not in [0, {rows})")


def _scatter_kernel(op_type: str):
    combine = _SCATTER_COMBINE[op_type]

    def kernel(ctx, ref, indices, updates, *, use_locking=False):
        updated = np.array(ctx.read_variable(ref.key, ref.key), copy=True)
        _check_row_indices(indices, updated.shape[0])
        rows = np.asarray(indices).reshape(-1)
        values = np.asarray(updates, dtype=updated.dtype).reshape((rows.size,) +
                                                                 updated.shape[1:])
        for row, value in zip(rows, values, strict=True):  # in order: duplicates combine
            updated[row] = value if combine is None else combine(updated[row], value)
        ctx.write_variable(ref.key, updated)
        return updated
    kernel.__name__ = f"_{op_type}_kernel"
    return kernel


def _scatter_nd_kernel(op_type: str):
    combine = _SCATTER_ND_COMBINE[op_type]

    def kernel(ctx, ref, indices, updates, *, use_locking=True):
        updated = np.array(ctx.read_variable(ref.key, ref.key), copy=True)
        depth = indices.shape[-1]
        points = np.asarray(indices).reshape(-1, depth)
        values = np.asarray(updates, dtype=updated.dtype).reshape(
            (points.shape[0],) + updated.shape[depth:])
        for i, (point, value) in enumerate(zip(points, values, strict=True)):
            if any(not 0 <= p < n for p, n in zip(point, updated.shape, strict=False)):
                raise errors.InvalidArgumentError(
                    None, None, f"indices[{i}] = [{', '.join(str(int(p)) for p in point)}] "
                    f"does not index into shape [{','.join(str(n) for n in updated.shape)}]")
            at = tuple(point)
            updated[at] = value if combine is None else combine(updated[at], value)
        ctx.write_variable(ref.key, updated)
        return updated
    kernel.__name__ = f"_{op_type}_kernel"
    return kernel


def _check_scatter_types(op_type: str, ref: Tensor, indices: Tensor, updates: Tensor) -> None:
    if indices.dtype not in (dtypes.int32, dtypes.int64):
        raise TypeError(f"Value passed to parameter 'indices' has DataType "
                        f"{indices.dtype.name} not in list of allowed values: int32, int64")
    if updates.dtype is not ref.dtype:
        raise TypeError(f"Input 'updates' of '{op_type}' Op has type {updates.dtype.name} that "
                        f"does not match type {ref.dtype.name} of argument 'ref'.")


def _infer_scatter(op_type: str):
    def infer(inputs, attrs):
        ref, indices, updates = inputs
        _check_scatter_types(op_type, ref, indices, updates)
        expected = indices.shape.concatenate(ref.shape[1:]) if ref.shape.ndims else \
            TensorShape(None)
        if not expected.is_compatible_with(updates.shape):
            raise ValueError(f"Shapes of updates and indices + ref.shape[1:] must match for "
                             f"'{op_type}': updates has shape {updates.shape}, indices "
                             f"{indices.shape} and ref {ref.shape} need {expected}.")
        return [(ref.dtype, ref.shape)]
    return infer


def _infer_scatter_nd(op_type: str):
    def infer(inputs, attrs):
        ref, indices, updates = inputs
        _check_scatter_types(op_type, ref, indices, updates)
        dims, ref_dims = indices.shape.as_tuple(), ref.shape.as_tuple()
        if dims is not None and ref_dims is not None and dims and dims[-1] is not None:
            expected = TensorShape(dims[:-1] + ref_dims[dims[-1]:])
            if not expected.is_compatible_with(updates.shape):
                raise ValueError(f"Shapes of updates and indices must match for '{op_type}': "
                                 f"updates has shape {updates.shape}, but indices "
                                 f"{indices.shape} into ref {ref.shape} need {expected}.")
        return [(ref.dtype, ref.shape)]
    return infer


define_op("Assign", infer=_infer_assign, kernel=_assign_kernel, stateful=True,
          needs_context=True)
define_op("AssignAdd", infer=_infer_update, kernel=_update_kernel(+1), stateful=True,
          needs_context=True)
define_op("AssignSub", infer=_infer_update, kernel=_update_kernel(-1), stateful=True,
          needs_context=True)
for _op_type in _SCATTER_COMBINE:
    define_op(_op_type, infer=_infer_scatter(_op_type), kernel=_scatter_kernel(_op_type),
              stateful=True, needs_context=True)
for _op_type in _SCATTER_ND_COMBINE:
    define_op(_op_type, infer=_infer_scatter_nd(_op_type), kernel=_scatter_nd_kernel(_op_type),
              stateful=True, needs_context=True)
define_op("IsVariableInitialized", infer=lambda inputs, attrs: [(dtypes.bool, TensorShape([]))],
          kernel=lambda ctx, ref: np.asarray(ctx.is_initialized(ref.key)), stateful=True,
          needs_context=True)
for _op_type in ("Assign", "AssignAdd", "AssignSub", "IsVariableInitialized"):
    NotDifferentiable(_op_type)


def _no_scatter_gradient(op, *grads):
    """TF1 defines no gradient for in-place scatters; asking for one is an error there."""
    raise LookupError(f"No gradient defined for operation'{op.name}' (op type: {op.type}). "
                      "In general every operation must have an associated "
                      "`@tf.RegisterGradient` for correct autodiff, which this op is lacking.")


for _op_type in (*_SCATTER_COMBINE, *_SCATTER_ND_COMBINE):
    RegisterGradient(_op_type)(_no_scatter_gradient)


class Variable:
    """A mutable tensor kept by each Session (TF1 ``tf.Variable``, reference semantics).

    Use it like a tensor (it converts to its current value, ``v/read``); update it with
    ``assign``/``assign_add``/``assign_sub``; initialise it by running ``initializer``.
    """

    def __init__(self, initial_value=None, trainable: Optional[bool] = None, collections=None,
                 validate_shape: bool = True, caching_device=None, name: Optional[str] = None,
                 variable_def=None, dtype=None, expected_shape=None, import_scope=None,
                 constraint=None, use_resource=None, synchronization=None, aggregation=None,
                 shape=None):
        if initial_value is None:
            raise ValueError("initial_value must be specified.")
        if collections is not None and not isinstance(collections, (list, tuple, set)):
            raise ValueError(f"collections argument to Variable constructor must be a list, "
                             f"tuple, or set. Got {collections} of type {type(collections)}")
        trainable = True if trainable is None else trainable
        bodies = _enclosing_bodies()
        graph, outer_scope = _lifted_scope(bodies)
        lifted = bool(bodies)
        with graph.as_default(), graph.atomic(), _lifted(graph, lifted, outer_scope), \
                graph.name_scope(name or "Variable") as scope:
            if callable(initial_value):
                # TF1 places a callable initializer's ops on no device (a colocation
                # scope still applies): they run once, wherever the placer likes.
                with graph.name_scope("Initializer"), graph.device(None):
                    initial_value = initial_value()
            value = convert_to_tensor(initial_value, dtype=dtype, name="initial_value")
            if isinstance(value, IndexedSlices):
                value = convert_to_tensor(value)
            if value.graph in bodies:
                raise ValueError(f"Initializer for variable {scope} is from inside a "
                                 "control-flow construct, such as a loop or conditional. When "
                                 "creating a variable inside a loop or conditional, use a "
                                 "lambda as the initializer.")
            static = as_shape(shape) if shape is not None else \
                (value.shape if validate_shape else TensorShape(None))
            if validate_shape and not static.is_fully_defined():
                raise ValueError(f"initial_value must have a shape specified: {value}")
            ref_op = graph.create_op("VariableV2", (), {"dtype": value.dtype, "shape": static,
                                                        "shared_name": "", "container": ""},
                                     name=scope)
            ref_op.set_attr("shared_name", ref_op.name)
            self._ref = ref_op.outputs[0]
            self._initial_value = value
            with graph.colocate_with(ref_op):
                self._initializer_op = graph.create_op(
                    "Assign", (self._ref, value), {"validate_shape": validate_shape,
                                                   "use_locking": True}, name="Assign")
                self._snapshot = graph.create_op("ReadVariableOp", (self._ref,), {},
                                                 name="read").outputs[0]
            self._trainable = trainable
            self._constraint = constraint
            if collections is None:
                collections = [GraphKeys.GLOBAL_VARIABLES]
            collections = list(collections)
            if trainable and GraphKeys.TRAINABLE_VARIABLES not in collections:
                collections.append(GraphKeys.TRAINABLE_VARIABLES)
            graph.add_to_collections(collections, self)

    @classmethod
    def from_ops(cls, variable_op, trainable: bool = True) -> "Variable":
        """The Variable object of an existing ``VariableV2`` op (e.g. of a loaded graph).

        Finds its ``<name>/Assign`` initializer and ``<name>/read`` snapshot by name.
        """
        if getattr(variable_op, "type", None) != "VariableV2":
            raise ValueError(f"Variable.from_ops needs a VariableV2 op, got {variable_op!r}")
        graph = variable_op.graph
        try:
            initializer = graph.get_operation_by_name(f"{variable_op.name}/Assign")
            snapshot = graph.get_operation_by_name(f"{variable_op.name}/read").outputs[0]
        except KeyError as err:
            raise ValueError(f"Variable op '{variable_op.name}' lacks its initializer or "
                             f"read op: {err.args[0]}") from None
        variable = cls.__new__(cls)
        variable._ref = variable_op.outputs[0]
        variable._initializer_op = initializer
        variable._initial_value = initializer.inputs[1]
        variable._snapshot = snapshot
        variable._trainable = trainable
        variable._constraint = None
        return variable

    # --------------------------------------------------------------- properties
    @property
    def name(self) -> str:
        return self._ref.name

    @property
    def op(self):
        return self._ref.op

    @property
    def dtype(self) -> dtypes.DType:
        return self._ref.dtype

    @property
    def shape(self) -> TensorShape:
        return self._ref.shape

    def get_shape(self) -> TensorShape:
        return self._ref.shape

    @property
    def graph(self):
        return self._ref.graph

    @property
    def device(self) -> str:
        return self._ref.device

    @property
    def trainable(self) -> bool:
        return self._trainable

    @property
    def initializer(self):
        return self._initializer_op

    @property
    def initial_value(self) -> Tensor:
        return self._initial_value

    def set_initializer(self, initializer, initial_value: Tensor) -> None:
        """Makes ``initializer`` (an op assigning ``initial_value`` to this variable) its
        initializer: the hook ``train.init_from_checkpoint`` uses."""
        self._initializer_op = initializer
        self._initial_value = initial_value

    @property
    def constraint(self):
        return self._constraint

    def ref(self) -> Tensor:
        """The reference tensor: differentiate with respect to this, assign through it."""
        return self._ref

    def value(self) -> Tensor:
        """The snapshot tensor ``v/read`` holding the current value."""
        return self._snapshot

    def read_value(self) -> Tensor:
        """A fresh read of the variable (ordered by the control dependencies in force)."""
        graph = self.graph
        return graph.create_op("ReadVariableOp", (self._ref,), {}, name="read").outputs[0]

    def initialized_value(self) -> Tensor:
        with self.graph.control_dependencies([self._initializer_op]):
            return array.identity(self._initial_value)

    def _as_graph_element(self) -> Tensor:
        return self._snapshot

    # ------------------------------------------------------------------ updates
    def assign(self, value, use_locking=None, name=None, read_value: bool = True):
        return _apply_update("Assign", self, value, name, read_value,
                             validate_shape=True, use_locking=bool(use_locking))

    def assign_add(self, delta, use_locking=None, name=None, read_value: bool = True):
        return _apply_update("AssignAdd", self, delta, name, read_value,
                             use_locking=bool(use_locking))

    def assign_sub(self, delta, use_locking=None, name=None, read_value: bool = True):
        return _apply_update("AssignSub", self, delta, name, read_value,
                             use_locking=bool(use_locking))

    def scatter_add(self, sparse_delta: IndexedSlices, use_locking=False, name=None):
        return _apply_scatter("ScatterAdd", self, sparse_delta, use_locking, name)

    def scatter_sub(self, sparse_delta: IndexedSlices, use_locking=False, name=None):
        return _apply_scatter("ScatterSub", self, sparse_delta, use_locking, name)

    def scatter_mul(self, sparse_delta: IndexedSlices, use_locking=False, name=None):
        return _apply_scatter("ScatterMul", self, sparse_delta, use_locking, name)

    def scatter_div(self, sparse_delta: IndexedSlices, use_locking=False, name=None):
        return _apply_scatter("ScatterDiv", self, sparse_delta, use_locking, name)

    def scatter_update(self, sparse_delta: IndexedSlices, use_locking=False, name=None):
        return _apply_scatter("ScatterUpdate", self, sparse_delta, use_locking, name)

    def scatter_nd_update(self, indices, updates, name=None):
        return scatter_nd_update(self, indices, updates, use_locking=True, name=name)

    def load(self, value, session=None) -> None:
        """Writes ``value`` into the variable in ``session`` (default session if None)."""
        session = session or get_default_session()
        if session is None:
            raise ValueError("Either session argument should be provided or default session "
                             "should be established")
        session.run(self._initializer_op, {self._initial_value: value})

    def eval(self, session=None):
        return self._snapshot.eval(session=session)

    # ------------------------------------------------------ tensor-like behaviour
    def __repr__(self) -> str:
        # as TF1 prints a (reference) variable, whose dtype is the ``_ref`` one
        return f"<tf.Variable '{self.name}' shape={self.shape} dtype={self.dtype.name}_ref>"

    def __iter__(self):
        raise TypeError(f"Variable {self.name} is not iterable.")

    def __bool__(self):
        return self._snapshot.__bool__()

    __hash__ = object.__hash__


def _enclosing_bodies() -> list:
    """The function graphs (loop bodies, branches) being built, innermost first."""
    bodies = []
    graph = get_default_graph()
    while graph.outer_graph is not None:
        bodies.append(graph)
        graph = graph.outer_graph
    return bodies


def _lifted_scope(bodies: list) -> tuple:
    """The graph a new variable goes in, and the name scope to create it under there.

    As TF1 does, a variable made inside a loop body, branch or function is lifted out
    to the outermost graph, named under the scopes in force (``while/inner``).
    """
    graph = bodies[-1].outer_graph if bodies else get_default_graph()
    scopes = [graph.get_name_scope()] + [body.get_name_scope() for body in reversed(bodies)]
    return graph, "/".join(s for s in scopes if s)


@contextlib.contextmanager
def _lifted(graph, lifted: bool, outer_scope: str):
    """For a lifted variable: no control dependencies, and the scopes of the body."""
    if not lifted:
        yield
        return
    with graph.control_dependencies(None), \
            graph.name_scope(outer_scope + "/" if outer_scope else None):
        yield


def _delegate_operator(name: str):
    def method(self, *args):
        return getattr(self._snapshot, name)(*args)
    method.__name__ = name
    return method


for _name in ("__add__", "__radd__", "__sub__", "__rsub__", "__mul__", "__rmul__",
              "__truediv__", "__rtruediv__", "__floordiv__", "__rfloordiv__", "__mod__",
              "__rmod__", "__pow__", "__rpow__", "__matmul__", "__rmatmul__", "__neg__",
              "__abs__", "__lt__", "__le__", "__gt__", "__ge__", "__getitem__", "__and__",
              "__or__", "__invert__"):
    setattr(Variable, _name, _delegate_operator(_name))


def _variable_to_tensor(v: Variable, dtype=None, name=None, as_ref: bool = False) -> Tensor:
    if as_ref:
        return v._ref
    graph = get_default_graph()
    if graph is not v._ref.graph and graph in _enclosing_bodies():
        # In a loop body or branch the variable is read there, each time it runs (TF1's
        # reference semantics), not once before the loop.
        return graph.create_op("ReadVariableOp", (v._ref,), {}, name="read").outputs[0]
    return v._snapshot


register_tensor_conversion_function(Variable, _variable_to_tensor)


def _ref_of(ref) -> Tensor:
    if isinstance(ref, Variable):
        return ref._ref
    if isinstance(ref, Tensor) and ref.op.type == "VariableV2":
        return ref
    raise TypeError(f"Expected a gf.Variable (or its reference tensor), got {ref!r}")


def _update_graph(target: Tensor):
    """Where an update of ``target`` goes: the default graph when it is a function body
    inside the variable's graph (the update then runs with the body, each iteration of
    a loop), else the variable's own graph."""
    graph = get_default_graph()
    enclosing = graph
    while enclosing is not None:
        if enclosing is target.graph:
            return graph
        enclosing = enclosing.outer_graph
    return target.graph


def _apply_update(op_type: str, ref, value, name, read_value: bool, **attrs):
    target = _ref_of(ref)
    graph = _update_graph(target)
    with graph.as_default():
        if isinstance(value, Tensor):
            value_t = convert_to_tensor(value, dtype=target.dtype)
            op = graph.create_op(op_type, (target, value_t), attrs, name=name or op_type)
        else:
            # a Python value is the Const ``<op>/value``, in the op's scope as TF1's
            with graph.atomic(), graph.name_scope(name or op_type) as scope:
                value_t = convert_to_tensor(value, dtype=target.dtype, name="value")
                op = graph.create_op(op_type, (target, value_t), attrs, name=scope)
    return op.outputs[0] if read_value else op


def _apply_scatter(op_type: str, ref, sparse_delta: IndexedSlices, use_locking, name):
    if not isinstance(sparse_delta, IndexedSlices):
        raise TypeError(f"sparse_delta must be an IndexedSlices, got {sparse_delta!r}")
    return _scatter(op_type, ref, sparse_delta.indices, sparse_delta.values, use_locking, name)


def _scatter(op_type: str, ref, indices, updates, use_locking, name) -> Tensor:
    """Adds an in-place scatter op on variable ``ref``; returns the updated value."""
    target = _ref_of(ref)
    graph = _update_graph(target)
    with graph.as_default(), graph.atomic():
        indices = convert_to_tensor(indices, name="indices")
        updates = convert_to_tensor(updates, preferred_dtype=target.dtype, name="updates")
        op = graph.create_op(op_type, (target, indices, updates),
                             {"use_locking": bool(use_locking)}, name=name or op_type)
    return op.outputs[0]


def scatter_update(ref, indices, updates, use_locking: bool = True, name=None) -> Tensor:
    """Sets rows ``indices`` of variable ``ref`` to ``updates`` (the last duplicate wins)."""
    return _scatter("ScatterUpdate", ref, indices, updates, use_locking, name)


def scatter_add(ref, indices, updates, use_locking: bool = False, name=None) -> Tensor:
    """Adds ``updates`` into rows ``indices`` of variable ``ref`` (duplicates add up)."""
    return _scatter("ScatterAdd", ref, indices, updates, use_locking, name)


def scatter_sub(ref, indices, updates, use_locking: bool = False, name=None) -> Tensor:
    """Subtracts ``updates`` from rows ``indices`` of variable ``ref``."""
    return _scatter("ScatterSub", ref, indices, updates, use_locking, name)


def scatter_mul(ref, indices, updates, use_locking: bool = False, name=None) -> Tensor:
    """Multiplies rows ``indices`` of variable ``ref`` by ``updates``."""
    return _scatter("ScatterMul", ref, indices, updates, use_locking, name)


def scatter_div(ref, indices, updates, use_locking: bool = False, name=None) -> Tensor:
    """Divides rows ``indices`` of variable ``ref`` by ``updates`` (integers truncate)."""
    return _scatter("ScatterDiv", ref, indices, updates, use_locking, name)


def scatter_nd_update(ref, indices, updates, use_locking: bool = True, name=None) -> Tensor:
    """Sets the elements or slices of variable ``ref`` at N-d ``indices`` to ``updates``."""
    return _scatter("ScatterNdUpdate", ref, indices, updates, use_locking, name)


def scatter_max(ref, indices, updates, use_locking: bool = False, name=None) -> Tensor:
    """Rows ``indices`` of variable ``ref`` become their maximum with ``updates``."""
    return _scatter("ScatterMax", ref, indices, updates, use_locking, name)


def scatter_min(ref, indices, updates, use_locking: bool = False, name=None) -> Tensor:
    """Rows ``indices`` of variable ``ref`` become their minimum with ``updates``."""
    return _scatter("ScatterMin", ref, indices, updates, use_locking, name)


def scatter_nd_add(ref, indices, updates, use_locking: bool = False, name=None) -> Tensor:
    """Adds ``updates`` into variable ``ref`` at N-d ``indices`` (repeats add up)."""
    return _scatter("ScatterNdAdd", ref, indices, updates, use_locking, name)


def scatter_nd_sub(ref, indices, updates, use_locking: bool = False, name=None) -> Tensor:
    """Subtracts ``updates`` from variable ``ref`` at N-d ``indices``."""
    return _scatter("ScatterNdSub", ref, indices, updates, use_locking, name)


def assign(ref, value, validate_shape=None, use_locking=None, name=None) -> Tensor:
    return _apply_update("Assign", ref, value, name, True,
                         validate_shape=True if validate_shape is None else validate_shape,
                         use_locking=bool(use_locking))


def assign_add(ref, value, use_locking=None, name=None) -> Tensor:
    return _apply_update("AssignAdd", ref, value, name, True, use_locking=bool(use_locking))


def assign_sub(ref, value, use_locking=None, name=None) -> Tensor:
    return _apply_update("AssignSub", ref, value, name, True, use_locking=bool(use_locking))


def global_variables(scope: Optional[str] = None) -> list:
    return get_default_graph().get_collection(GraphKeys.GLOBAL_VARIABLES, scope)


def trainable_variables(scope: Optional[str] = None) -> list:
    return get_default_graph().get_collection(GraphKeys.TRAINABLE_VARIABLES, scope)


def local_variables(scope: Optional[str] = None) -> list:
    return get_default_graph().get_collection(GraphKeys.LOCAL_VARIABLES, scope)


def moving_average_variables(scope: Optional[str] = None) -> list:
    """The variables ``ExponentialMovingAverage.apply`` averages (TF1's collection)."""
    return get_default_graph().get_collection(GraphKeys.MOVING_AVERAGE_VARIABLES, scope)


def model_variables(scope: Optional[str] = None) -> list:
    """The variables of the MODEL_VARIABLES collection."""
    return get_default_graph().get_collection(GraphKeys.MODEL_VARIABLES, scope)


def variables_initializer(var_list, name: str = "init"):
    """One op that initialises every variable in ``var_list``."""
    return control.group(*[v.initializer for v in var_list], name=name)


def global_variables_initializer():
    return variables_initializer(global_variables(), name="init")


def local_variables_initializer():
    return variables_initializer(local_variables(), name="init")


initialize_all_variables = global_variables_initializer


def is_variable_initialized(variable) -> Tensor:
    target = _ref_of(variable)
    return target.graph.create_op("IsVariableInitialized", (target,), {},
                                  name="IsVariableInitialized").outputs[0]


def report_uninitialized_variables(var_list=None, name: str = "report_uninitialized_variables"):
    """A string tensor naming the variables not yet initialised in the running session."""
    variables = global_variables() if var_list is None else list(var_list)
    graph = get_default_graph()
    with graph.atomic(), graph.name_scope(name):
        # bytes, as TF's string tensors hold: TF1 code decodes them (`name.decode()`)
        names = constant(np.asarray([v.op.name.encode() for v in variables], dtype=object),
                         dtype=dtypes.string)
        if not variables:
            return names
        flags = array.stack([math.logical_not(is_variable_initialized(v)) for v in variables])
        return array.boolean_mask(names, flags, name="mask")
