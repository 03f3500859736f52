"""``tf.nn.rnn_cell``: TF1's recurrent cells on the ``gradflow.layers`` Layer base.

A cell maps ``(inputs, state)`` to ``(output, new_state)`` for one time step. Its
weights come from the variable store under the cell's scope, made on the first call
(``rnn/basic_lstm_cell/kernel``), so a checkpoint of a TF1 program maps one to one.
Subclass ``RNNCell`` as in TF1: define ``state_size``, ``output_size`` and ``call``
(and ``build`` to make weights with ``add_weight``/``add_variable``).

Gate layouts follow TF1: an LSTM's kernel is ``[input_depth + h_depth, 4 * units]`` with
gates ``i, j, f, o``; a GRU has ``gates`` (r, u; bias starting at 1) and ``candidate``
sub-scopes.
"""
from __future__ import annotations

import collections
from typing import Any, Callable, Optional, Sequence

from gradflow.framework import dtypes
from gradflow.framework.constant import convert_to_tensor
from gradflow.framework.graph import GraphKeys, Tensor, device, get_default_graph, name_scope
from gradflow.framework.tensor_shape import TensorShape, as_shape
from gradflow.layers.base import Layer
from gradflow.ops import array
from gradflow.ops import math as math_ops
from gradflow.ops import nn as nn_ops
from gradflow.ops import random as random_ops
from gradflow.ops.loops import assert_same_structure, map_structure
from gradflow.variables import constant_initializer, variable_scope, zeros_initializer

__all__ = ["RNNCell", "LayerRNNCell", "BasicRNNCell", "BasicLSTMCell", "LSTMCell", "GRUCell",
           "MultiRNNCell", "DropoutWrapper", "ResidualWrapper", "DeviceWrapper",
           "LSTMStateTuple"]

_BIAS = "bias"
_WEIGHTS = "kernel"


class LSTMStateTuple(collections.namedtuple("LSTMStateTuple", ("c", "h"))):
    """An LSTM's state: ``c`` (the memory) and ``h`` (the output)."""

    __slots__ = ()

    @property
    def dtype(self) -> dtypes.DType:
        c, h = self
        if c.dtype != h.dtype:
            raise TypeError(f"Inconsistent dtypes for internal state: {c.dtype} vs "
                            f"{h.dtype}")
        return c.dtype


def _zero_state_tensors(state_size, batch_size, dtype: dtypes.DType):
    """Zeros of shape ``[batch_size] + size`` for each entry of a (nested) state size."""
    static_batch = batch_size if isinstance(batch_size, int) else None

    def zeros_for(size):
        dims = as_shape(size).as_list()
        shape = array.concat([array.reshape(convert_to_tensor(batch_size, dtype=dtypes.int32),
                                            [1]), convert_to_tensor(dims, dtype=dtypes.int32)],
                             0) if static_batch is None else [static_batch] + dims
        # one op named "zeros" per state tensor, as TF1 names them
        zeros = array.fill(shape, convert_to_tensor(0, dtype=dtype), name="zeros")
        zeros.set_shape(TensorShape([static_batch] + dims))
        return zeros

    return map_structure(zeros_for, state_size)


class RNNCell(Layer):
    """The abstract recurrent cell: ``output, new_state = cell(inputs, state)``."""

    def __init__(self, trainable: bool = True, name: Optional[str] = None, dtype=None,
                 **kwargs: Any):
        super().__init__(trainable=trainable, name=name, dtype=dtype, **kwargs)

    def __call__(self, inputs, state, scope=None, *args, **kwargs):
        """Runs the cell for one step; the first call (or ``scope``) fixes its variable
        scope, later calls share its weights."""
        graph = _outermost(get_default_graph())
        before = {id(v) for v in graph.get_collection(GraphKeys.TRAINABLE_VARIABLES)}
        if scope is not None:
            with variable_scope(scope) as opened:
                result = super().__call__(inputs, state, *args, scope=opened, **kwargs)
        else:
            result = super().__call__(inputs, state, *args, **kwargs)
        self._track_new_variables(graph, before)
        return result

    def _track_new_variables(self, graph, before: set) -> None:
        """Lists among the cell's weights the trainable variables its call made with a
        plain ``get_variable`` (as TF1's cells do, through a custom getter)."""
        known = {id(w) for w in self._trainable_weights + self._non_trainable_weights}
        new = [v for v in graph.get_collection(GraphKeys.TRAINABLE_VARIABLES)
               if id(v) not in before and id(v) not in known]
        if new:
            self._trainable_weights.extend(new)
            get_default_graph().on_rollback(
                lambda: [self._trainable_weights.remove(v) for v in new
                         if any(v is w for w in self._trainable_weights)])

    @property
    def state_size(self):
        """The size(s) of the state: an int, a TensorShape, or a nest of them."""
        raise NotImplementedError("Abstract method")

    @property
    def output_size(self):
        """The size of the output: an int or a TensorShape."""
        raise NotImplementedError("Abstract method")

    def call(self, inputs, state):
        raise NotImplementedError("Abstract method")

    def build(self, input_shape) -> None:
        self.built = True

    def get_initial_state(self, inputs=None, batch_size=None, dtype=None):
        """Zeros for ``inputs``' batch (or ``batch_size``) and dtype."""
        if inputs is not None:
            inputs = convert_to_tensor(inputs)
            static = inputs.shape.as_list()[0] if inputs.shape.ndims else None
            batch_size = static if static is not None else array.shape(inputs)[0]
            dtype = inputs.dtype
        if batch_size is None or dtype is None:
            raise ValueError("batch_size and dtype cannot be None while constructing initial "
                             f"state: batch_size={batch_size}, dtype={dtype}")
        return self.zero_state(batch_size, dtype)

    def zero_state(self, batch_size, dtype):
        """A state of zeros for ``batch_size`` sequences (nested as ``state_size``)."""
        graph = get_default_graph()
        with graph.atomic(), name_scope(type(self).__name__ + "ZeroState"):
            return _zero_state_tensors(self.state_size, batch_size,
                                       dtypes.as_dtype(dtype).base_dtype)


LayerRNNCell = RNNCell


def _outermost(graph):
    """The graph variables live in (a loop's body is a function graph inside it)."""
    while graph.outer_graph is not None:
        graph = graph.outer_graph
    return graph


def _check_input_depth(cell: RNNCell, input_shape) -> int:
    shape = as_shape(input_shape)
    depth = shape.as_list()[-1] if shape.ndims else None
    if depth is None:
        raise ValueError(f"Expected inputs.shape[-1] to be known, saw shape: {shape}")
    return int(depth)


def _linear(args: Sequence[Tensor], kernel, bias=None) -> Tensor:
    """``concat(args, 1) @ kernel + bias``."""
    joined = args[0] if len(args) == 1 else array.concat(list(args), 1)
    out = math_ops.matmul(joined, kernel)
    return out if bias is None else nn_ops.bias_add(out, bias)


# ------------------------------------------------------------------ basic cells
class _UnitsCell(RNNCell):
    """A cell whose state and output are both ``num_units`` wide, with an ``activation``
    (tanh by default): the shared part of ``BasicRNNCell`` and ``GRUCell``."""

    def __init__(self, num_units: int, activation: Optional[Callable] = None, reuse=None,
                 name: Optional[str] = None, dtype=None, **kwargs: Any):
        super().__init__(_reuse=reuse, name=name, dtype=dtype, **kwargs)
        self._num_units = int(num_units)
        self._activation = activation or math_ops.tanh

    @property
    def state_size(self) -> int:
        return self._num_units

    @property
    def output_size(self) -> int:
        return self._num_units


class BasicRNNCell(_UnitsCell):
    """``h' = activation(W [x, h] + b)``; output and state are both ``h'``."""

    def build(self, inputs_shape) -> None:
        depth = _check_input_depth(self, inputs_shape)
        self._kernel = self.add_variable(_WEIGHTS, shape=[depth + self._num_units,
                                                          self._num_units])
        self._bias = self.add_variable(_BIAS, shape=[self._num_units],
                                       initializer=zeros_initializer(dtype=self._dtype))
        self.built = True

    def call(self, inputs, state):
        output = self._activation(_linear([inputs, state], self._kernel, self._bias))
        return output, output


class GRUCell(_UnitsCell):
    """Gated recurrent unit (Cho et al. 2014) with TF1's ``gates``/``candidate`` scopes."""

    def __init__(self, num_units: int, activation: Optional[Callable] = None, reuse=None,
                 kernel_initializer=None, bias_initializer=None, name: Optional[str] = None,
                 dtype=None, **kwargs: Any):
        super().__init__(num_units, activation, reuse=reuse, name=name, dtype=dtype, **kwargs)
        self._kernel_initializer = kernel_initializer
        self._bias_initializer = bias_initializer

    def build(self, inputs_shape) -> None:
        depth = _check_input_depth(self, inputs_shape)
        units = self._num_units
        self._gate_kernel = self.add_variable(
            f"gates/{_WEIGHTS}", shape=[depth + units, 2 * units],
            initializer=self._kernel_initializer)
        self._gate_bias = self.add_variable(
            f"gates/{_BIAS}", shape=[2 * units],
            initializer=self._bias_initializer if self._bias_initializer is not None
            else constant_initializer(1.0, dtype=self._dtype))
        self._candidate_kernel = self.add_variable(
            f"candidate/{_WEIGHTS}", shape=[depth + units, units],
            initializer=self._kernel_initializer)
        self._candidate_bias = self.add_variable(
            f"candidate/{_BIAS}", shape=[units],
            initializer=self._bias_initializer if self._bias_initializer is not None
            else zeros_initializer(dtype=self._dtype))
        self.built = True

    def call(self, inputs, state):
        gates = math_ops.sigmoid(_linear([inputs, state], self._gate_kernel, self._gate_bias))
        r, u = array.split(gates, 2, axis=1)
        candidate = self._activation(_linear([inputs, r * state], self._candidate_kernel,
                                             self._candidate_bias))
        new_h = u * state + (1 - u) * candidate
        return new_h, new_h


class BasicLSTMCell(RNNCell):
    """LSTM without peepholes or projection; ``forget_bias`` is added to the forget gate."""

    def __init__(self, num_units: int, forget_bias: float = 1.0, state_is_tuple: bool = True,
                 activation: Optional[Callable] = None, reuse=None, name: Optional[str] = None,
                 dtype=None, **kwargs: Any):
        super().__init__(_reuse=reuse, name=name, dtype=dtype, **kwargs)
        self._num_units = int(num_units)
        self._forget_bias = forget_bias
        self._state_is_tuple = bool(state_is_tuple)
        self._activation = activation or math_ops.tanh

    @property
    def state_size(self):
        units = self._num_units
        return LSTMStateTuple(units, units) if self._state_is_tuple else 2 * units

    @property
    def output_size(self) -> int:
        return self._num_units

    def build(self, inputs_shape) -> None:
        depth = _check_input_depth(self, inputs_shape)
        units = self._num_units
        self._kernel = self.add_variable(_WEIGHTS, shape=[depth + units, 4 * units])
        self._bias = self.add_variable(_BIAS, shape=[4 * units],
                                       initializer=zeros_initializer(dtype=self._dtype))
        self.built = True

    def call(self, inputs, state):
        if self._state_is_tuple:
            c, h = state
        else:
            c, h = array.split(state, 2, axis=1)
        gates = _linear([inputs, h], self._kernel, self._bias)
        i, j, f, o = array.split(gates, 4, axis=1)
        forget_bias = convert_to_tensor(self._forget_bias, dtype=f.dtype)
        new_c = c * math_ops.sigmoid(f + forget_bias) + \
            math_ops.sigmoid(i) * self._activation(j)
        new_h = self._activation(new_c) * math_ops.sigmoid(o)
        new_state = LSTMStateTuple(new_c, new_h) if self._state_is_tuple else \
            array.concat([new_c, new_h], 1)
        return new_h, new_state


class LSTMCell(RNNCell):
    """LSTM with optional peepholes (``use_peepholes``), cell clipping (``cell_clip``) and
    an output projection (``num_proj``, clipped by ``proj_clip``)."""

    def __init__(self, num_units: int, use_peepholes: bool = False,
                 cell_clip: Optional[float] = None, initializer=None,
                 num_proj: Optional[int] = None, proj_clip: Optional[float] = None,
                 num_unit_shards: Optional[int] = None, num_proj_shards: Optional[int] = None,
                 forget_bias: float = 1.0, state_is_tuple: bool = True,
                 activation: Optional[Callable] = None, reuse=None, name: Optional[str] = None,
                 dtype=None, **kwargs: Any):
        for arg, value in (("num_unit_shards", num_unit_shards),
                           ("num_proj_shards", num_proj_shards)):
            if value not in (None, 1):
                raise ValueError(f"LSTMCell: {arg}={value!r} is not supported (sharded "
                                 "weights are not built); use None or 1")
        super().__init__(_reuse=reuse, name=name, dtype=dtype, **kwargs)
        self._num_units = int(num_units)
        self._use_peepholes = bool(use_peepholes)
        self._cell_clip = cell_clip
        self._initializer = initializer
        self._num_proj = None if num_proj is None else int(num_proj)
        self._proj_clip = proj_clip
        self._forget_bias = forget_bias
        self._state_is_tuple = bool(state_is_tuple)
        self._activation = activation or math_ops.tanh

    @property
    def state_size(self):
        h = self._num_proj or self._num_units
        return LSTMStateTuple(self._num_units, h) if self._state_is_tuple else \
            self._num_units + h

    @property
    def output_size(self) -> int:
        return self._num_proj or self._num_units

    def build(self, inputs_shape) -> None:
        depth = _check_input_depth(self, inputs_shape)
        units = self._num_units
        h_depth = self._num_proj or units
        self._kernel = self.add_variable(_WEIGHTS, shape=[depth + h_depth, 4 * units],
                                         initializer=self._initializer)
        self._bias = self.add_variable(_BIAS, shape=[4 * units],
                                       initializer=zeros_initializer(dtype=self._dtype))
        if self._use_peepholes:
            self._w_f_diag = self.add_variable("w_f_diag", shape=[units],
                                               initializer=self._initializer)
            self._w_i_diag = self.add_variable("w_i_diag", shape=[units],
                                               initializer=self._initializer)
            self._w_o_diag = self.add_variable("w_o_diag", shape=[units],
                                               initializer=self._initializer)
        if self._num_proj is not None:
            self._proj_kernel = self.add_variable(f"projection/{_WEIGHTS}",
                                                  shape=[units, self._num_proj],
                                                  initializer=self._initializer)
        self.built = True

    def call(self, inputs, state):
        if self._state_is_tuple:
            c_prev, m_prev = state
        else:
            c_prev, m_prev = array.split(state, [self._num_units,
                                                 self._num_proj or self._num_units], axis=1)
        gates = _linear([inputs, m_prev], self._kernel, self._bias)
        i, j, f, o = array.split(gates, 4, axis=1)
        forget_bias = convert_to_tensor(self._forget_bias, dtype=f.dtype)
        if self._use_peepholes:
            c = math_ops.sigmoid(f + forget_bias + self._w_f_diag * c_prev) * c_prev + \
                math_ops.sigmoid(i + self._w_i_diag * c_prev) * self._activation(j)
        else:
            c = math_ops.sigmoid(f + forget_bias) * c_prev + \
                math_ops.sigmoid(i) * self._activation(j)
        if self._cell_clip is not None:
            c = math_ops.clip_by_value(c, -self._cell_clip, self._cell_clip)
        if self._use_peepholes:
            m = math_ops.sigmoid(o + self._w_o_diag * c) * self._activation(c)
        else:
            m = math_ops.sigmoid(o) * self._activation(c)
        if self._num_proj is not None:
            m = math_ops.matmul(m, self._proj_kernel)
            if self._proj_clip is not None:
                m = math_ops.clip_by_value(m, -self._proj_clip, self._proj_clip)
        new_state = LSTMStateTuple(c, m) if self._state_is_tuple else array.concat([c, m], 1)
        return m, new_state


# ------------------------------------------------------------------ stacking
class MultiRNNCell(RNNCell):
    """Cells applied in sequence, each under ``cell_<k>``; the state is a tuple of theirs
    (or, with ``state_is_tuple=False``, their concatenation)."""

    def __init__(self, cells: Sequence[RNNCell], state_is_tuple: bool = True, **kwargs: Any):
        super().__init__(**kwargs)
        if not cells:
            raise ValueError("Must specify at least one cell for MultiRNNCell.")
        if not isinstance(cells, (list, tuple)):
            raise TypeError(f"cells must be a list or tuple, but saw: {cells}.")
        self._cells = list(cells)
        self._state_is_tuple = bool(state_is_tuple)
        if not state_is_tuple and any(isinstance(c.state_size, (list, tuple))
                                      for c in self._cells):
            raise ValueError("Some cells return tuples of states, but the flag "
                             "state_is_tuple is not set. State sizes are: "
                             f"{[c.state_size for c in self._cells]}")

    @property
    def state_size(self):
        if self._state_is_tuple:
            return tuple(cell.state_size for cell in self._cells)
        return sum(cell.state_size for cell in self._cells)

    @property
    def output_size(self):
        return self._cells[-1].output_size

    def zero_state(self, batch_size, dtype):
        graph = get_default_graph()
        with graph.atomic(), name_scope(type(self).__name__ + "ZeroState"):
            if self._state_is_tuple:
                return tuple(cell.zero_state(batch_size, dtype) for cell in self._cells)
            return _zero_state_tensors(self.state_size, batch_size,
                                       dtypes.as_dtype(dtype).base_dtype)

    @property
    def trainable_weights(self) -> list:
        if not self.trainable:
            return []
        return [w for cell in self._cells for w in cell.trainable_weights]

    @property
    def non_trainable_weights(self) -> list:
        weights = [w for cell in self._cells for w in cell.non_trainable_weights]
        if not self.trainable:
            return [w for cell in self._cells for w in cell.trainable_weights] + weights
        return weights

    trainable_variables = trainable_weights
    non_trainable_variables = non_trainable_weights

    def call(self, inputs, state):
        current = inputs
        new_states = []
        start = 0
        for k, cell in enumerate(self._cells):
            with variable_scope(f"cell_{k}"):
                if self._state_is_tuple:
                    if not isinstance(state, (list, tuple)):
                        raise ValueError(f"Expected state to be a tuple of length "
                                         f"{len(self.state_size)}, but received: {state}")
                    cell_state = state[k]
                else:
                    size = cell.state_size
                    cell_state = array.slice(state, [0, start], [-1, size])
                    start += size
                current, new_state = cell(current, cell_state)
                new_states.append(new_state)
        if self._state_is_tuple:
            return current, tuple(new_states)
        return current, array.concat(new_states, 1)


# ------------------------------------------------------------------ wrappers
class _Wrapper(RNNCell):
    """A cell around another: same sizes, the inner cell's variables under its own
    scope (a wrapper adds no variable scope of its own, as in TF1)."""

    def __init__(self, cell: RNNCell, **kwargs: Any):
        if not _is_cell(cell):
            raise TypeError(f"The parameter cell is not a RNNCell: {cell!r}")
        super().__init__(**kwargs)
        self._cell = cell

    @property
    def wrapped_cell(self) -> RNNCell:
        return self._cell

    @property
    def state_size(self):
        return self._cell.state_size

    @property
    def output_size(self):
        return self._cell.output_size

    def zero_state(self, batch_size, dtype):
        with name_scope(type(self).__name__ + "ZeroState"):
            return self._cell.zero_state(batch_size, dtype)

    @property
    def trainable_weights(self) -> list:
        return self._cell.trainable_weights

    @property
    def non_trainable_weights(self) -> list:
        return self._cell.non_trainable_weights

    trainable_variables = trainable_weights
    non_trainable_variables = non_trainable_weights

    def __call__(self, inputs, state, scope=None, *args, **kwargs):
        """Calls the wrapped cell under the caller's scope (no scope of the wrapper)."""
        graph = get_default_graph()
        with graph.atomic():
            if not self.built:
                self.built = True
            return self.call(inputs, state, scope=scope)


def _is_cell(cell: Any) -> bool:
    return all(hasattr(cell, attr) for attr in ("output_size", "state_size")) and \
        (hasattr(cell, "zero_state") or hasattr(cell, "get_initial_state")) and callable(cell)


def _check_keep_prob(value, name: str):
    if isinstance(value, (int, float)) and not 0 <= float(value) <= 1:
        raise ValueError(f"Parameter {name} must be between 0 and 1: {value:.6f}")
    return value


class DropoutWrapper(_Wrapper):
    """Dropout on a cell's inputs, outputs and state. With ``variational_recurrent`` the
    masks are drawn once, when the wrapper is made (shape ``[1, size]``: shared by the
    batch and every time step, as TF1 does; needs ``dtype``, and ``input_size`` when
    inputs are dropped). An LSTM's memory ``c`` is never dropped unless
    ``dropout_state_filter_visitor`` says so."""

    def __init__(self, cell: RNNCell, input_keep_prob=1.0, output_keep_prob=1.0,
                 state_keep_prob=1.0, variational_recurrent: bool = False, input_size=None,
                 dtype=None, seed: Optional[int] = None,
                 dropout_state_filter_visitor: Optional[Callable] = None, **kwargs: Any):
        super().__init__(cell, **kwargs)
        self._keep = {"input": _check_keep_prob(input_keep_prob, "input_keep_prob"),
                      "state": _check_keep_prob(state_keep_prob, "state_keep_prob"),
                      "output": _check_keep_prob(output_keep_prob, "output_keep_prob")}
        self._seed = seed
        self._state_filter = dropout_state_filter_visitor or _keep_lstm_c
        self._noise: Optional[dict] = None
        if variational_recurrent:
            if dtype is None:
                raise ValueError("When variational_recurrent=True, dtype must be provided")
            if not _is_one(input_keep_prob) and input_size is None:
                raise ValueError("When variational_recurrent=True and input_keep_prob < 1.0 "
                                 "or is unknown, input_size must be provided")
            dtype = dtypes.as_dtype(dtype)
            sizes = {"input": input_size, "state": cell.state_size, "output": cell.output_size}
            with name_scope("DropoutWrapperInit"):
                self._noise = {kind: None if _is_one(self._keep[kind]) else
                               map_structure(lambda size, k=k: random_ops.random_uniform(
                                   [1] + as_shape(size).as_list(), dtype=dtype,
                                   seed=None if seed is None else seed + k), sizes[kind])
                               for k, kind in enumerate(("input", "state", "output"))}

    def _dropout(self, values, kind: str, k: int, flags=True):
        keep_prob = self._keep[kind]
        if _is_one(keep_prob):
            return values
        flags = flags if isinstance(flags, (list, tuple)) else \
            map_structure(lambda _: flags, values)
        if self._noise is None:
            seed = None if self._seed is None else self._seed + k
            return map_structure(lambda v, use: nn_ops.dropout(v, keep_prob=keep_prob,
                                                               seed=seed) if use else v,
                                 values, flags)

        def apply(value, noise, use):
            if not use:
                return value
            keep = convert_to_tensor(keep_prob, dtype=value.dtype)
            return math_ops.truediv(value, keep) * math_ops.floor(keep + noise)

        return map_structure(apply, values, self._noise[kind], flags)

    def call(self, inputs, state, scope=None):
        inputs = self._dropout(inputs, "input", 0)
        output, new_state = self._cell(inputs, state, scope=scope)
        new_state = self._dropout(new_state, "state", 1, self._state_filter(new_state))
        output = self._dropout(output, "output", 2)
        return output, new_state


def _keep_lstm_c(state):
    """TF1's default state filter: every state tensor but an LSTM's memory ``c``."""
    if isinstance(state, LSTMStateTuple):
        return LSTMStateTuple(c=False, h=True)
    if isinstance(state, (list, tuple)):  # a small user structure, not the graph
        flags = [_keep_lstm_c(s) for s in state]
        return type(state)(*flags) if hasattr(state, "_fields") else type(state)(flags)
    return True


def _is_one(value) -> bool:
    return isinstance(value, (int, float)) and float(value) == 1.0


class ResidualWrapper(_Wrapper):
    """Adds the cell's input to its output (``residual_fn`` to combine them otherwise)."""

    def __init__(self, cell: RNNCell, residual_fn: Optional[Callable] = None, **kwargs: Any):
        super().__init__(cell, **kwargs)
        self._residual_fn = residual_fn

    def call(self, inputs, state, scope=None):
        output, new_state = self._cell(inputs, state, scope=scope)
        if self._residual_fn is not None:
            return self._residual_fn(inputs, output), new_state
        assert_same_structure(inputs, output, "inputs vs. the wrapped cell's output")
        return map_structure(lambda x, y: x + y, inputs, output), new_state


class DeviceWrapper(_Wrapper):
    """Builds the wrapped cell's ops on ``device``."""

    def __init__(self, cell: RNNCell, device: str, **kwargs: Any):  # noqa: A002
        super().__init__(cell, **kwargs)
        self._device = device

    def zero_state(self, batch_size, dtype):
        with name_scope(type(self).__name__ + "ZeroState"), device(self._device):
            return self._cell.zero_state(batch_size, dtype)

    def call(self, inputs, state, scope=None):
        with device(self._device):
            return self._cell(inputs, state, scope=scope)
