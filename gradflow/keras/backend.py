"""``tf.keras.backend`` in TF1 graph mode: keras's session, learning phase, layer-name
counters, and the tensor helpers programs call as ``K.<name>``.

Keras keeps one session (``get_session``): the default session when one is open, else a
session of its own on the default graph, made on first use. Each time it is handed out,
the graph's global variables not yet initialised are initialised, as tf_keras does in
graph mode, so ``Session`` code that mixes keras layers and raw ops needs no extra
initialiser run. Layer-name counters (``dense``, ``dense_1``...) and the learning-phase
placeholder belong to a graph; ``clear_session`` resets the default graph and all of it.
"""
from __future__ import annotations

import weakref
from typing import Any, Callable, Optional, Sequence

import numpy as np

from gradflow.framework import dtypes
from gradflow.framework.constant import constant as _constant, convert_to_tensor
from gradflow.framework.default_session import get_default_session
from gradflow.framework.graph import (GraphKeys, Tensor, get_default_graph,
                                      name_scope as _graph_name_scope, reset_default_graph)
from gradflow.framework.tensor_shape import TensorShape
from gradflow.ops import array
from gradflow.ops import math as math_ops
from gradflow.ops import nn
from gradflow.ops.control import group
from gradflow.ops.functional import cond
from gradflow.ops import random as random_ops
from gradflow.ops.state import (Variable, assign, assign_add, assign_sub,
                                is_variable_initialized)
from gradflow.autodiff.gradients import gradients as _gradients
from gradflow.runtime.session import Session

__all__ = [
    "get_session", "set_session", "clear_session", "learning_phase", "set_learning_phase",
    "floatx", "set_floatx", "epsilon", "set_epsilon", "image_data_format",
    "set_image_data_format", "get_uid", "reset_uids", "placeholder", "variable", "constant",
    "get_value", "set_value", "batch_get_value", "batch_set_value", "eval", "int_shape",
    "shape", "ndim", "dtype", "cast", "cast_to_floatx", "dot", "sum", "mean", "max", "min",
    "square", "sqrt", "exp", "log", "abs", "clip", "concatenate", "reshape", "expand_dims",
    "squeeze", "transpose", "flatten", "batch_flatten", "relu", "sigmoid", "softmax", "tanh",
    "zeros", "ones", "zeros_like", "ones_like", "stop_gradient", "gradients", "argmax",
    "equal", "function", "in_train_phase", "is_keras_tensor", "name_scope",
    "categorical_crossentropy", "sparse_categorical_crossentropy", "binary_crossentropy",
    "pow", "maximum", "minimum", "sign", "round", "softplus", "softsign", "elu",
    "not_equal", "greater", "greater_equal", "less", "less_equal", "prod", "std", "var",
    "any", "all", "permute_dimensions", "tile", "gather", "stack", "cumsum",
    "l2_normalize", "one_hot", "arange", "switch", "repeat_elements", "bias_add",
    "random_normal", "random_uniform", "dropout", "update", "update_add", "update_sub",
    "count_params",
]

_FLOATX = "float32"
_EPSILON = 1e-7
_IMAGE_DATA_FORMAT = "channels_last"
_SESSION: list = [None]  # keras's own session, when no default session is open


class _GraphState:
    """What keras keeps for one graph: name counters, the learning phase, which
    variables it has initialised, and the layer history of symbolic tensors."""

    def __init__(self):
        self.uids: dict = {}
        self.learning_phase: Optional[Tensor] = None
        self.fixed_phase: Optional[int] = None
        self.initialized: set = set()
        self.history: dict = {}  # id(tensor) -> (tensor, layer, node index, tensor index)
        self.pending_values: dict = {}  # id(variable) -> (variable, value from `weights=`)


_STATES: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def graph_state(graph=None) -> _GraphState:
    """Keras's records for ``graph`` (the default graph if None)."""
    graph = graph if graph is not None else get_default_graph()
    state = _STATES.get(graph)
    if state is None:
        state = _STATES[graph] = _GraphState()
    return state


# ------------------------------------------------------------------ configuration
def floatx() -> str:
    """The default float type of keras weights and inputs: 'float32'."""
    return _FLOATX


def set_floatx(value: str) -> None:
    global _FLOATX
    if value not in ("float16", "float32", "float64"):
        raise ValueError(f"Unknown floatx type: {value}")
    _FLOATX = str(value)


def epsilon() -> float:
    """The fuzz factor keras adds to denominators and logs: 1e-7."""
    return _EPSILON


def set_epsilon(value: float) -> None:
    global _EPSILON
    _EPSILON = float(value)


def image_data_format() -> str:
    return _IMAGE_DATA_FORMAT


def set_image_data_format(data_format: str) -> None:
    global _IMAGE_DATA_FORMAT
    if data_format not in ("channels_last", "channels_first"):
        raise ValueError(f"Unknown data_format: {data_format}")
    _IMAGE_DATA_FORMAT = data_format


def get_uid(prefix: str = "") -> int:
    """1, 2, 3... for each call with ``prefix`` in the default graph."""
    uids = graph_state().uids
    uids[prefix] = uids.get(prefix, 0) + 1
    return uids[prefix]


def reset_uids() -> None:
    graph_state().uids.clear()


def unique_object_name(base: str, zero_based: bool = True) -> str:
    """``base``, ``base_1``, ``base_2``... unique per graph (keras's layer names); with
    ``zero_based`` False the first is ``base_1`` (``input_1``)."""
    number = get_uid(base)
    if zero_based:
        number -= 1
    return base if number == 0 else f"{base}_{number}"


# --------------------------------------------------------------------- sessions
def get_session(op_input_list: Sequence = ()) -> Any:
    """The session keras runs in: the default session if one is open, else keras's
    own on the default graph; uninitialised global variables are initialised first."""
    session = get_default_session()
    if session is None:
        session = _SESSION[0]
        if session is None or session.graph is not get_default_graph():
            session = _SESSION[0] = Session(graph=get_default_graph())
    initialize_variables(session)
    return session


def initialize_variables(session) -> None:
    """Initialises the global variables of ``session``'s graph keras has not seen yet
    and the session does not hold (TF1 keras's lazy initialisation)."""
    graph = session.graph
    state = graph_state(graph)
    fresh = [v for v in graph.get_collection(GraphKeys.GLOBAL_VARIABLES)
             if isinstance(v, Variable) and id(v) not in state.initialized]
    if not fresh:
        return
    with graph.as_default():
        flags = session.run([is_variable_initialized(v) for v in fresh])
    pending = [v for v, done in zip(fresh, flags, strict=True) if not done]
    if pending:
        given = {v.initial_value: state.pending_values.pop(id(v))[1] for v in pending
                 if id(v) in state.pending_values}
        session.run([v.initializer for v in pending], given)
    state.initialized.update(id(v) for v in fresh)


def set_session(session) -> None:
    """Makes ``session`` keras's session."""
    _SESSION[0] = session


def clear_session() -> None:
    """Resets the default graph, keras's session, name counters and learning phase."""
    if _SESSION[0] is not None:
        _SESSION[0].close()
    _SESSION[0] = None
    reset_default_graph()


# ---------------------------------------------------------------- learning phase
def learning_phase():
    """0 or 1 when fixed by ``set_learning_phase``, else the graph's bool placeholder
    ``keras_learning_phase`` (False unless fed; ``fit`` feeds True)."""
    state = graph_state()
    if state.fixed_phase is not None:
        return state.fixed_phase
    if state.learning_phase is None:
        graph = get_default_graph()
        with graph.as_default(), graph.name_scope(None), graph.control_dependencies(None):
            state.learning_phase = array.placeholder_with_default(
                False, shape=(), name="keras_learning_phase")
    return state.learning_phase


def learning_phase_placeholder() -> Optional[Tensor]:
    """The learning-phase placeholder if it exists (what ``fit`` feeds), else None."""
    state = graph_state()
    return state.learning_phase if state.fixed_phase is None else None


def set_learning_phase(value: int) -> None:
    """Fixes the learning phase to 0 (test) or 1 (train) for layers built from now on."""
    if value not in (0, 1):
        raise ValueError("Expected learning phase to be 0 or 1.")
    graph_state().fixed_phase = int(value)


def in_train_phase(x, alt, training=None):
    """``x`` while training, ``alt`` otherwise (``training`` defaults to the learning
    phase; a tensor selects with ``cond``)."""
    if training is None:
        training = learning_phase()
    if isinstance(training, (bool, int, np.integer, np.bool_)):
        chosen = x if training else alt
        return chosen() if callable(chosen) else chosen
    from_x = x if callable(x) else (lambda: x)
    from_alt = alt if callable(alt) else (lambda: alt)
    return cond(training, from_x, from_alt)


# ------------------------------------------------------------------- variables
def placeholder(shape=None, ndim: Optional[int] = None, dtype=None, sparse: bool = False,
                name: Optional[str] = None) -> Tensor:
    """A placeholder of ``shape`` (or of ``ndim`` unknown dimensions)."""
    if sparse:
        raise ValueError("placeholder: sparse=True is not supported")
    if shape is None and ndim is not None:
        shape = (None,) * ndim
    return array.placeholder(dtypes.as_dtype(dtype or floatx()), shape=shape, name=name)


def variable(value, dtype=None, name: Optional[str] = None, constraint=None) -> Variable:
    """A variable holding ``value`` (keras initialises it on ``get_session``)."""
    value = np.asarray(value, dtype=dtypes.as_dtype(dtype or floatx()).as_numpy_dtype)
    return Variable(value, name=name or "Variable", constraint=constraint)


def constant(value, dtype=None, shape=None, name: Optional[str] = None) -> Tensor:
    return _constant(value, dtype=dtypes.as_dtype(dtype or floatx()), shape=shape, name=name)


def get_value(x):
    """``x``'s value in keras's session (a NumPy array)."""
    return get_session().run(x)


def batch_get_value(tensors: Sequence) -> list:
    return get_session().run(list(tensors)) if tensors else []


def set_value(x: Variable, value) -> None:
    batch_set_value([(x, value)])


def batch_set_value(tuples: Sequence) -> None:
    """Assigns each (variable, value) pair in keras's session with one run."""
    if not tuples:
        return
    session = get_session()
    feeds = {}
    for variable_, value in tuples:
        value = np.asarray(value, dtype=variable_.dtype.base_dtype.as_numpy_dtype)
        if not variable_.shape.is_compatible_with(TensorShape(value.shape)):
            raise ValueError(f"Cannot assign value to variable ' {variable_.name}': Shape "
                             f"mismatch.The variable shape {variable_.shape}, and the "
                             f"assigned value shape {value.shape} are incompatible.")
        feeds[variable_.initial_value] = value
    session.run([v.initializer for v, _ in tuples], feeds)


def eval(x):
    return get_value(x)


def int_shape(x) -> Optional[tuple]:
    """The static shape as a tuple (None for unknown dimensions)."""
    shape_ = x.shape if hasattr(x, "shape") else convert_to_tensor(x).shape
    if not isinstance(shape_, TensorShape):
        return tuple(shape_)
    return None if shape_.ndims is None else tuple(shape_.as_list())


def shape(x) -> Tensor:
    return array.shape(x)


def ndim(x) -> Optional[int]:
    return convert_to_tensor(x).shape.ndims


def dtype(x) -> str:
    return convert_to_tensor(x).dtype.base_dtype.name


def cast(x, dtype_) -> Tensor:
    return math_ops.cast(x, dtypes.as_dtype(dtype_))


def cast_to_floatx(x) -> np.ndarray:
    return np.asarray(x, dtype=floatx())


def zeros(shape_, dtype=None, name: Optional[str] = None) -> Variable:
    return variable(np.zeros(shape_), dtype=dtype, name=name)


def ones(shape_, dtype=None, name: Optional[str] = None) -> Variable:
    return variable(np.ones(shape_), dtype=dtype, name=name)


def zeros_like(x, dtype=None, name: Optional[str] = None) -> Tensor:
    return array.zeros_like(x, dtype=dtype, name=name)


def ones_like(x, dtype=None, name: Optional[str] = None) -> Tensor:
    return array.ones_like(x, dtype=dtype, name=name)


# ---------------------------------------------------------------- tensor helpers
def dot(x, y) -> Tensor:
    """Matrix product of the last axis of ``x`` with the first of ``y`` (2-D: matmul)."""
    x, y = convert_to_tensor(x), convert_to_tensor(y)
    if x.shape.ndims == 2 and y.shape.ndims == 2:
        return math_ops.matmul(x, y)
    from_x = array.reshape(x, [-1, int_shape(x)[-1]])
    product = math_ops.matmul(from_x, y)
    return array.reshape(product, [-1 if d is None else d for d in int_shape(x)[:-1]] +
                         [int_shape(y)[-1]])


def _axis_reduction(reduce: Callable):
    def reduction(x, axis=None, keepdims: bool = False) -> Tensor:
        return reduce(x, axis=axis, keepdims=keepdims)
    reduction.__doc__ = f"``{reduce.__name__}`` over ``axis``."
    return reduction


sum = _axis_reduction(math_ops.reduce_sum)
mean = _axis_reduction(math_ops.reduce_mean)
max = _axis_reduction(math_ops.reduce_max)
min = _axis_reduction(math_ops.reduce_min)
square = math_ops.square
sqrt = math_ops.sqrt
exp = math_ops.exp
log = math_ops.log
abs = math_ops.abs
relu = nn.relu
sigmoid = math_ops.sigmoid
tanh = math_ops.tanh
stop_gradient = array.stop_gradient
transpose = array.transpose
reshape = array.reshape
squeeze = array.squeeze


pow = math_ops.pow
maximum = math_ops.maximum
minimum = math_ops.minimum
sign = math_ops.sign
round = math_ops.round
softplus = math_ops.softplus
softsign = math_ops.softsign
elu = nn.elu
not_equal = math_ops.not_equal
greater = math_ops.greater
greater_equal = math_ops.greater_equal
less = math_ops.less
less_equal = math_ops.less_equal
prod = _axis_reduction(math_ops.reduce_prod)
std = _axis_reduction(math_ops.reduce_std)
var = _axis_reduction(math_ops.reduce_variance)
any = _axis_reduction(math_ops.reduce_any)
all = _axis_reduction(math_ops.reduce_all)
permute_dimensions = array.transpose
tile = array.tile
gather = array.gather


def stack(tensors: Sequence, axis: int = 0) -> Tensor:
    return array.stack(list(tensors), axis=axis)


def cumsum(x, axis: int = 0) -> Tensor:
    return math_ops.cumsum(x, axis=axis)


def l2_normalize(x, axis=None) -> Tensor:
    return nn.l2_normalize(x, axis=axis)


def one_hot(indices, num_classes: int) -> Tensor:
    return array.one_hot(indices, depth=num_classes, axis=-1)


def arange(start, stop=None, step=1, dtype: str = "int32") -> Tensor:
    """``start``, ``start + step``... below ``stop`` (``arange(n)`` counts from 0)."""
    if stop is None:
        start, stop = 0, start
    return math_ops.cast(math_ops.range(start, limit=stop, delta=step), dtypes.as_dtype(dtype))


def switch(condition, then_expression, else_expression):
    """``then_expression`` where ``condition`` holds, else ``else_expression`` (a scalar
    condition picks with ``cond``)."""
    condition = convert_to_tensor(condition)
    if condition.shape.ndims == 0:
        pick_then = then_expression if callable(then_expression) else (lambda: then_expression)
        pick_else = else_expression if callable(else_expression) else (lambda: else_expression)
        return cond(condition, pick_then, pick_else)
    return math_ops.where(condition, then_expression, else_expression)


def repeat_elements(x, rep: int, axis: int) -> Tensor:
    """Each slice along ``axis`` repeated ``rep`` times in place."""
    x = convert_to_tensor(x)
    pieces = array.split(x, x.shape.as_list()[axis], axis=axis)
    return array.concat([p for p in pieces for _ in range(rep)], axis)


def bias_add(x, bias, data_format: Optional[str] = None) -> Tensor:
    return nn.bias_add(x, bias, data_format="NCHW" if data_format == "channels_first"
                       else None)


def random_normal(shape_, mean: float = 0.0, stddev: float = 1.0, dtype=None,
                  seed: Optional[int] = None) -> Tensor:
    return random_ops.random_normal(shape_, mean=mean, stddev=stddev,
                                    dtype=dtypes.as_dtype(dtype or floatx()), seed=seed)


def random_uniform(shape_, minval: float = 0.0, maxval: float = 1.0, dtype=None,
                   seed: Optional[int] = None) -> Tensor:
    return random_ops.random_uniform(shape_, minval=minval, maxval=maxval,
                                     dtype=dtypes.as_dtype(dtype or floatx()), seed=seed)


def dropout(x, level: float, noise_shape=None, seed: Optional[int] = None) -> Tensor:
    return nn.dropout(x, rate=level, noise_shape=noise_shape, seed=seed)


def update(x: Variable, new_x) -> Tensor:
    return assign(x, new_x)


def update_add(x: Variable, increment) -> Tensor:
    return assign_add(x, increment)


def update_sub(x: Variable, decrement) -> Tensor:
    return assign_sub(x, decrement)


def count_params(x) -> int:
    return int(np.prod(int_shape(x)))


def softmax(x, axis: int = -1) -> Tensor:
    return nn.softmax(x, axis=axis)


def clip(x, min_value, max_value) -> Tensor:
    return math_ops.clip_by_value(x, min_value, max_value)


def concatenate(tensors: Sequence, axis: int = -1) -> Tensor:
    return array.concat(list(tensors), axis)


def expand_dims(x, axis: int = -1) -> Tensor:
    return array.expand_dims(x, axis)


def flatten(x) -> Tensor:
    return array.reshape(x, [-1])


def batch_flatten(x) -> Tensor:
    """[batch, ...] -> [batch, everything else]."""
    return array.reshape(x, array.stack([array.shape(x)[0], -1]))


def argmax(x, axis: int = -1) -> Tensor:
    return math_ops.argmax(x, axis)


def equal(x, y) -> Tensor:
    return math_ops.equal(x, y)


def gradients(loss, variables: Sequence) -> list:
    return _gradients(loss, list(variables))


def is_keras_tensor(x) -> bool:
    """True for a tensor a keras layer or ``Input`` made."""
    if not isinstance(x, (Tensor, Variable)):
        raise ValueError(f"Unexpectedly found an instance of type `{type(x)}`. Expected a "
                         "symbolic tensor instance.")
    return isinstance(x, Tensor) and id(x) in graph_state(x.graph).history


name_scope = _graph_name_scope


# ------------------------------------------------------------------------- losses
def _logits_of(output: Tensor, op_type: str, from_logits: bool) -> tuple[Tensor, bool]:
    """(logits, True) when ``output`` is made by a softmax or sigmoid op: keras takes
    the loss from the logits (no clipping), else ``output`` unchanged."""
    if not from_logits and output.op.type == op_type:
        return output.op.inputs[0], True
    return output, from_logits


def categorical_crossentropy(target, output, from_logits: bool = False,
                             axis: int = -1) -> Tensor:
    """-sum(target * log(output)) over ``axis``; ``output`` probabilities are rescaled
    to sum to one and clipped to [epsilon, 1 - epsilon], logits go through softmax."""
    target, output = convert_to_tensor(target), convert_to_tensor(output)
    output, from_logits = _logits_of(output, "Softmax", from_logits)
    if from_logits:
        return nn.softmax_cross_entropy_with_logits_v2(labels=target, logits=output, axis=axis)
    output = output / math_ops.reduce_sum(output, axis, keepdims=True)
    eps = _constant(epsilon(), dtype=output.dtype.base_dtype)
    output = math_ops.clip_by_value(output, eps, 1.0 - eps)
    return math_ops.negative(math_ops.reduce_sum(target * math_ops.log(output), axis))


def sparse_categorical_crossentropy(target, output, from_logits: bool = False,
                                    axis: int = -1) -> Tensor:
    """Categorical cross-entropy with integer class ``target``s."""
    target, output = convert_to_tensor(target), convert_to_tensor(output)
    if axis not in (-1, output.shape.ndims - 1 if output.shape.ndims else -1):
        raise ValueError(f"sparse_categorical_crossentropy: axis={axis} is not supported "
                         "(only the last axis)")
    output, from_logits = _logits_of(output, "Softmax", from_logits)
    if not from_logits:
        eps = _constant(epsilon(), dtype=output.dtype.base_dtype)
        output = math_ops.log(math_ops.clip_by_value(output, eps, 1.0 - eps))
    labels = math_ops.cast(target, dtypes.int64)
    if labels.shape.ndims is not None and output.shape.ndims is not None and \
            labels.shape.ndims == output.shape.ndims:
        labels = array.squeeze(labels, [-1])
    return nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=output)


def binary_crossentropy(target, output, from_logits: bool = False) -> Tensor:
    """Elementwise binary cross-entropy; probabilities are clipped to
    [epsilon, 1 - epsilon] (logits go through sigmoid)."""
    target, output = convert_to_tensor(target), convert_to_tensor(output)
    output, from_logits = _logits_of(output, "Sigmoid", from_logits)
    if from_logits:
        return nn.sigmoid_cross_entropy_with_logits(labels=target, logits=output)
    eps = _constant(epsilon(), dtype=output.dtype.base_dtype)
    output = math_ops.clip_by_value(output, eps, 1.0 - eps)
    one = _constant(1.0, dtype=output.dtype.base_dtype)
    return math_ops.negative(target * math_ops.log(output + eps) +
                             (one - target) * math_ops.log(one - output + eps))


# ----------------------------------------------------------------------- function
class GraphFunction:
    """``K.function``: runs ``outputs`` (and ``updates``) in keras's session, feeding
    ``inputs`` from the list of values it is called with."""

    def __init__(self, inputs: Sequence, outputs, updates: Sequence = (),
                 name: Optional[str] = None):
        self.inputs = list(inputs)
        self.outputs = list(outputs) if isinstance(outputs, (list, tuple)) else [outputs]
        self._single = not isinstance(outputs, (list, tuple))
        with get_default_graph().control_dependencies(self.outputs):
            ops = [u.op if isinstance(u, Tensor) else u for u in updates]
            self.updates_op = group(*ops) if ops else None

    def __call__(self, inputs: Sequence):
        values = list(inputs)
        if len(values) != len(self.inputs):
            raise ValueError(f"Function expects {len(self.inputs)} inputs, got {len(values)}")
        feeds = {t: v for t, v in zip(self.inputs, values, strict=True)}
        fetches = self.outputs + ([self.updates_op] if self.updates_op is not None else [])
        results = get_session().run(fetches, feeds)[:len(self.outputs)]
        return results[0] if self._single else results


def function(inputs: Sequence, outputs, updates: Optional[Sequence] = None,
             name: Optional[str] = None, **kwargs: Any) -> GraphFunction:
    """A callable running ``outputs`` for fed ``inputs`` (keras's ``K.function``)."""
    if kwargs:
        raise ValueError(f"function: argument {sorted(kwargs)[0]!r} is not supported")
    return GraphFunction(inputs, outputs, updates or (), name=name)
