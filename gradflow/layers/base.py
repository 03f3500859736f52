"""``tf.layers.Layer``: the base class TF1 layers (and users' own layers) derive from.

A layer owns a variable scope, made on its first call: the name given, or the class
name in snake case made unique (``dense``, ``dense_1``...). Its weights come from the
variable store inside that scope (``dense/kernel:0``), its ops are built in the scope's
name scope (``dense/MatMul``); a second call shares the weights and builds under the same
name scope (``dense/MatMul_1``). ``reuse=True`` with a name shares another layer's
weights, as ``tf.variable_scope`` does. Weight regularizer outputs and ``add_loss``
tensors go to ``GraphKeys.REGULARIZATION_LOSSES``.
"""
from __future__ import annotations

import re
from typing import Any, Callable, Optional

from gradflow.framework import dtypes
from gradflow.framework.constant import convert_to_tensor
from gradflow.framework.graph import (GraphKeys, Tensor, add_to_collection,
                                      get_default_graph, name_scope)
from gradflow.framework.tensor_shape import TensorShape
from gradflow.ops import array
from gradflow.ops import math as math_ops
from gradflow.variables import VariableScope, get_variable, variable_scope

__all__ = ["Layer", "InputSpec"]

_LAYER_KWARGS = ("_scope", "_reuse", "activity_regularizer")


def to_snake_case(name: str) -> str:
    """``Conv2DTranspose`` -> ``conv2d_transpose``, as TF names its layers' scopes."""
    words = re.sub(r"(.)([A-Z][a-z0-9]+)", r"\1_\2", name)
    snake = re.sub(r"([a-z])([A-Z])", r"\1_\2", words).lower()
    return "private" + snake if snake.startswith("_") else snake


class InputSpec:
    """What a layer accepts: ``dtype``, ``shape``, ``ndim``, ``max_ndim``, ``min_ndim`` and
    ``axes`` ({axis: size}); checked on every call."""

    def __init__(self, dtype=None, shape=None, ndim: Optional[int] = None,
                 max_ndim: Optional[int] = None, min_ndim: Optional[int] = None,
                 axes: Optional[dict] = None):
        self.dtype = None if dtype is None else dtypes.as_dtype(dtype).name
        self.shape = None if shape is None else tuple(shape)
        self.ndim = len(self.shape) if self.shape is not None else ndim
        self.max_ndim = max_ndim
        self.min_ndim = min_ndim
        self.axes = dict(axes or {})

    def __repr__(self) -> str:
        fields = ", ".join(f"{key}={value}" for key, value in vars(self).items()
                           if value not in (None, {}))
        return f"InputSpec({fields})"


def _check_input_spec(layer_name: str, spec: InputSpec, x: Tensor) -> None:
    """Raises ValueError (TF's messages) when ``x`` does not fit ``spec``."""
    ndims = x.shape.ndims
    where = f"Input 0 of layer \"{layer_name}\" is incompatible with the layer: "
    if spec.ndim is not None and ndims is not None and ndims != spec.ndim:
        raise ValueError(f"{where}expected ndim={spec.ndim}, found ndim={ndims}. Full shape "
                         f"received: {x.shape.as_list()}")
    if spec.min_ndim is not None and ndims is not None and ndims < spec.min_ndim:
        raise ValueError(f"{where}expected min_ndim={spec.min_ndim}, found ndim={ndims}. "
                         f"Full shape received: {x.shape.as_list()}")
    if spec.max_ndim is not None and ndims is not None and ndims > spec.max_ndim:
        raise ValueError(f"{where}expected max_ndim={spec.max_ndim}, found ndim={ndims}. "
                         f"Full shape received: {x.shape.as_list()}")
    if spec.dtype is not None and x.dtype.name != spec.dtype:
        raise ValueError(f"{where}expected dtype={spec.dtype}, found dtype={x.dtype.name}")
    if spec.axes and ndims is not None:
        dims = x.shape.as_list()
        for axis, size in spec.axes.items():
            found = dims[int(axis)]
            if size is not None and found is not None and found != size:
                raise ValueError(f"{where}expected axis {axis} of input shape to have value "
                                 f"{size}, but received input with shape {tuple(dims)}")


class Layer:
    """TF1's ``tf.layers.Layer``: subclass it with ``build(input_shape)`` (creating
    weights with ``add_weight``) and ``call(inputs, ...)``; call the object on tensors."""

    def __init__(self, trainable: bool = True, name: Optional[str] = None, dtype=None,
                 **kwargs: Any):
        unknown = sorted(set(kwargs) - set(_LAYER_KWARGS))
        if unknown:
            raise TypeError(f"Keyword argument not understood: {unknown[0]!r}")
        self.trainable = bool(trainable)
        self.built = False
        self.input_spec: Optional[InputSpec] = None
        self.activity_regularizer: Optional[Callable] = kwargs.get("activity_regularizer")
        self._dtype = None if dtype is None else dtypes.as_dtype(dtype).base_dtype
        if isinstance(name, VariableScope):
            self._scope_arg: Any = name
            name = name.name.split("/")[-1]
        else:
            self._scope_arg = kwargs.get("_scope")
        self._base_name = name or to_snake_case(type(self).__name__)
        self._name = name
        self._reuse = kwargs.get("_reuse")
        self._scope: Optional[VariableScope] = None
        self._trainable_weights: list = []
        self._non_trainable_weights: list = []
        self._updates: list = []
        self._losses: list = []
        self._graph = None

    # ------------------------------------------------------------------ properties
    @property
    def name(self) -> str:
        """The layer's name: the one given, else its scope's last part once called."""
        if self._name is not None:
            return self._name
        return self._scope.name.split("/")[-1] if self._scope is not None else self._base_name

    @property
    def dtype(self) -> Optional[str]:
        return None if self._dtype is None else self._dtype.name

    @property
    def scope_name(self) -> str:
        if self._scope is None:
            raise ValueError("No name available for layer scope because the layer \""
                             f"{self.name}\" has not been used yet. The scope name is "
                             "determined the first time the layer instance is called. You "
                             "must therefore call the layer before querying `scope_name`.")
        return self._scope.name

    @property
    def graph(self):
        return self._graph

    @property
    def trainable_weights(self) -> list:
        return list(self._trainable_weights) if self.trainable else []

    @property
    def non_trainable_weights(self) -> list:
        if self.trainable:
            return list(self._non_trainable_weights)
        return self._trainable_weights + self._non_trainable_weights

    @property
    def weights(self) -> list:
        return self.trainable_weights + self.non_trainable_weights

    trainable_variables = trainable_weights
    non_trainable_variables = non_trainable_weights
    variables = weights

    @property
    def updates(self) -> list:
        return list(self._updates)

    @property
    def losses(self) -> list:
        return list(self._losses)

    # -------------------------------------------------------------------- weights
    def add_weight(self, name: str, shape=None, dtype=None, initializer=None,
                   regularizer: Optional[Callable] = None, trainable: Optional[bool] = None,
                   constraint: Optional[Callable] = None, use_resource=None,
                   synchronization=None, aggregation=None, partitioner=None,
                   getter=None, **kwargs: Any):
        """A variable ``<scope>/<name>`` from the variable store (shared when the scope
        reuses); a new variable's regularizer output goes to REGULARIZATION_LOSSES."""
        if kwargs:
            raise TypeError(f"Unknown keyword argument: {sorted(kwargs)[0]!r}")
        if partitioner is not None:
            raise ValueError(f"add_weight: partitioner={partitioner!r} is not supported "
                             "(partitioned variables are not built)")
        # as in TF1, a non-trainable layer makes non-trainable variables
        trainable = (True if trainable is None else bool(trainable)) and self.trainable
        dtype = dtypes.as_dtype(dtype or self._dtype or dtypes.float32)
        graph = get_default_graph()
        while graph.outer_graph is not None:  # called in a loop or cond: variables live outside
            graph = graph.outer_graph
        existing = set(graph.get_collection(GraphKeys.GLOBAL_VARIABLES)) | \
            set(graph.get_collection(GraphKeys.LOCAL_VARIABLES))
        self._set_scope()
        reuse = True if self.built else self._reuse
        with variable_scope(self._scope, reuse=reuse, auxiliary_name_scope=False) as scope, \
                name_scope(scope.original_name_scope):
            extra = {key: value for key, value in (("synchronization", synchronization),
                                                   ("aggregation", aggregation))
                     if value is not None}
            variable = (getter or get_variable)(
                name, shape=shape, dtype=dtype, initializer=initializer, trainable=trainable,
                constraint=constraint, use_resource=use_resource, **extra)
            if regularizer is not None and variable not in existing:
                self._regularize(name, variable, regularizer)
        created_trainable = variable in graph.get_collection(GraphKeys.TRAINABLE_VARIABLES)
        target = self._trainable_weights if trainable and created_trainable else \
            self._non_trainable_weights
        if not any(variable is w for w in self._trainable_weights + self._non_trainable_weights):
            target.append(variable)
            graph.on_rollback(lambda: _remove_all([variable], target))
        return variable

    add_variable = add_weight

    def _regularize(self, name: str, variable, regularizer: Callable) -> None:
        with name_scope(name + "/Regularizer"):
            loss = regularizer(variable)
        if loss is not None:
            self.add_loss(loss)

    def add_loss(self, losses, inputs=None) -> None:
        """Adds loss tensors to the layer and to ``GraphKeys.REGULARIZATION_LOSSES``."""
        items = [losses] if not isinstance(losses, (list, tuple)) else list(losses)
        items = [convert_to_tensor(t) for t in items if t is not None]
        self._losses.extend(items)
        get_default_graph().on_rollback(lambda: _remove_all(items, self._losses))
        for t in items:
            add_to_collection(GraphKeys.REGULARIZATION_LOSSES, t)

    def add_update(self, updates, inputs=None) -> None:
        """Records update ops (e.g. moving averages) in the layer's ``updates``; calling
        the layer adds them to ``GraphKeys.UPDATE_OPS``."""
        items = [updates] if not isinstance(updates, (list, tuple)) else list(updates)
        items = [u.op if isinstance(u, Tensor) else u for u in items if u is not None]
        self._updates.extend(items)
        get_default_graph().on_rollback(lambda: _remove_all(items, self._updates))

    def get_losses_for(self, inputs) -> list:
        return self.losses

    def get_updates_for(self, inputs) -> list:
        return self.updates

    # --------------------------------------------------------------------- calling
    def build(self, input_shape: TensorShape) -> None:
        """Creates the layer's weights; subclasses override it (the default makes none)."""
        self.built = True

    def call(self, inputs, **kwargs):
        """The layer's computation; subclasses override it (the default is identity)."""
        return inputs

    def _set_scope(self, scope=None) -> None:
        if self._scope is not None:
            return
        chosen = scope if scope is not None else self._scope_arg
        if self._reuse:
            opened = variable_scope(chosen if chosen is not None else self._base_name)
        else:
            opened = variable_scope(chosen, default_name=self._base_name)
        with opened as captured:
            self._scope = captured
        get_default_graph().on_rollback(self._forget_scope)

    def _forget_scope(self) -> None:
        self._scope = None

    def __call__(self, inputs, *args, **kwargs):
        """Builds the layer on its first call, then applies ``call``; the graph is left
        unchanged if anything raises."""
        scope = kwargs.pop("scope", None)
        graph = get_default_graph()
        with graph.atomic():
            was_built = self.built
            graph.on_rollback(lambda: setattr(self, "built", was_built))
            self._set_scope(scope)
            reuse = True if self.built else self._reuse
            with variable_scope(self._scope, reuse=reuse, auxiliary_name_scope=False) as vs, \
                    name_scope(vs.original_name_scope):
                x = as_layer_inputs(inputs)
                first = x[0] if isinstance(x, list) else x
                if self.input_spec is not None and isinstance(first, Tensor):
                    _check_input_spec(self.name, self.input_spec, first)
                if not self.built:
                    if self._dtype is None and isinstance(first, Tensor):
                        self._dtype = first.dtype.base_dtype
                    self._graph = graph
                    self.build(input_shapes(x))
                    self.built = True
                outputs = self.call(x, *args, **kwargs)
                if self.activity_regularizer is not None:
                    self._regularize_activity(outputs)
            listed = graph.get_collection(GraphKeys.UPDATE_OPS)
            for update in self._updates:
                if not any(update is u for u in listed):
                    add_to_collection(GraphKeys.UPDATE_OPS, update)
            return outputs

    def _regularize_activity(self, outputs) -> None:
        """Adds regularizer(output) / batch size to the layer's losses, as TF1 does."""
        with name_scope("ActivityRegularizer"):
            for output in outputs if isinstance(outputs, (list, tuple)) else [outputs]:
                loss = self.activity_regularizer(output)
                batch = math_ops.cast(array.shape(output)[0], loss.dtype)
                self.add_loss(math_ops.truediv(loss, batch))

    def apply(self, inputs, *args, **kwargs):
        """``__call__`` under its TF1 name."""
        return self.__call__(inputs, *args, **kwargs)

    def count_params(self) -> int:
        if not self.built:
            raise ValueError(f"You tried to call `count_params` on layer {self.name}, but the "
                             "layer isn't built. You can build it manually via: "
                             f"`{self.name}.build(batch_input_shape)`.")
        return sum(int(TensorShape(v.shape).num_elements()) for v in self.weights)

    def get_config(self) -> dict:
        return {"name": self.name, "trainable": self.trainable, "dtype": self.dtype}


def _remove_all(items: list, from_list: list) -> None:
    """Undoes appending ``items`` to ``from_list`` (when a failing call is rolled back)."""
    for item in items:
        if any(item is kept for kept in from_list):
            from_list.remove(item)


def as_layer_inputs(inputs):
    """A layer call's inputs as tensors (a list or tuple stays a list)."""
    if isinstance(inputs, (list, tuple)):
        return [convert_to_tensor(t) for t in inputs]
    return convert_to_tensor(inputs)


def input_shapes(inputs):
    """The static shape of each input (a list for a list of inputs)."""
    if isinstance(inputs, list):
        return [t.shape for t in inputs]
    return inputs.shape

