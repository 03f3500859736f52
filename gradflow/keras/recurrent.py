"""``tf.keras.layers`` recurrent layers as TF1's keras builds them: ``SimpleRNN``, ``LSTM``
and ``GRU`` (the v1 classes: ``hard_sigmoid`` gates, GRU without ``reset_after``).

A recurrent layer owns a cell (``lstm_cell``...) whose weights are made in the cell's
scope inside the layer's (``lstm/lstm_cell/kernel:0``, ``recurrent_kernel:0``,
``bias:0``, the gates side by side in keras's order). The steps run in ``tf.scan`` over
the time axis (or a Python loop with ``unroll=True``).
"""
from __future__ import annotations

from gradflow.framework import dtypes
from gradflow.framework.constant import constant
from gradflow.framework.graph import get_default_graph
from gradflow.keras import activations, constraints, initializers, regularizers
from gradflow.keras.engine import Layer
from gradflow.layers.base import InputSpec, to_snake_case
from gradflow.ops import array
from gradflow.ops import math as math_ops
from gradflow.ops.loops import scan

__all__ = ["SimpleRNN", "LSTM", "GRU", "SimpleRNNCell", "LSTMCell", "GRUCell"]

_REFUSED = ("dropout", "recurrent_dropout")


class _Cell(Layer):
    """One step of a recurrent layer: ``step(x, states) -> (output, new states)``."""
    gates = 1

    def __init__(self, units: int, activation="tanh", recurrent_activation="hard_sigmoid",
                 use_bias: bool = True, kernel_initializer="glorot_uniform",
                 recurrent_initializer="orthogonal", bias_initializer="zeros",
                 kernel_regularizer=None, recurrent_regularizer=None, bias_regularizer=None,
                 kernel_constraint=None, recurrent_constraint=None, bias_constraint=None,
                 **kwargs):
        for argument in _REFUSED:
            if kwargs.pop(argument, 0.0):
                raise ValueError(f"{type(self).__name__}: {argument} is not supported")
        # keras's implementation 1 or 2 only orders the same arithmetic differently
        if kwargs.pop("implementation", 1) not in (1, 2):
            raise ValueError(f"{type(self).__name__}: implementation must be 1 or 2")
        if int(units) <= 0:
            raise ValueError("Received an invalid value for argument `units`, expected a "
                             f"positive integer, got {units}.")
        super().__init__(**kwargs)
        self.units = int(units)
        self.activation = activations.get(activation)
        self.recurrent_activation = activations.get(recurrent_activation)
        self.use_bias = bool(use_bias)
        self.initializers = (initializers.get(kernel_initializer),
                             initializers.get(recurrent_initializer),
                             initializers.get(bias_initializer))
        self.regularizers = (regularizers.get(kernel_regularizer),
                             regularizers.get(recurrent_regularizer),
                             regularizers.get(bias_regularizer))
        self.constraints = (constraints.get(kernel_constraint),
                            constraints.get(recurrent_constraint),
                            constraints.get(bias_constraint))
        self.kernel = self.recurrent_kernel = self.bias = None

    @property
    def state_size(self) -> int:
        return self.units

    def build(self, input_shape) -> None:
        features = input_shape[-1]
        width = self.units * self.gates
        self.kernel = self.add_weight("kernel", shape=(features, width),
                                      initializer=self.initializers[0],
                                      regularizer=self.regularizers[0],
                                      constraint=self.constraints[0])
        self.recurrent_kernel = self.add_weight("recurrent_kernel", shape=(self.units, width),
                                                initializer=self.initializers[1],
                                                regularizer=self.regularizers[1],
                                                constraint=self.constraints[1])
        if self.use_bias:
            self.bias = self.add_weight("bias", shape=(width,),
                                        initializer=self._bias_initializer(),
                                        regularizer=self.regularizers[2],
                                        constraint=self.constraints[2])
        self.built = True

    def _bias_initializer(self):
        return self.initializers[2]

    def _part(self, weight, index: int):
        """The columns of gate ``index`` in a weight holding the gates side by side."""
        begin = index * self.units
        if weight.shape.ndims == 1:
            return array.slice(weight, [begin], [self.units])
        return array.slice(weight, [0, begin], [-1, self.units])

    def _input_part(self, x, index: int):
        z = math_ops.matmul(x, self._part(self.kernel, index))
        return z + self._part(self.bias, index) if self.use_bias else z


class SimpleRNNCell(_Cell):
    """``h = activation(x @ kernel + h @ recurrent_kernel + bias)``."""

    def __init__(self, units: int, activation="tanh", **kwargs):
        super().__init__(units, activation=activation, **kwargs)

    def step(self, x, states: list) -> tuple:
        h = self.activation(self._input_part(x, 0) +
                            math_ops.matmul(states[0], self.recurrent_kernel))
        return h, [h]


class LSTMCell(_Cell):
    """Gates i, f, c, o side by side; ``c = f * c + i * act(zc)``, ``h = o * act(c)``;
    the forget gate's bias starts at one (``unit_forget_bias``)."""
    gates = 4

    def __init__(self, units: int, unit_forget_bias: bool = True, **kwargs):
        super().__init__(units, **kwargs)
        self.unit_forget_bias = bool(unit_forget_bias)

    @property
    def state_size(self) -> list:
        return [self.units, self.units]

    def _bias_initializer(self):
        if not self.unit_forget_bias:
            return self.initializers[2]
        base, units = self.initializers[2], self.units

        def initializer(shape, dtype=None, partition_info=None):
            return array.concat([base([units], dtype=dtype),
                                 initializers.Ones()([units], dtype=dtype),
                                 base([units * 2], dtype=dtype)], 0)
        return initializer

    def step(self, x, states: list) -> tuple:
        h, c = states
        z = [self._input_part(x, k) + math_ops.matmul(h, self._part(self.recurrent_kernel, k))
             for k in range(4)]
        i, f, o = (self.recurrent_activation(z[k]) for k in (0, 1, 3))
        c = f * c + i * self.activation(z[2])
        h = o * self.activation(c)
        return h, [h, c]


class GRUCell(_Cell):
    """Gates z, r, h side by side; ``hh = act(x Wh + (r * h) Uh + bh)``,
    ``h = z * h + (1 - z) * hh`` (keras's v1 GRU: ``reset_after`` False)."""
    gates = 3

    def __init__(self, units: int, reset_after: bool = False, **kwargs):
        if reset_after:
            raise ValueError("GRU: reset_after=True is not supported (the v1 GRU)")
        super().__init__(units, **kwargs)

    def step(self, x, states: list) -> tuple:
        h = states[0]
        z = self.recurrent_activation(self._input_part(x, 0) + math_ops.matmul(
            h, self._part(self.recurrent_kernel, 0)))
        r = self.recurrent_activation(self._input_part(x, 1) + math_ops.matmul(
            h, self._part(self.recurrent_kernel, 1)))
        candidate = self.activation(self._input_part(x, 2) + math_ops.matmul(
            r * h, self._part(self.recurrent_kernel, 2)))
        one = constant(1.0, dtype=h.dtype.base_dtype)
        h = z * h + (one - z) * candidate
        return h, [h]


class _RNN(Layer):
    """Runs its cell over the time axis of [batch, time, features] inputs."""
    cell_class = _Cell

    def __init__(self, units: int, return_sequences: bool = False,
                 return_state: bool = False, go_backwards: bool = False,
                 stateful: bool = False, unroll: bool = False, time_major: bool = False,
                 **kwargs):
        if stateful:
            raise ValueError(f"{type(self).__name__}: stateful=True is not supported")
        if time_major:
            raise ValueError(f"{type(self).__name__}: time_major=True is not supported")
        layer_kwargs = {key: kwargs.pop(key) for key in
                        ("name", "trainable", "dtype", "input_shape", "batch_input_shape",
                         "batch_size", "weights", "activity_regularizer", "input_dim")
                        if key in kwargs}
        if layer_kwargs.get("input_dim") is not None:
            layer_kwargs["input_shape"] = (None, layer_kwargs.pop("input_dim"))
        layer_kwargs.pop("input_dim", None)
        super().__init__(**layer_kwargs)
        # what makes a twin of this layer (Bidirectional's backward half)
        self.cell_arguments = dict(kwargs, units=units, return_sequences=return_sequences,
                                   return_state=return_state, go_backwards=go_backwards,
                                   unroll=unroll)
        # the cell's scope is its class name, the same in every layer (lstm/lstm_cell/)
        self.cell = self.cell_class(units, name=to_snake_case(self.cell_class.__name__),
                                    **kwargs)
        self.units = int(units)
        self.return_sequences = bool(return_sequences)
        self.return_state = bool(return_state)
        self.go_backwards = bool(go_backwards)
        self.unroll = bool(unroll)
        self.input_spec = InputSpec(ndim=3)

    def build(self, input_shape) -> None:
        with get_default_graph().name_scope(self.cell.name):
            self.cell.build(input_shape)
        self._trainable_weights = list(self.cell._trainable_weights)
        self._non_trainable_weights = list(self.cell._non_trainable_weights)

    def call(self, inputs, initial_state=None, mask=None, training=None):
        if initial_state is not None or mask is not None:
            raise ValueError(f"{type(self).__name__}: initial_state and mask are not "
                             "supported")
        sizes = self.cell.state_size
        sizes = sizes if isinstance(sizes, list) else [sizes]
        batch = array.shape(inputs)[0]
        states = [array.zeros(array.stack([batch, constant(size, dtype=dtypes.int32)]),
                              dtype=inputs.dtype.base_dtype) for size in sizes]
        steps = array.transpose(inputs, [1, 0, 2])  # time first
        if self.unroll and inputs.shape.as_list()[1] is not None:
            outputs, states = self._unrolled(steps, inputs.shape.as_list()[1], states)
        else:
            outputs, states = self._scanned(steps, states)
        results = array.transpose(outputs, [1, 0, 2]) if self.return_sequences else \
            states[0]
        return [results, *states] if self.return_state else results

    def _unrolled(self, steps, count: int, states: list):
        order = range(count - 1, -1, -1) if self.go_backwards else range(count)
        outputs = []
        for t in order:
            output, states = self.cell.step(steps[t], states)
            outputs.append(output)
        return array.stack(outputs), states

    def _scanned(self, steps, states: list):
        def body(carried, x):
            return tuple(self.cell.step(x, list(carried))[1])
        stacked = scan(body, steps, initializer=tuple(states), reverse=self.go_backwards)
        # with go_backwards the sequence runs from the last step: its outputs come reversed
        last = [array.gather(s, 0 if self.go_backwards else array.shape(s)[0] - 1)
                for s in stacked]
        outputs = array.reverse(stacked[0], [0]) if self.go_backwards else stacked[0]
        return outputs, last


class SimpleRNN(_RNN):
    """A fully connected recurrent layer (``tanh``)."""
    cell_class = SimpleRNNCell


class LSTM(_RNN):
    """Long short-term memory (TF1 keras's: ``hard_sigmoid`` gates, forget bias 1)."""
    cell_class = LSTMCell


class GRU(_RNN):
    """Gated recurrent unit (TF1 keras's: ``hard_sigmoid`` gates, ``reset_after`` False)."""
    cell_class = GRUCell

