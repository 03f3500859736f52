"""The keras ``Layer`` in TF1 graph mode, ``InputLayer``/``Input``, and the call records
(nodes) the functional API walks.

A keras layer differs from a ``tf.layers`` one (gradflow.layers.base) in its naming: the
name is fixed when the layer is made (``dense``, ``dense_1``... unique per graph), each call
opens a fresh name scope of that name (``dense/MatMul``, then ``dense_1/MatMul``), and
weights are plain variables named in the scope of the first call (``dense/kernel:0``, or
``outer/dense/kernel:0`` under ``tf.name_scope('outer')``), not variable-store entries.
The maths of each layer is gradflow.layers' own: keras classes derive from them.
"""
from __future__ import annotations

import functools
import inspect
from typing import Any, Optional, Sequence

import numpy as np

from gradflow.framework import dtypes
from gradflow.framework.graph import Tensor, get_default_graph
from gradflow.framework.tensor_shape import TensorShape
from gradflow.keras import backend as K
from gradflow.keras import initializers, regularizers
from gradflow.layers import base as tf_layers_base
from gradflow.layers.base import as_layer_inputs, input_shapes
from gradflow.ops import array
from gradflow.ops.state import Variable

__all__ = ["Layer", "InputLayer", "Input", "Node", "keras_history", "flatten_tensors"]

_KERAS_KWARGS = ("input_shape", "batch_input_shape", "batch_size", "weights",
                 "activity_regularizer", "input_dim", "autocast", "dynamic")


class Node:
    """One call of a layer: the tensors it took, the tensors it made, its other
    arguments (so a model can replay the call on new inputs)."""

    def __init__(self, layer: "Layer", inputs: list, outputs: list, arguments: dict,
                 single_input: bool, positional: tuple = ()):
        self.layer = layer
        self.inputs = inputs
        self.outputs = outputs
        self.arguments = arguments
        self.positional = positional
        self.single_input = single_input

    def parents(self) -> list:
        """The nodes that made this node's inputs (None for a tensor from outside)."""
        return [history[0]._inbound_nodes[history[1]] if history else None
                for history in map(keras_history, self.inputs)]


def keras_history(tensor) -> Optional[tuple]:
    """(layer, node index, tensor index) of a tensor a keras layer made, else None."""
    if not isinstance(tensor, Tensor):
        return None
    found = K.graph_state(tensor.graph).history.get(id(tensor))
    return None if found is None else found[1:]


def flatten_tensors(value) -> list:
    """A tensor or a nested list/tuple of tensors as a flat list."""
    if isinstance(value, (list, tuple)):
        return [t for item in value for t in flatten_tensors(item)]
    return [value]


def _shape_tuple(shape) -> Optional[tuple]:
    shape = TensorShape(shape)
    return None if shape.ndims is None else tuple(shape.as_list())


class Layer(tf_layers_base.Layer):
    """``tf.keras.layers.Layer``: subclass with ``build(input_shape)`` (weights from
    ``add_weight``) and ``call(inputs, ...)``; call the object on tensors."""

    def __init__(self, trainable: bool = True, name: Optional[str] = None, dtype=None,
                 **kwargs: Any):
        unknown = sorted(set(kwargs) - set(_KERAS_KWARGS))
        if unknown:
            raise TypeError(f"('Keyword argument not understood:', {unknown[0]!r})")
        if kwargs.get("dynamic"):
            raise ValueError("dynamic=True (a layer run eagerly) is not supported: gradflow "
                             "builds graphs")
        if name is not None and not isinstance(name, str):
            raise TypeError(f"Layer name must be a string, got {type(name).__name__}")
        name = name or K.unique_object_name(tf_layers_base.to_snake_case(type(self).__name__))
        activity_regularizer = regularizers.get(kwargs.get("activity_regularizer"))
        super().__init__(trainable=trainable, name=name, dtype=dtype,
                         activity_regularizer=activity_regularizer)
        self._batch_input_shape = _batch_shape(kwargs)
        self._initial_weights = kwargs.get("weights")
        self._inbound_nodes: list = []
        self._call_takes_training = "training" in inspect.signature(self.call).parameters
        self.supports_masking = False

    # ------------------------------------------------------------------ weights
    def add_weight(self, name: Optional[str] = None, shape=None, dtype=None, initializer=None,
                   regularizer=None, trainable: Optional[bool] = None, constraint=None,
                   partitioner=None, use_resource=None, synchronization=None,
                   aggregation=None, **kwargs: Any) -> Variable:
        """A variable ``<name scope>/<name>`` initialised by ``initializer`` (glorot
        uniform for floats, zeros for integers and bools)."""
        for argument, value in (("partitioner", partitioner), ("getter", kwargs.pop(
                "getter", None))):
            if value is not None:
                raise ValueError(f"add_weight: {argument}={value!r} is not supported")
        if kwargs:
            raise TypeError(f"Unknown keyword argument: {sorted(kwargs)[0]!r}")
        dtype = dtypes.as_dtype(dtype or self._dtype or K.floatx()).base_dtype
        shape = TensorShape(() if shape is None else shape)
        initializer = initializers.get(initializer)
        if initializer is None:
            if dtype.is_floating:
                initializer = initializers.GlorotUniform()
            elif dtype.is_integer or dtype.is_unsigned or dtype.is_bool:
                initializer = initializers.Zeros()
            else:
                raise ValueError(f"An initializer for variable {name} of type "
                                 f"{dtype.name} is required for layer {self.name}. "
                                 f"Received: {initializer}.")
        trainable = True if trainable is None else bool(trainable)
        graph = get_default_graph()
        with graph.atomic(), graph.control_dependencies(None):
            variable = Variable(functools.partial(initializer, shape.as_list(), dtype=dtype),
                                name=name or "Variable", trainable=trainable, dtype=dtype,
                                constraint=constraint, use_resource=use_resource,
                                synchronization=synchronization, aggregation=aggregation)
            regularizer = regularizers.get(regularizer)
            if regularizer is not None:
                self._regularize(name or "Variable", variable, regularizer)
            target = self._trainable_weights if trainable else self._non_trainable_weights
            target.append(variable)
            graph.on_rollback(lambda: tf_layers_base._remove_all([variable], target))
        return variable

    def get_weights(self) -> list:
        """The weights' values (NumPy arrays) from keras's session."""
        return K.batch_get_value(self.weights)

    def set_weights(self, weights: Sequence) -> None:
        """Loads NumPy arrays into the weights (same count, same shapes, in order)."""
        params = self.weights
        if len(params) != len(weights):
            raise ValueError(f"You called `set_weights(weights)` on layer \"{self.name}\" "
                             f"with a weight list of length {len(weights)}, but the layer was "
                             f"expecting {len(params)} weights. Provided weights: "
                             f"{str(weights)[:50]}...")
        pairs = []
        for variable, value in zip(params, weights, strict=True):
            value = np.asarray(value)
            if not variable.shape.is_compatible_with(TensorShape(value.shape)):
                raise ValueError(f"Layer {self.name} weight shape {tuple(variable.shape)} is "
                                 "not compatible with provided weight shape "
                                 f"{value.shape}.")
            pairs.append((variable, value))
        K.batch_set_value(pairs)

    # ------------------------------------------------------------------- calling
    def __call__(self, inputs, *args, **kwargs):
        """Builds the layer on its first call (inside a fresh ``<name>`` name scope),
        applies ``call`` and records the call for the functional API."""
        graph = get_default_graph()
        with graph.atomic():
            if self._call_takes_training and kwargs.get("training") is None:
                kwargs["training"] = K.learning_phase()
            if isinstance(kwargs.get("training"), (int, np.integer)):
                kwargs["training"] = bool(kwargs["training"])  # a fixed phase, 0 or 1
            arguments = dict(kwargs)
            x = as_layer_inputs(inputs)
            first = flatten_tensors(x)[0]
            with graph.name_scope(self.name):
                if self.input_spec is not None and isinstance(first, Tensor):
                    tf_layers_base._check_input_spec(self.name, self.input_spec, first)
                if not self.built:
                    self._build_on(graph, x, first)
                outputs = _copy_passed_through(self.call(x, *args, **kwargs), x)
                if self.activity_regularizer is not None:
                    self._regularize_activity(outputs)
            self._record(graph, x, outputs, arguments, args)
            return outputs

    def _build_on(self, graph, x, first) -> None:
        was_built = self.built
        graph.on_rollback(lambda: setattr(self, "built", was_built))
        if self._dtype is None and isinstance(first, Tensor):
            self._dtype = first.dtype.base_dtype
        self._graph = graph
        self.build(input_shapes(x))
        self.built = True
        if self._initial_weights is not None:
            initial = self._initial_weights
            if len(initial) != len(self.weights):
                raise ValueError(f"You called `set_weights(weights)` on layer "
                                 f"\"{self.name}\" with a weight list of length "
                                 f"{len(initial)}, but the layer was expecting "
                                 f"{len(self.weights)} weights.")
            for variable, value in zip(self.weights, initial, strict=True):
                _set_initial_value(variable, value)
            self._initial_weights = None

    def _record(self, graph, inputs, outputs, arguments: dict,
                positional: tuple = ()) -> None:
        if self._call_takes_training and arguments.get("training") is K.learning_phase():
            del arguments["training"]  # a replay takes the learning phase afresh
        node = Node(self, flatten_tensors(inputs), flatten_tensors(outputs), arguments,
                    single_input=not isinstance(inputs, list), positional=tuple(positional))
        self._inbound_nodes.append(node)
        history = K.graph_state(graph).history
        index = len(self._inbound_nodes) - 1
        # the outermost call made the tensor (a model's call records after its layers')
        replaced = {}
        for i, tensor in enumerate(node.outputs):
            if isinstance(tensor, Tensor):
                replaced[id(tensor)] = history.get(id(tensor))
                history[id(tensor)] = (tensor, self, index, i)

        def forget() -> None:
            tf_layers_base._remove_all([node], self._inbound_nodes)
            for key, previous in replaced.items():
                if previous is None:
                    history.pop(key, None)
                else:
                    history[key] = previous
        graph.on_rollback(forget)

    def compute_output_shape(self, input_shape):
        """The output shape for ``input_shape``, found by building the layer's ops on
        placeholders in a scratch graph (the layer itself is left as it was)."""
        scratch = type(get_default_graph())()
        saved = dict(self.__dict__)
        try:
            with scratch.as_default():
                many = isinstance(input_shape, list)
                shapes = input_shape if many else [input_shape]
                placeholders = [array.placeholder(self._dtype or K.floatx(), shape=s)
                                for s in shapes]
                self._trainable_weights, self._non_trainable_weights = [], []
                self.build([TensorShape(s) for s in shapes] if many else TensorShape(shapes[0]))
                out = self.call(placeholders if many else placeholders[0])
        finally:
            self.__dict__.clear()
            self.__dict__.update(saved)
        return [o.shape for o in out] if isinstance(out, (list, tuple)) else out.shape

    # ---------------------------------------------------------------- connectivity
    def _node_attribute(self, attribute: str, what: str):
        if not self._inbound_nodes:
            raise AttributeError(f"Layer {self.name} is not connected, no {what} to return.")
        if len(self._inbound_nodes) > 1:
            raise AttributeError(f"Layer {self.name} has multiple inbound nodes, hence the "
                                 f"notion of \"layer {what}\" is ill-defined. Use "
                                 f"`get_{attribute}_at(node_index)` instead.")
        values = getattr(self._inbound_nodes[0], attribute)
        return values[0] if len(values) == 1 else values

    @property
    def input(self):
        return self._node_attribute("inputs", "input")

    @property
    def output(self):
        return self._node_attribute("outputs", "output")

    @property
    def input_shape(self):
        value = self.input
        return [_shape_tuple(t.shape) for t in value] if isinstance(value, list) else \
            _shape_tuple(value.shape)

    @property
    def output_shape(self):
        value = self.output
        return [_shape_tuple(t.shape) for t in value] if isinstance(value, list) else \
            _shape_tuple(value.shape)

    def get_input_at(self, node_index: int):
        values = self._inbound_nodes[node_index].inputs
        return values[0] if len(values) == 1 else values

    def get_output_at(self, node_index: int):
        values = self._inbound_nodes[node_index].outputs
        return values[0] if len(values) == 1 else values

    def get_config(self) -> dict:
        config = super().get_config()
        if self._batch_input_shape is not None:
            config["batch_input_shape"] = self._batch_input_shape
        return config

    @classmethod
    def from_config(cls, config: dict) -> "Layer":
        return cls(**config)


def _copy_passed_through(outputs, inputs):
    """Outputs that are inputs unchanged, as identity copies: each tensor keeps the one
    layer call that made it (keras does the same)."""
    given = {id(t) for t in flatten_tensors(inputs)}

    def copy(t):
        return array.identity(t) if isinstance(t, Tensor) and id(t) in given else t
    if isinstance(outputs, (list, tuple)):
        return type(outputs)(copy(t) for t in outputs)
    return copy(outputs)


def _set_initial_value(variable: Variable, value) -> None:
    """Makes ``value`` the initial value of a variable not yet initialised (a layer's
    ``weights=`` argument)."""
    value = np.asarray(value, dtype=variable.dtype.base_dtype.as_numpy_dtype)
    if not variable.shape.is_compatible_with(TensorShape(value.shape)):
        raise ValueError(f"Layer weight shape {tuple(variable.shape)} is not compatible with "
                         f"provided weight shape {value.shape}.")
    K.graph_state(variable.graph).pending_values[id(variable)] = (variable, value)


def _batch_shape(kwargs: dict) -> Optional[tuple]:
    if kwargs.get("batch_input_shape") is not None:
        return tuple(kwargs["batch_input_shape"])
    if kwargs.get("input_shape") is not None:
        return (kwargs.get("batch_size"), *tuple(kwargs["input_shape"]))
    if kwargs.get("input_dim") is not None:
        return (kwargs.get("batch_size"), int(kwargs["input_dim"]))
    return None


class InputLayer(Layer):
    """The layer behind ``Input``: holds the placeholder a model is fed through."""

    def __init__(self, input_shape=None, batch_size: Optional[int] = None, dtype=None,
                 input_tensor=None, sparse: bool = False, name: Optional[str] = None,
                 ragged: bool = False, batch_input_shape=None, **kwargs: Any):
        if sparse or ragged:
            raise ValueError("InputLayer: sparse and ragged inputs are not supported")
        if kwargs:
            raise TypeError(f"('Keyword argument not understood:', {sorted(kwargs)[0]!r})")
        if name is None:
            name = f"input_{K.get_uid('input')}"
        if input_shape is not None and batch_input_shape is not None:
            raise ValueError("Only provide the input_shape OR batch_input_shape argument to "
                             "InputLayer, not both at the same time.")
        super().__init__(name=name, dtype=dtype or (input_tensor.dtype.base_dtype.name
                                                     if input_tensor is not None
                                                     else K.floatx()))
        if input_tensor is None:
            if batch_input_shape is None:
                batch_input_shape = None if input_shape is None else \
                    (batch_size, *tuple(input_shape))
            graph = get_default_graph()
            with graph.name_scope(None):
                input_tensor = array.placeholder(self._dtype, shape=batch_input_shape,
                                                 name=name)
        self._batch_input_shape = _shape_tuple(input_tensor.shape)
        self.built = True
        self.is_placeholder = True
        self._record(input_tensor.graph, [], input_tensor, {})

    def call(self, inputs):
        return inputs

    def get_config(self) -> dict:
        return {"batch_input_shape": self._batch_input_shape, "dtype": self.dtype,
                "sparse": False, "ragged": False, "name": self.name}


def Input(shape=None, batch_size: Optional[int] = None, name: Optional[str] = None,
          dtype=None, sparse: bool = False, tensor=None, ragged: bool = False,
          batch_shape=None, **kwargs: Any) -> Tensor:
    """A placeholder (``input_1``...) to start a functional model from; ``shape``
    excludes the batch axis."""
    if kwargs:
        raise ValueError(f"Unrecognized keyword arguments: {list(kwargs)}")
    if shape is None and tensor is None and batch_shape is None:
        raise ValueError("Please provide to Input a `shape` or a `tensor` or a `type_spec` "
                         "argument. Note that `shape` does not include the batch dimension.")
    if isinstance(shape, int):
        shape = (shape,)
    layer = InputLayer(input_shape=shape, batch_size=batch_size, dtype=dtype,
                       input_tensor=tensor, sparse=sparse, name=name, ragged=ragged,
                       batch_input_shape=batch_shape)
    return layer._inbound_nodes[0].outputs[0]
