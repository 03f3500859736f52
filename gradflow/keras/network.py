"""``tf.keras.Model`` (functional and subclassed) and ``tf.keras.Sequential`` in TF1
graph mode: the layer graph between inputs and outputs, weights, calling a model on new
tensors, ``summary()`` and weight files. Training (compile/fit...) is in training.py."""
from __future__ import annotations

import os
from typing import Optional

import numpy as np

from gradflow.framework.graph import Tensor, get_default_graph
from gradflow.keras import backend as K
from gradflow.keras import hdf5
from gradflow.keras.engine import (Input, InputLayer, Layer, Node, flatten_tensors,
                                   keras_history)
from gradflow.keras.training import Trainer
from gradflow.layers.base import to_snake_case
from gradflow.train.saver import Saver

__all__ = ["Model", "Sequential", "model_summary"]

_H5_SUFFIXES = (".h5", ".hdf5", ".keras")


def _unique_by_identity(items) -> list:
    seen, kept = set(), []
    for item in items:
        if id(item) not in seen:
            seen.add(id(item))
            kept.append(item)
    return kept


class Model(Trainer, Layer):
    """A layer made of layers: functional (``inputs``/``outputs`` given), or subclassed
    (layers set as attributes, ``call`` written by the user)."""

    def __init__(self, *args, **kwargs):
        inputs = kwargs.pop("inputs", args[0] if args else None)
        outputs = kwargs.pop("outputs", args[1] if len(args) > 1 else None)
        name = kwargs.pop("name", None)
        trainable = kwargs.pop("trainable", True)
        if kwargs:
            raise TypeError(f"('Keyword argument not understood:', {sorted(kwargs)[0]!r})")
        self._tracked: list = []
        if name is None:
            base = "model" if type(self).__name__ == "Model" else \
                to_snake_case(type(self).__name__)
            name = K.unique_object_name(base)
        super().__init__(name=name, trainable=trainable)
        # a model hands `training` on only when given one; its layers take the phase
        self._call_takes_training = False
        self.inputs: list = []
        self.outputs: list = []
        self._nodes: list = []
        self._network_layers: list = []
        self._single_output = True
        self.stop_training = False
        self.history = None
        if inputs is not None or outputs is not None:
            if inputs is None or outputs is None:
                raise ValueError("A functional Model needs both `inputs` and `outputs`.")
            self._init_graph_network(inputs, outputs)

    def __setattr__(self, name: str, value) -> None:
        # a subclassed model's layers are the ones set as attributes
        if isinstance(value, Layer) and not name.startswith("_") and \
                "_tracked" in self.__dict__ and value is not self:
            self._tracked.append(value)
        super().__setattr__(name, value)

    # -------------------------------------------------------------- the layer graph
    def _init_graph_network(self, inputs, outputs) -> None:
        self._single_output = not isinstance(outputs, (list, tuple))
        self.inputs = flatten_tensors(inputs)
        self.outputs = flatten_tensors(outputs)
        for tensor in self.inputs + self.outputs:
            if not isinstance(tensor, Tensor) or keras_history(tensor) is None:
                raise ValueError("Input tensors to a Functional must come from "
                                 f"`tf.keras.Input`. Received: {tensor} (missing previous "
                                 "layer metadata).")
        nodes = self._nodes_between()
        self._network_layers = _unique_by_identity(node.layer for node in nodes)
        self._nodes = [node for node in nodes if not isinstance(node.layer, InputLayer)]
        self.built = True

    def _nodes_between(self) -> list:
        """Every node from ``inputs`` to ``outputs`` (the inputs' own nodes included),
        deepest first: keras's order, in which each node comes after those it takes
        tensors from (ties keep the order a depth-first walk from the outputs meets
        them)."""
        inputs = {id(t) for t in self.inputs}
        ordered, done, depth = [], set(), {}
        stack = [(self._node_of(t), False) for t in reversed(self.outputs)]
        while stack:
            node, expanded = stack.pop()
            if expanded:
                if id(node) not in done:
                    done.add(id(node))
                    ordered.append(node)
                continue
            if id(node) in done:
                continue
            stack.append((node, True))
            for tensor in reversed(node.inputs):
                history = keras_history(tensor)
                if history is None or (id(tensor) not in inputs and
                                       isinstance(history[0], InputLayer)):
                    raise ValueError(f"Graph disconnected: cannot obtain value for tensor "
                                     f"{tensor} at layer \"{node.layer.name}\". The following "
                                     "previous layers were accessed without issue: "
                                     f"{[n.layer.name for n in ordered]}")
                stack.append((self._node_of(tensor), False))
        for node in reversed(ordered):  # outputs first: a parent lies deeper than its child
            depth.setdefault(id(node), 0)
            for parent in node.parents():
                if parent is not None and id(parent) in done:
                    depth[id(parent)] = max(depth.get(id(parent), 0), depth[id(node)] + 1)
        position = {id(node): i for i, node in enumerate(ordered)}
        return sorted(ordered, key=lambda n: (-depth[id(n)], position[id(n)]))

    @staticmethod
    def _node_of(tensor) -> Node:
        layer, node_index, _ = keras_history(tensor)
        return layer._inbound_nodes[node_index]

    @property
    def layers(self) -> list:
        return list(self._network_layers) if self._network_layers else \
            _unique_by_identity(self._tracked)

    @property
    def input(self):
        """The model's input tensor (a list for several)."""
        if not self.inputs:
            return super().input
        return self.inputs[0] if len(self.inputs) == 1 else list(self.inputs)

    @property
    def output(self):
        """The model's output tensor (a list for several)."""
        if not self.outputs:
            return super().output
        return self.outputs[0] if len(self.outputs) == 1 else list(self.outputs)

    def get_layer(self, name: Optional[str] = None, index: Optional[int] = None) -> Layer:
        """The layer called ``name`` (or at position ``index``)."""
        if index is not None:
            if len(self.layers) <= index:
                raise ValueError(f"Was asked to retrieve layer at index {index} but model "
                                 f"only has {len(self.layers)} layers.")
            return self.layers[index]
        for layer in self.layers:
            if layer.name == name:
                return layer
        raise ValueError(f"No such layer: {name}. Existing layers are: "
                         f"{[layer.name for layer in self.layers]}.")

    # ------------------------------------------------------------------- weights
    def _gather(self, attribute: str) -> list:
        own = list(getattr(super(), attribute))
        return _unique_by_identity(own + [w for layer in self.layers
                                          for w in getattr(layer, attribute)])

    @property
    def trainable_weights(self) -> list:
        return self._gather("trainable_weights") if self.trainable else []

    @property
    def non_trainable_weights(self) -> list:
        if self.trainable:
            return self._gather("non_trainable_weights")
        return _unique_by_identity(self._gather("trainable_weights") +
                                   self._gather("non_trainable_weights"))

    @property
    def weights(self) -> list:
        """Each layer's weights in turn (its trainable ones, then the others)."""
        own = self._trainable_weights + self._non_trainable_weights
        return _unique_by_identity(own + [w for layer in self.layers for w in layer.weights])

    trainable_variables = trainable_weights
    non_trainable_variables = non_trainable_weights
    variables = weights

    @property
    def updates(self) -> list:
        return _unique_by_identity(list(self._updates) +
                                   [u for layer in self.layers for u in layer.updates])

    @property
    def losses(self) -> list:
        return _unique_by_identity(list(self._losses) +
                                   [t for layer in self.layers for t in layer.losses])

    def count_params(self) -> int:
        return sum(int(np.prod(w.shape.as_list())) for w in self.weights)

    # ------------------------------------------------------------------- calling
    def build(self, input_shape) -> None:
        """A functional model is built already; a subclassed one builds on its call."""
        self.built = True

    def _build_on(self, graph, x, first) -> None:
        # a model's weights come from its layers as they are called
        self.built = True

    def call(self, inputs, training=None):
        """Replays the model's layers on ``inputs`` (the functional graph)."""
        if not self._nodes and not self.inputs:
            raise ValueError(f"Model {self.name} has no layers to call: subclass Model and "
                             "define `call`, or give `inputs` and `outputs`.")
        given = flatten_tensors(inputs)
        if len(given) != len(self.inputs):
            raise ValueError(f"Layer \"{self.name}\" expects {len(self.inputs)} input(s), but "
                             f"it received {len(given)} input tensors.")
        mapping = {id(t): new for t, new in zip(self.inputs, given, strict=True)}
        for node in self._nodes:
            args = [mapping[id(t)] for t in node.inputs]
            kwargs = dict(node.arguments)
            if training is not None and node.layer._call_takes_training:
                kwargs["training"] = training
            made = node.layer(args[0] if node.single_input else args, *node.positional,
                              **kwargs)
            for old, new in zip(node.outputs, flatten_tensors(made), strict=True):
                mapping[id(old)] = new
        results = [mapping[id(t)] for t in self.outputs]
        return results[0] if self._single_output else results

    def _build_from_data(self, arrays: list) -> None:
        """Makes a subclassed (or unbuilt) model's inputs from data shapes and calls it."""
        if self.inputs:
            return
        with get_default_graph().atomic():
            inputs = [Input(batch_shape=(None, *np.shape(a)[1:]), dtype=_input_dtype(a))
                      for a in arrays]
            outputs = self(inputs[0] if len(inputs) == 1 else inputs)
        self._single_output = not isinstance(outputs, (list, tuple))
        self.inputs, self.outputs = inputs, flatten_tensors(outputs)

    # ------------------------------------------------------------------ weight files
    def _checkpoint_variables(self) -> dict:
        """Weights keyed by position, as keras's TF-format checkpoints key them
        (``layer_with_weights-0/kernel/.ATTRIBUTES/VARIABLE_VALUE``)."""
        keyed = {}
        for index, layer in enumerate(lay for lay in self.layers if lay.weights):
            for weight in layer.weights:
                short = weight.op.name.split("/")[-1]
                keyed[f"layer_with_weights-{index}/{short}/.ATTRIBUTES/VARIABLE_VALUE"] = weight
        return keyed

    def save_weights(self, filepath: str, overwrite: bool = True,
                     save_format: Optional[str] = None, options=None) -> None:
        """Writes the weights as a TF checkpoint (``filepath`` is its prefix), or as
        keras's HDF5 file for ``.h5``/``.hdf5``/``.keras`` paths (with h5py)."""
        if options is not None:
            raise ValueError("save_weights: options is not supported")
        if save_format not in (None, "tf", "h5"):
            raise ValueError(f"Unknown format. Received: `save_format`={save_format}. "
                             "Was expecting one of {\"tf\", \"h5\"}.")
        directory = os.path.dirname(filepath)
        if directory:
            os.makedirs(directory, exist_ok=True)
        if _is_h5(filepath, save_format):
            with self._weights_graph().as_default():
                hdf5.save_weights(self, filepath)
            return
        with self._weights_graph().as_default():
            saver = Saver(var_list=self._checkpoint_variables(), max_to_keep=None)
            saver.save(K.get_session(), filepath)

    def load_weights(self, filepath: str, by_name: bool = False, skip_mismatch: bool = False,
                     options=None) -> None:
        """Reads weights ``save_weights`` wrote (matched by layer order)."""
        for argument, value in (("by_name", by_name), ("skip_mismatch", skip_mismatch),
                                ("options", options)):
            if value:
                raise ValueError(f"load_weights: {argument} is not supported")
        with self._weights_graph().as_default():
            if _is_h5(filepath, None):
                hdf5.load_weights(self, filepath)
                return
            saver = Saver(var_list=self._checkpoint_variables(), max_to_keep=None)
            saver.restore(K.get_session(), filepath)

    def _weights_graph(self):
        weights = self.weights
        if not weights:
            raise ValueError("Unable to save/load weights: the model has no weights yet "
                             "(build it first).")
        return weights[0].graph

    def summary(self, line_length: Optional[int] = None, positions=None,
                print_fn=None, **kwargs) -> None:
        """Prints the layer table keras prints (name, type, output shape, parameters)."""
        if kwargs:
            raise ValueError(f"summary: argument {sorted(kwargs)[0]!r} is not supported")
        if not self.built or (not self.inputs and not self._tracked):
            raise ValueError("This model has not yet been built. Build the model first by "
                             "calling `build()` or by calling the model on a batch of data.")
        for line in model_summary(self, line_length, positions).split("\n"):
            (print_fn or print)(line)


def _input_dtype(array) -> str:
    kind = np.asarray(array).dtype
    return K.floatx() if kind.kind == "f" else kind.name


def _is_h5(filepath: str, save_format: Optional[str]) -> bool:
    return save_format == "h5" or str(filepath).endswith(_H5_SUFFIXES)


class Sequential(Model):
    """A stack of layers, each taking the previous one's output."""

    def __init__(self, layers: Optional[list] = None, name: Optional[str] = None):
        super().__init__(name=name)
        self._stack: list = []
        self._current: Optional[Tensor] = None
        for layer in layers or []:
            self.add(layer)

    @property
    def layers(self) -> list:
        return list(self._stack)

    def add(self, layer) -> None:
        """Appends ``layer`` (applied at once when the model's input is known)."""
        if isinstance(layer, Tensor) and keras_history(layer) is not None:
            layer = keras_history(layer)[0]
        if not isinstance(layer, Layer):
            raise TypeError("The added layer must be an instance of class Layer. Received: "
                            f"layer={layer} of type {type(layer)}.")
        if any(layer.name == kept.name for kept in self._stack):
            raise ValueError(f"All layers added to a Sequential model should have unique "
                             f"names. Name \"{layer.name}\" is already the name of a layer "
                             "in this model. Update the `name` argument to pass a unique "
                             "name.")
        if isinstance(layer, InputLayer):
            if self._stack or self._current is not None:
                raise ValueError("An InputLayer can only be the first layer of a Sequential "
                                 "model.")
            self._current = layer._inbound_nodes[0].outputs[0]
            self.inputs = [self._current]
            return
        current = self._current
        with get_default_graph().atomic():  # a layer that fails to apply is not added
            if current is None and not self._stack and layer._batch_input_shape is not None:
                current = Input(batch_shape=layer._batch_input_shape,
                                dtype=layer.dtype or K.floatx(), name=f"{layer.name}_input")
            output = None if current is None else layer(current)
            if isinstance(output, (list, tuple)):
                raise ValueError("All layers in a Sequential model should have a single "
                                 "output tensor. For multi-output layers, use the "
                                 "functional API.")
        self._stack.append(layer)
        if output is not None:
            self.inputs = self.inputs or [current]
            self._current, self.outputs, self.built = output, [output], True

    def pop(self) -> None:
        """Removes the last layer (the model's output becomes the one before)."""
        if not self._stack:
            raise TypeError("There are no layers in the model.")
        self._stack.pop()
        if self.inputs:
            self.outputs = [self._stack[-1].output] if self._stack else []
            self._current = self.outputs[0] if self.outputs else self.inputs[0]

    def build(self, input_shape=None) -> None:
        """Builds the layer graph for inputs of ``input_shape`` (batch axis included)."""
        self.built = True
        if input_shape is not None and not self.inputs:
            with get_default_graph().atomic():
                inputs = Input(batch_shape=tuple(input_shape))
                outputs = self(inputs)
            self.inputs, self.outputs = [inputs], [outputs]

    def call(self, inputs, training=None):
        x = inputs
        for layer in self._stack:
            kwargs = {"training": training} if training is not None and \
                layer._call_takes_training else {}
            x = layer(x, **kwargs)
        return x


# ----------------------------------------------------------------------- summary
def _shape_text(layer: Layer, model: Model) -> str:
    if not model._nodes and not isinstance(model, Sequential):
        return "multiple"  # a subclassed model: its layers are not a graph of nodes
    nodes = [n for n in layer._inbound_nodes if _node_in_model(n, model)]
    if len(layer._inbound_nodes) > 1 and len(nodes) != 1:
        return "multiple"
    node = nodes[0] if nodes else (layer._inbound_nodes[0] if layer._inbound_nodes else None)
    if node is None:
        return "multiple"
    shapes = [_shape_tuple_text(t) for t in node.outputs]
    if isinstance(layer, InputLayer):
        return f"[{', '.join(shapes)}]"
    return shapes[0] if len(shapes) == 1 else f"[{', '.join(shapes)}]"


def _shape_tuple_text(tensor) -> str:
    dims = tensor.shape.as_list() if tensor.shape.ndims is not None else None
    if dims is None:
        return "<unknown>"
    return str(tuple(dims))


def _node_in_model(node: Node, model: Model) -> bool:
    if isinstance(node.layer, InputLayer):
        return any(node.outputs[0] is t for t in model.inputs)
    return any(node is kept for kept in model._nodes) or isinstance(model, Sequential) and \
        any(t is o for o in node.outputs for t in _sequential_outputs(model))


def _sequential_outputs(model: "Sequential") -> list:
    return [layer._inbound_nodes[0].outputs[0] for layer in model._stack
            if layer._inbound_nodes]


def _bytes_text(count: int) -> str:
    size = float(count)
    for unit in ("Byte", "KB", "MB", "GB"):
        if size < 1024 or unit == "GB":
            return f"{size:.2f} {unit}"
        size /= 1024
    return f"{size:.2f} GB"


def _row(fields: list, positions: list) -> list:
    """One table row: each field (a text, or a list of lines) left-aligned in its
    column after one space for the first; a text too wide for its column (two spaces
    kept before the next) continues on the following lines."""
    columns = []
    for i, field in enumerate(fields):
        start = positions[i - 1] if i else 0
        width = positions[i] - start - (2 if i < len(fields) - 1 else 0) - (1 if i == 0 else 0)
        lines = field if isinstance(field, list) else [str(field)]
        columns.append([line[at:at + width] for line in lines
                        for at in range(0, max(len(line), 1), width)])
    rows = []
    for depth in range(max(len(c) for c in columns)):
        line = ""
        for i, column in enumerate(columns):
            start = positions[i - 1] if i else 0
            piece = column[depth] if depth < len(column) else ""
            line = line.ljust(start) + (" " if i == 0 else "") + piece
        rows.append(line.ljust(positions[-1]))
    return rows


def _weight_count(weights: list) -> tuple[int, int]:
    count = sum(int(np.prod(w.shape.as_list())) for w in weights)
    size = sum(int(np.prod(w.shape.as_list())) * w.dtype.base_dtype.size for w in weights)
    return count, size


def _sequential_like(model: Model) -> bool:
    if isinstance(model, Sequential) or not model._nodes:
        return True
    depths: dict = {}
    for node in model._nodes:
        if len(node.inputs) > 1:
            return False
        depths[id(node)] = 0
        for parent in node.parents():
            if parent is not None and id(parent) in depths:
                depths[id(node)] = max(depths[id(node)], depths[id(parent)] + 1)
    values = list(depths.values())
    return len(set(values)) == len(values)


def model_summary(model: Model, line_length: Optional[int] = None,
                  positions=None) -> str:
    """The text of ``model.summary()``."""
    sequential = _sequential_like(model)
    line_length = line_length or (65 if sequential else 98)
    fractions = positions or ([0.45, 0.85, 1.0] if sequential else [0.3, 0.6, 0.7, 1.0])
    columns = [int(line_length * p) if p <= 1 else int(p) for p in fractions]
    header = ["Layer (type)", "Output Shape", "Param #"] + ([] if sequential else
                                                          ["Connected to"])
    lines = [f'Model: "{model.name}"', "_" * line_length, *_row(header, columns),
             "=" * line_length]
    layers = model.layers
    for i, layer in enumerate(layers):
        fields = [f"{layer.name} ({type(layer).__name__})", _shape_text(layer, model),
                  layer.count_params() if layer.built else 0]
        if not sequential:
            fields.append(_connections(layer, model))
        lines += _row(fields, columns)
        lines.append(" " * line_length if i < len(layers) - 1 else " " * line_length)
    trainable, trainable_size = _weight_count(model.trainable_weights)
    frozen, frozen_size = _weight_count(model.non_trainable_weights)
    lines += ["=" * line_length,
              f"Total params: {trainable + frozen} "
              f"({_bytes_text(trainable_size + frozen_size)})",
              f"Trainable params: {trainable} ({_bytes_text(trainable_size)})",
              f"Non-trainable params: {frozen} ({_bytes_text(frozen_size)})",
              "_" * line_length]
    return "\n".join(lines)


def _connections(layer: Layer, model: Model) -> list:
    """The "Connected to" lines: ``['dense[0][0]',`` then one source a line."""
    names = []
    for node in layer._inbound_nodes:
        if not _node_in_model(node, model) or isinstance(layer, InputLayer):
            continue
        for tensor in node.inputs:
            source, node_index, tensor_index = keras_history(tensor)
            names.append(f"'{source.name}[{node_index}][{tensor_index}]'")
    if not names:
        return ["[]"]
    return [("[" if i == 0 else " ") + name + ("]" if i == len(names) - 1 else ",")
            for i, name in enumerate(names)]
