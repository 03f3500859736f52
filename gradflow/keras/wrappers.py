"""``tf.keras.layers.TimeDistributed`` and ``Bidirectional``: layers wrapping a layer.

``TimeDistributed`` applies its layer to every step of [batch, time, ...] inputs by
folding time into the batch; the layer's weights are made in the wrapper's scope
(``time_distributed/kernel:0``), as tf_keras names them. ``Bidirectional`` runs a twin
of a recurrent layer forwards (``forward_lstm``) and one backwards (``backward_lstm``),
re-reverses the backward sequences and merges the two.
"""
from __future__ import annotations

from typing import Optional

from gradflow.framework import dtypes
from gradflow.framework.constant import constant
from gradflow.framework.tensor_shape import TensorShape
from gradflow.keras.engine import Layer
from gradflow.ops import array
from gradflow.ops import math as math_ops

__all__ = ["TimeDistributed", "Bidirectional"]

_MERGE_MODES = ("sum", "mul", "ave", "concat", None)


class _Wrapper(Layer):
    """A layer whose weights are those of the layers it wraps."""

    def _wrapped(self) -> list:
        return [self.layer]

    @property
    def trainable_weights(self) -> list:
        if not self.trainable:
            return []
        return [w for layer in self._wrapped() for w in layer.trainable_weights]

    @property
    def non_trainable_weights(self) -> list:
        every = [w for layer in self._wrapped() for w in layer.weights]
        if not self.trainable:
            return every
        return [w for layer in self._wrapped() for w in layer.non_trainable_weights]

    @property
    def weights(self) -> list:
        return [w for layer in self._wrapped() for w in layer.weights] if self.trainable \
            else self.non_trainable_weights

    @property
    def updates(self) -> list:
        return [u for layer in self._wrapped() for u in layer.updates]

    @property
    def losses(self) -> list:
        return [t for layer in self._wrapped() for t in layer.losses]


class TimeDistributed(_Wrapper):
    """Applies ``layer`` to each step of [batch, time, ...] inputs."""

    def __init__(self, layer: Layer, **kwargs):
        if not isinstance(layer, Layer):
            raise ValueError("Please initialize `TimeDistributed` layer with a "
                             f"`tf.keras.layers.Layer` instance. Received: {layer}")
        super().__init__(**kwargs)
        self.layer = layer
        self._call_takes_training = layer._call_takes_training

    def build(self, input_shape) -> None:
        shape = TensorShape(input_shape)
        if shape.ndims is None or shape.ndims < 3:
            raise ValueError("`TimeDistributed` Layer should be passed an `input_shape ` with "
                             f"at least 3 dimensions, received: {shape}")
        if not self.layer.built:  # its weights go in this wrapper's scope
            self.layer._dtype = self.layer._dtype or self._dtype
            self.layer.build(TensorShape([None] + shape.as_list()[2:]))
            self.layer.built = True

    def call(self, inputs, training=None):
        dims = inputs.shape.as_list()
        dynamic = array.shape(inputs)
        inner = [-1] + [dynamic[i] if d is None else d for i, d in enumerate(dims)][2:]
        folded = array.reshape(inputs, array.stack(
            [constant(d, dtype=dtypes.int32) if isinstance(d, int) else d for d in inner]))
        kwargs = {"training": training} if self.layer._call_takes_training else {}
        outputs = self.layer.call(folded, **kwargs)
        out_dims = outputs.shape.as_list()
        steps = dims[1] if dims[1] is not None else dynamic[1]
        back = [dynamic[0], steps] + [array.shape(outputs)[i] if d is None else d
                                      for i, d in enumerate(out_dims)][1:]
        unfolded = array.reshape(outputs, array.stack(
            [constant(d, dtype=dtypes.int32) if isinstance(d, int) else d for d in back]))
        unfolded.set_shape(TensorShape([dims[0], dims[1]] + out_dims[1:]))
        return unfolded


class Bidirectional(_Wrapper):
    """Runs a recurrent layer forwards and a twin backwards, merging their outputs
    (``merge_mode`` 'concat', 'sum', 'mul', 'ave' or None for a list)."""

    def __init__(self, layer: Layer, merge_mode: Optional[str] = "concat", weights=None,
                 backward_layer: Optional[Layer] = None, **kwargs):
        if not hasattr(layer, "cell_arguments"):
            raise ValueError("Please initialize `Bidirectional` layer with a recurrent "
                             f"layer (SimpleRNN, LSTM, GRU). Received: {layer}")
        if merge_mode not in _MERGE_MODES:
            raise ValueError(f"Invalid merge mode. Received: {merge_mode}. Merge mode should "
                             "be one of {\"sum\", \"mul\", \"ave\", \"concat\", None}")
        for argument, value in (("weights", weights), ("backward_layer", backward_layer)):
            if value is not None:
                raise ValueError(f"Bidirectional: {argument} is not supported")
        super().__init__(**kwargs)
        arguments = dict(layer.cell_arguments)
        self.forward_layer = type(layer)(name=f"forward_{layer.name}", **arguments)
        arguments["go_backwards"] = not arguments["go_backwards"]
        self.backward_layer = type(layer)(name=f"backward_{layer.name}", **arguments)
        self.merge_mode = merge_mode
        self.return_sequences = bool(arguments["return_sequences"])
        self.return_state = bool(arguments["return_state"])
        self._call_takes_training = False

    def _wrapped(self) -> list:
        return [self.forward_layer, self.backward_layer]

    def call(self, inputs):
        forward = self.forward_layer(inputs)
        backward = self.backward_layer(inputs)
        states: list = []
        if self.return_state:
            states = forward[1:] + backward[1:]
            forward, backward = forward[0], backward[0]
        if self.return_sequences:  # the backward steps come last-first: put them in order
            backward = array.reverse(backward, [1])
        if self.merge_mode == "concat":
            merged = array.concat([forward, backward], -1)
        elif self.merge_mode == "sum":
            merged = forward + backward
        elif self.merge_mode == "ave":
            merged = (forward + backward) / constant(2.0, dtype=forward.dtype.base_dtype)
        elif self.merge_mode == "mul":
            merged = math_ops.multiply(forward, backward)
        else:
            merged = [forward, backward]
        if self.return_state:
            return (merged if isinstance(merged, list) else [merged]) + states
        return merged
