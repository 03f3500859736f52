"""The dataflow graph: ``Graph``, ``Operation`` and ``Tensor``.

A Graph owns its ops in creation order; an op's inputs always exist before it, so
creation order is a topological order. Scoping state (name scope, device, colocation,
control dependencies) is per thread, as in TF1. Every structural change is made under
the graph's mutation lock, and :meth:`Graph.atomic` undoes everything a failed call
added, so a raising public function leaves the graph as it found it.
"""
from __future__ import annotations

import contextlib
import gc
import re
import threading
from typing import Any, Callable, Iterator, Optional, Sequence

from gradflow.framework import device_spec, errors
from gradflow.framework import dtypes as _dtypes
from gradflow.framework.default_session import run_in_default_session
from gradflow.framework.registry import get_op_def
from gradflow.framework.tensor_shape import TensorShape, as_shape

__all__ = [
    "Graph", "Operation", "Tensor", "GraphKeys", "get_default_graph", "reset_default_graph",
    "name_scope", "op_scope", "graph_of", "device", "colocate_with", "control_dependencies",
    "op_scope_graph",
    "get_collection", "get_collection_ref", "add_to_collection",
]

_VALID_OP_NAME = re.compile(r"^[A-Za-z0-9.][A-Za-z0-9_.\\/>-]*$")
_VALID_SCOPE_NAME = re.compile(r"^[A-Za-z0-9_.\\/>-]*$")
_valid_names: set = set()  # op names already checked against _VALID_OP_NAME
_valid_scope_names: set = set()  # scope names already checked against _VALID_SCOPE_NAME


class GraphKeys:
    """Standard collection names (TF1's ``tf.GraphKeys``)."""

    GLOBAL_VARIABLES = "variables"
    LOCAL_VARIABLES = "local_variables"
    METRIC_VARIABLES = "metric_variables"
    MODEL_VARIABLES = "model_variables"
    TRAINABLE_VARIABLES = "trainable_variables"
    MOVING_AVERAGE_VARIABLES = "moving_average_variables"
    CONCATENATED_VARIABLES = "concatenated_variables"
    TRAINABLE_RESOURCE_VARIABLES = "trainable_resource_variables"
    GLOBAL_STEP = "global_step"
    EVAL_STEP = "eval_step"
    UPDATE_OPS = "update_ops"
    LOSSES = "losses"
    REGULARIZATION_LOSSES = "regularization_losses"
    WEIGHTS = "weights"
    BIASES = "biases"
    ACTIVATIONS = "activations"
    SUMMARIES = "summaries"
    SUMMARY_OP = "summary_op"
    QUEUE_RUNNERS = "queue_runners"
    TABLE_INITIALIZERS = "table_initializer"
    ASSET_FILEPATHS = "asset_filepaths"
    SAVERS = "savers"
    SAVEABLE_OBJECTS = "saveable_objects"
    RESOURCES = "resources"
    LOCAL_RESOURCES = "local_resources"
    TRAIN_OP = "train_op"
    INIT_OP = "init_op"
    LOCAL_INIT_OP = "local_init_op"
    READY_OP = "ready_op"
    READY_FOR_LOCAL_INIT_OP = "ready_for_local_init_op"
    COND_CONTEXT = "cond_context"
    WHILE_CONTEXT = "while_context"
    VARIABLES = GLOBAL_VARIABLES


class Tensor:
    """One output of an Operation: a symbolic handle to a value computed by a Session.

    Tensors hash and compare by identity (``==`` is identity, as in TF1 graph mode);
    arithmetic operators build new ops.
    """

    __slots__ = ("_op", "_value_index", "_dtype", "_shape", "_consumers")
    __array_priority__ = 100

    def __init__(self, op: "Operation", value_index: int, dtype: _dtypes.DType,
                 shape: TensorShape):
        self._op = op
        self._value_index = value_index
        self._dtype = dtype
        self._shape = shape
        self._consumers: list[Operation] = []

    @property
    def op(self) -> "Operation":
        return self._op

    @property
    def value_index(self) -> int:
        return self._value_index

    @property
    def dtype(self) -> _dtypes.DType:
        return self._dtype

    @property
    def graph(self) -> "Graph":
        return self._op._graph

    @property
    def name(self) -> str:
        return f"{self._op._name}:{self._value_index}"

    @property
    def device(self) -> str:
        return self._op._device

    @property
    def shape(self) -> TensorShape:
        return self._shape

    def get_shape(self) -> TensorShape:
        return self._shape

    def set_shape(self, shape) -> None:
        """Refines the static shape; ValueError if ``shape`` contradicts what is known."""
        shape = as_shape(shape)
        if shape._dims == self._shape._dims:
            return
        if not self._shape.is_compatible_with(shape):
            raise ValueError(
                f"Tensor '{self.name}' has shape {self._shape}, which is incompatible with "
                f"the shape {shape} passed to set_shape")
        graph = self._op._graph
        if graph._undo_log is not None:  # inside a transaction: a failure restores it
            previous = self._shape
            graph._undo_log.append(lambda: setattr(self, "_shape", previous))
        self._shape = self._shape.merge_with(shape)

    def consumers(self) -> list["Operation"]:
        return list(self._consumers)

    def eval(self, feed_dict=None, session=None):
        """Runs this tensor in ``session`` (default: the default session)."""
        return run_in_default_session(self, feed_dict, session)

    def __repr__(self) -> str:
        return f"<tf.Tensor '{self.name}' shape={self._shape} dtype={self._dtype.name}>"

    def __str__(self) -> str:
        return f'Tensor("{self.name}", shape={self._shape}, dtype={self._dtype.name})'

    __hash__ = object.__hash__

    def __eq__(self, other):
        return self is other

    def __ne__(self, other):
        return self is not other

    def __bool__(self):
        raise errors.OperatorNotAllowedInGraphError(
            "Using a symbolic `tf.Tensor` as a Python `bool` is not allowed. Use "
            "`if t is not None:` instead of `if t:` to test if a tensor is defined, and use "
            "ops like tf.cond to execute subgraphs conditioned on the value of a tensor.")

    def __iter__(self):
        raise errors.OperatorNotAllowedInGraphError(
            f"Iterating over a symbolic `tf.Tensor` is not allowed: Tensor {self.name} is not "
            "iterable in graph mode; use tf.unstack to split it along its first axis.")

    def __len__(self):
        raise TypeError(f"len is not well defined for a symbolic Tensor ({self.name}). Please "
                        "call `x.shape` rather than `len(x)` for shape information.")

    def __array__(self, dtype=None, copy=None):
        raise NotImplementedError(
            f"Cannot convert a symbolic Tensor ('{self.name}') to a numpy array; "
            "run it in a Session to get its value.")


class Operation:
    """A node of the graph: a typed computation with input and output tensors."""

    __slots__ = ("_graph", "_id", "_name", "_type", "_op_def", "_inputs", "_outputs",
                 "_control_inputs", "_control_outputs", "_device", "_attrs", "_original_op")

    def __init__(self, graph: "Graph", op_id: int, name: str, op_def, inputs: tuple,
                 attrs: dict, device: str):
        self._graph = graph
        self._id = op_id
        self._name = name
        self._type = op_def.type
        self._op_def = op_def
        self._inputs = inputs
        self._outputs: list[Tensor] = []
        self._control_inputs: list[Operation] = []
        self._control_outputs: list[Operation] = []
        self._device = device
        self._attrs = attrs
        self._original_op: Optional[Operation] = None

    @property
    def name(self) -> str:
        return self._name

    @property
    def type(self) -> str:
        return self._type

    @property
    def id(self) -> int:
        """Creation index within the graph; inputs always have smaller ids."""
        return self._id

    @property
    def op_def(self):
        return self._op_def

    @property
    def graph(self) -> "Graph":
        return self._graph

    @property
    def inputs(self) -> tuple:
        return self._inputs

    @property
    def outputs(self) -> list:
        return self._outputs

    def values(self) -> tuple:
        return tuple(self._outputs)

    @property
    def control_inputs(self) -> list:
        return list(self._control_inputs)

    @property
    def control_outputs(self) -> list:
        return list(self._control_outputs)

    @property
    def device(self) -> str:
        return self._device

    def _set_device(self, device) -> None:
        """Places the op on ``device`` (a string or DeviceSpec), as TF1's method of this
        name: device functions of nested scopes see the device placed so far."""
        self._device = device.to_string() if isinstance(device, device_spec.DeviceSpec) \
            else device

    @property
    def original_op(self) -> Optional["Operation"]:
        return self._original_op

    @property
    def attrs(self) -> dict:
        """All attributes, internal ones (``_class``, ``_XlaScope``...) included."""
        return dict(self._attrs)

    @property
    def gradient_op_type(self) -> str:
        """The type whose gradient applies: the op's own, unless overridden."""
        return self._attrs.get("_gradient_op_type", self._type)

    def attr_or(self, name: str, default: Any = None) -> Any:
        """The attr ``name``, or ``default`` if the op has none."""
        return self._attrs.get(name, default)

    def get_attr(self, name: str) -> Any:
        try:
            return self._attrs[name]
        except KeyError:
            raise ValueError(f"Operation '{self._name}' has no attr named '{name}'.") from None

    def set_attr(self, name: str, value: Any) -> None:
        """Changes an attr after creation; cached execution plans are recompiled."""
        self._graph.set_op_attr(self, name, value)

    def colocation_groups(self) -> list[bytes]:
        groups = self._attrs.get("_class")
        if groups:
            return list(groups)
        return [b"loc:@" + self._name.encode()]

    def add_control_input(self, op: "Operation") -> None:
        """Adds a control edge ``op -> self`` (``op`` must run first)."""
        self._graph._add_control_edge(op, self)

    def add_control_inputs(self, ops: Sequence["Operation"]) -> None:
        self._graph._add_control_edges(ops, self)

    def run(self, feed_dict=None, session=None) -> None:
        """Runs this op in ``session`` (default: the default session)."""
        run_in_default_session(self, feed_dict, session)

    def __repr__(self) -> str:
        return f"<tf.Operation '{self._name}' type={self._type}>"

    @property
    def node_def(self):
        """The op as a ``NodeDef`` protocol buffer (what TF1's ``op.node_def`` gives)."""
        if _node_def_converter is None:
            raise RuntimeError("gradflow.io.graph_def is not loaded (import gradflow)")
        return _node_def_converter(self)

    def __str__(self) -> str:
        """The NodeDef's text, attrs in the order TF1 prints them (by name, descending)."""
        node = self.node_def
        printed = type(node)(name=node.name, op=node.op, device=node.device, input=node.input)
        for key in sorted(node.attr, reverse=True):
            printed.attr[key].CopyFrom(node.attr[key])
        return str(printed)


class _ControlScope:
    """One ``control_dependencies`` block: its control ops and the ops made inside it."""

    __slots__ = ("control_ops", "created")

    def __init__(self, control_ops: list):
        self.control_ops = control_ops
        self.created: set = set()


class _ScopeState:
    """The per-thread scoping state of one graph."""

    __slots__ = ("name_stack", "device", "colocation", "control_scopes", "original_op",
                 "gradient_overrides", "attr_scope")

    def __init__(self):
        self.name_stack = ""
        self.device: Any = ""
        self.colocation: Optional[Operation] = None
        self.control_scopes: list[_ControlScope] = []
        self.original_op: Optional[Operation] = None
        self.gradient_overrides: dict[str, str] = {}
        self.attr_scope: dict[str, Any] = {}


class Graph:
    """A dataflow graph: ops in creation order, unique names, collections, scopes."""

    def __init__(self):
        self._ops_by_name: dict[str, Operation] = {}
        self._names_in_use: dict[str, int] = {}
        self._next_id = 0
        self._collections: dict[str, list] = {}
        self._lock = threading.RLock()
        self._local = threading.local()
        self._finalized = False
        self._undo_log: Optional[list] = None  # see atomic()
        self._functions: dict[str, Any] = {}
        self._control_edge_version = 0
        self.seed: Optional[int] = None  # graph-level random seed (gf.set_random_seed)
        self._extensions: dict[str, Any] = {}  # see extension()
        self.outer_graph: Optional[Graph] = None

    # ----------------------------------------------------------------- basic queries
    @property
    def version(self) -> int:
        return self._next_id

    @property
    def control_edge_version(self) -> int:
        """Counts control edges and attr changes made after op creation (they change plans)."""
        return self._control_edge_version

    @property
    def finalized(self) -> bool:
        return self._finalized

    def get_operations(self) -> list[Operation]:
        with self._lock:
            return list(self._ops_by_name.values())

    def operations_since(self, version: int) -> list[Operation]:
        """Ops created since ``graph.version`` was ``version`` (cost: their number only)."""
        recent = []
        with self._lock:
            for op in reversed(self._ops_by_name.values()):
                if op._id < version:
                    break
                recent.append(op)
        recent.reverse()
        return recent

    def num_ops(self) -> int:
        return len(self._ops_by_name)

    def get_operation_by_name(self, name: str) -> Operation:
        if not isinstance(name, str):
            raise TypeError(f"Operation names are strings (or similar), not {type(name).__name__}.")
        return self.as_graph_element(name, allow_tensor=False, allow_operation=True)

    def get_tensor_by_name(self, name: str) -> Tensor:
        if not isinstance(name, str):
            raise TypeError(f"Tensor names are strings (or similar), not {type(name).__name__}.")
        return self.as_graph_element(name, allow_tensor=True, allow_operation=False)

    def as_graph_element(self, obj, allow_tensor: bool = True, allow_operation: bool = True):
        """Resolves a Tensor, Operation, Variable or name to an element of this graph."""
        if isinstance(obj, str):
            with self._lock:  # never an op of a call still building (it may roll back)
                return self._element_by_name(obj, allow_tensor, allow_operation)
        converter = getattr(obj, "_as_graph_element", None)
        if converter is not None:
            obj = converter()
        if isinstance(obj, Tensor) and allow_tensor:
            if obj.graph is not self:
                raise ValueError(f"Tensor {obj} is not an element of this graph.")
            return obj
        if isinstance(obj, Operation) and allow_operation:
            if obj.graph is not self:
                raise ValueError(f"Operation {obj} is not an element of this graph.")
            return obj
        kinds = " or ".join(k for k, ok in (("Tensor", allow_tensor),
                                             ("Operation", allow_operation)) if ok)
        raise TypeError(f"Can not convert a {type(obj).__name__} into a {kinds}.")

    def _element_by_name(self, name: str, allow_tensor: bool, allow_operation: bool):
        if ":" in name and allow_tensor:
            op_name, _, index = name.rpartition(":")
            try:
                index = int(index)
            except ValueError:
                raise ValueError(f"The name {name!r} looks a like a Tensor name, but is not a "
                                 "valid one. Tensor names must be of the form "
                                 "\"<op_name>:<output_index>\".") from None
            op = self._ops_by_name.get(op_name)
            if op is None:
                raise KeyError(f"The name {name!r} refers to a Tensor which does not exist. "
                               f"The operation, {op_name!r}, does not exist in the graph.")
            if not 0 <= index < len(op._outputs):
                raise KeyError(f"The name {name!r} refers to a Tensor which does not exist. "
                               f"The operation, {op_name!r}, exists but only has "
                               f"{len(op._outputs)} outputs.")
            return op._outputs[index]
        if ":" in name:
            raise ValueError(f"Name {name!r} appears to refer to a Tensor, not a Operation.")
        op = self._ops_by_name.get(name)
        if op is None:
            raise KeyError(f"The name {name!r} refers to an Operation not in the graph.")
        if not allow_operation:
            raise ValueError(f"The name {name!r} refers to an Operation, not a Tensor. Tensor "
                             "names must be of the form \"<op_name>:<output_index>\".")
        return op

    # ------------------------------------------------------------------ op creation
    def create_op(self, op_type: str, inputs: Sequence[Tensor] = (), attrs: Optional[dict] = None,
                  name: Optional[str] = None) -> Operation:
        """Adds an op of a registered type; raises before changing anything if invalid."""
        op_def = get_op_def(op_type)
        attrs = {} if attrs is None else attrs
        with self._lock:
            if self._finalized:
                raise RuntimeError("Graph is finalized and cannot be modified.")
            inputs = tuple(t if type(t) is Tensor and t._op._graph is self
                           else self._own_input(t, op_type, inputs) for t in inputs)
            try:
                output_specs = op_def.infer(inputs, attrs)
            except errors.InvalidShapeError as err:
                raise ValueError(self._shape_error_text(err.core, op_def, name or op_type,
                                                        inputs, attrs) + err.detail) from None
            state = self._scope_state()
            if state.attr_scope:
                attrs = {**state.attr_scope, **attrs}
            if state.gradient_overrides and op_type in state.gradient_overrides:
                attrs["_gradient_op_type"] = state.gradient_overrides[op_type]
            op_name = self._unique_op_name(name or op_type, state)
            op = Operation(self, self._next_id, op_name, op_def, inputs, attrs, "")
            op._outputs = [Tensor(op, i, dtype, shape)
                           for i, (dtype, shape) in enumerate(output_specs)]
            self._place(op, state)  # device functions see the op whole, outputs included
            self._next_id += 1
            op._original_op = state.original_op
            self._link(op)
            if state.control_scopes:
                self._apply_control_scopes(op, state)
            return op

    def _shape_error_text(self, core: str, op_def, name: str, inputs: tuple,
                          attrs: dict) -> str:
        """TF1's words for an op its shape function refused: the node (named as it would
        have been) with its attrs and inputs, then the input shapes."""
        if name.endswith("/"):
            op_name = name[:-1]
        else:
            op_name = self._scope_state().name_stack + name
            taken = self._names_in_use.get(op_name.lower(), 0)
            op_name = f"{op_name}_{taken}" if taken else op_name
        node = Operation(self, -1, op_name, op_def, inputs, attrs, "")  # never added
        described = _node_summary(node) if _node_summary is not None else \
            f"{{{{node {op_name}}}}} = {op_def.type}"
        shapes = ", ".join(_shape_text(t.shape) for t in inputs)
        return f"{core} for '{described}' with input shapes: {shapes}."

    def _own_input(self, value, op_type: str, inputs: Sequence) -> Tensor:
        if not isinstance(value, Tensor):
            raise TypeError(f"Inputs of a {op_type} op must be Tensors, got "
                            f"{type(value).__name__}: {value!r}")
        if value._op._graph is not self:
            beside = next((t for t in inputs if isinstance(t, Tensor) and t._op._graph is self),
                          None)
            if self.outer_graph is None and beside is not None:  # TF's words
                raise ValueError(f"{value} must be from the same graph as {beside} (graphs "
                                 f"are {value._op._graph} and {self}).")
            return self.capture(value)
        return value

    def capture(self, tensor: Tensor) -> Tensor:
        """Makes ``tensor`` of another graph usable here; plain graphs refuse."""
        raise ValueError(f"Tensor {tensor} must be from the same graph as the op being "
                         "created; it belongs to another graph.")

    def _unique_op_name(self, name: str, state: _ScopeState) -> str:
        if type(name) is not str:
            name = name_text(name, "name")
        if name.endswith("/"):  # a scope name taken as the op's exact name (TF1 rule)
            return self._exact_op_name(name[:-1])
        _check_op_name(name)
        return self._uniquify(state.name_stack + name if state.name_stack else name)

    def _exact_op_name(self, name: str) -> str:
        """``name`` itself, which must be valid and not yet an op's (TF1's rule)."""
        _check_op_name(name)
        if name in self._ops_by_name:
            raise ValueError(f"Duplicate node name in graph: '{name}'")
        return name

    def _uniquify(self, full_name: str) -> str:
        key = full_name.lower()
        names = self._names_in_use
        count = names.get(key, 0)
        self._set_name_count(key, count + 1, count or None)
        if count == 0:
            return full_name
        while True:
            candidate = f"{key}_{count}"
            if candidate not in names:
                self._set_name_count(candidate, 1, None)
                return f"{full_name}_{count}"
            count += 1

    def _set_name_count(self, key: str, count: int, previous: Optional[int]) -> None:
        if self._undo_log is not None:  # a plain tuple: cheaper than a closure per name
            self._undo_log.append((key, previous))
        self._names_in_use[key] = count

    def _restore_name_count(self, key: str, previous: Optional[int]) -> None:
        if previous is None:
            self._names_in_use.pop(key, None)
        else:
            self._names_in_use[key] = previous

    def unique_name(self, name: str, mark_as_used: bool = True) -> str:
        """``name`` under the current name scope, suffixed ``_N`` if already taken."""
        name = name_text(name, "name")
        state = self._scope_state()
        full = state.name_stack + name if state.name_stack else name
        if mark_as_used:
            with self._lock:
                return self._uniquify(full)
        key = full.lower()
        count = self._names_in_use.get(key, 0)
        if count == 0:
            return full
        while f"{key}_{count}" in self._names_in_use:
            count += 1
        return f"{full}_{count}"

    def _place(self, op: Operation, state: _ScopeState) -> None:
        colocation = state.colocation
        if colocation is not None:
            op._attrs["_class"] = colocation.colocation_groups()
            op._device = colocation._device
        elif state.device:
            op._set_device(state.device(op) if callable(state.device) else state.device)

    def _link(self, op: Operation) -> None:
        self._ops_by_name[op._name] = op
        for t in op._inputs:
            t._consumers.append(op)

    def _unlink(self, op: Operation) -> None:
        del self._ops_by_name[op._name]
        for t in op._inputs:
            t._consumers.remove(op)
        for c in op._control_inputs:
            c._control_outputs.remove(op)

    def _apply_control_scopes(self, op: Operation, state: _ScopeState) -> None:
        input_ops = {t._op for t in op._inputs}
        sources: dict = {}  # an ordered set: blocks may name an op twice
        for scope in state.control_scopes:
            scope.created.add(op)
            if input_ops & scope.created:
                continue  # an input made inside this block already carries its deps
            for control_op in scope.control_ops:
                if control_op not in input_ops:
                    sources[control_op] = None
        if sources:
            self._add_control_edges(sources, op)

    def set_op_attr(self, op: Operation, name: str, value: Any) -> None:
        """Changes an attr of ``op``; counts as a structural change (plans recompile)."""
        with self._lock:
            missing = object()
            previous = op._attrs.get(name, missing)
            op._attrs[name] = value
            self._control_edge_version += 1
            if self._undo_log is not None:
                self._undo_log.append(lambda: op._attrs.pop(name) if previous is missing
                                      else op._attrs.__setitem__(name, previous))

    def _add_control_edge(self, source: Operation, target: Operation) -> None:
        self._add_control_edges((source,), target)

    def _add_control_edges(self, sources, target: Operation) -> None:
        """Control edges from each of ``sources`` to ``target``, in time linear in both
        (sets, not scans of ``target``'s list, tell the edges it already has)."""
        sources = list(sources)
        for source in sources:
            if source._graph is not self:
                raise ValueError(f"Control input {source.name} must be from the same graph "
                                 f"as {target.name}.")
        existing = target._control_inputs
        if existing:
            present = set(existing)
            sources = [s for s in dict.fromkeys(sources) if s not in present]
        else:
            sources = list(dict.fromkeys(sources))
        if not sources:
            return
        with self._lock:
            start = len(existing)
            existing.extend(sources)
            for source in sources:
                source._control_outputs.append(target)
            self._control_edge_version += 1
            if self._undo_log is not None:
                self._undo_log.append(lambda: _remove_control_edges(sources, target, start))

    # ------------------------------------------------------------ atomicity and locking
    def mutation_lock(self) -> threading.RLock:
        """The lock held while the graph changes; hold it to see a consistent graph."""
        return self._lock

    @contextlib.contextmanager
    def atomic(self) -> Iterator[None]:
        """Undoes everything the block changed in the graph if it raises.

        Ops made inside are recognised by their ids; other changes are logged as they
        happen: name and name-scope counts as ``(key, previous)`` tuples, the rest
        (collection entries, control edges, attrs, functions, static shapes refined by
        ``Tensor.set_shape``) as undo functions.
        """
        with self._lock:
            outermost = self._undo_log is None
            if outermost:
                self._undo_log = []
            mark, first_new_id = len(self._undo_log), self._next_id
            try:
                yield
            except BaseException:
                self._roll_back(mark, first_new_id)
                raise
            finally:
                if outermost:
                    self._undo_log = None

    def _roll_back(self, mark: int, first_new_id: int) -> None:
        log = self._undo_log
        while len(log) > mark:
            entry = log.pop()
            if type(entry) is tuple:
                self._restore_name_count(*entry)
            else:
                entry()
        for op in self.operations_since(first_new_id)[::-1]:
            self._unlink(op)

    def extension(self, key: str, factory: Callable[[], Any]) -> Any:
        """The object ``key`` names on this graph, made by ``factory()`` on first use.

        Where the API floor keeps per-graph state (the TF1 variable store) that lives
        and dies with the graph; not a collection, so no collection listing shows it.
        """
        with self._lock:
            value = self._extensions.get(key)
            if value is None:
                value = self._extensions[key] = factory()
            return value

    def on_rollback(self, undo: Callable[[], None]) -> None:
        """Runs ``undo`` if the enclosing ``atomic()`` block raises; outside one, nothing.

        The hook for state kept beside the graph (the TF1 variable store, its scope
        counts) that must roll back with the ops and names it describes.
        """
        with self._lock:
            if self._undo_log is not None:
                self._undo_log.append(undo)

    def finalize(self) -> None:
        """Makes the graph read-only: creating an op afterwards raises RuntimeError."""
        self._finalized = True

    def _unsafe_unfinalize(self) -> None:
        self._finalized = False

    # ------------------------------------------------------------------- scopes
    def _scope_state(self) -> _ScopeState:
        try:
            return self._local.state
        except AttributeError:
            state = self._local.state = _ScopeState()
            return state

    def get_name_scope(self) -> str:
        return self._scope_state().name_stack.rstrip("/")

    @contextlib.contextmanager
    def name_scope(self, name: Optional[str]) -> Iterator[str]:
        """Opens a name scope; yields its full name ending in '/'.

        A name ending in '/' re-enters that exact scope; None or '' returns to the root.
        """
        state = self._scope_state()
        previous = state.name_stack
        scope = self._scope_name(previous, name)
        state.name_stack = scope
        try:
            yield scope
        finally:
            state.name_stack = previous

    def _scope_name(self, previous: str, name: Optional[str]) -> str:
        """The full name of scope ``name`` opened inside ``previous`` (marked as used)."""
        if not name:
            return ""
        name = name_text(name, "name")
        if name not in _valid_scope_names:
            if not _VALID_SCOPE_NAME.match(name):
                raise ValueError(f"'{name}' is not a valid scope name")
            if len(_valid_scope_names) < 100_000:  # bounded, as _valid_names
                _valid_scope_names.add(name)
        if name.endswith("/"):
            return name
        with self._lock:
            return self._uniquify(previous + name) + "/"

    @contextlib.contextmanager
    def device(self, device_name_or_function) -> Iterator[None]:
        """Places ops created inside on a device (a string, a function of the op, or None)."""
        state = self._scope_state()
        previous = state.device
        state.device = device_spec.nest_device(previous, device_name_or_function)
        try:
            yield
        finally:
            state.device = previous

    @contextlib.contextmanager
    def colocate_with(self, op, ignore_existing: bool = False) -> Iterator[None]:
        """Ops created inside share ``op``'s colocation group and device (None clears)."""
        state = self._scope_state()
        previous = state.colocation
        if op is None:
            if not ignore_existing:
                raise ValueError("Trying to reset colocation (op is None) but "
                                 "ignore_existing is not True")
            state.colocation = None
        else:
            state.colocation = _as_operation(op)
        try:
            yield
        finally:
            state.colocation = previous

    @contextlib.contextmanager
    def control_dependencies(self, control_inputs) -> Iterator[None]:
        """Ops created inside run after ``control_inputs``; None clears outer blocks."""
        state = self._scope_state()
        previous = state.control_scopes
        if control_inputs is None:
            state.control_scopes = []
        else:
            unique: dict = {}  # an ordered set: linear in the number of inputs
            for c in control_inputs:
                op = _as_operation(c)
                if op._graph is not self:
                    raise ValueError(f"Control input {op.name} must be from the same graph.")
                unique[op] = None
            control_ops = list(unique)
            state.control_scopes = previous + [_ControlScope(control_ops)]
        try:
            yield
        finally:
            state.control_scopes = previous

    def gradient_scope(self, op: Operation, extra_attrs: Optional[dict] = None) -> "_GradientScope":
        """Where ``op``'s gradient ops go: scope ``<op name>_grad``, ``original_op=op``.

        One lean context for the hot path of ``gradients`` (entered once per op).
        """
        return _GradientScope(self, op, extra_attrs)

    @contextlib.contextmanager
    def gradient_origin(self, op: Optional[Operation]) -> Iterator[None]:
        """Ops created inside record ``op`` as their ``original_op`` (gradient ops)."""
        state = self._scope_state()
        previous = state.original_op
        state.original_op = op
        try:
            yield
        finally:
            state.original_op = previous

    @contextlib.contextmanager
    def gradient_override_map(self, op_type_map: dict) -> Iterator[None]:
        """Ops of a mapped type created inside use the gradient registered for the new type."""
        if not isinstance(op_type_map, dict):
            raise TypeError("op_type_map must be a dictionary mapping strings to strings")
        for key, value in op_type_map.items():
            if not isinstance(key, str) or not isinstance(value, str):
                raise TypeError("op_type_map must be a dictionary mapping strings to strings")
        state = self._scope_state()
        previous = state.gradient_overrides
        state.gradient_overrides = {**previous, **op_type_map}
        try:
            yield
        finally:
            state.gradient_overrides = previous

    @contextlib.contextmanager
    def attr_scope(self, attrs: dict) -> Iterator[None]:
        """Ops created inside get these extra attrs (used by compile scopes)."""
        state = self._scope_state()
        previous = state.attr_scope
        state.attr_scope = {**previous, **attrs}
        try:
            yield
        finally:
            state.attr_scope = previous

    def current_attr_scope(self) -> dict:
        return dict(self._scope_state().attr_scope)

    def current_device(self):
        return self._scope_state().device

    def current_colocation(self) -> Optional[Operation]:
        return self._scope_state().colocation

    # --------------------------------------------------------------- collections
    def add_to_collection(self, name: str, value) -> None:
        with self._lock:
            bucket = self._collections.setdefault(name, [])
            bucket.append(value)
            if self._undo_log is not None:
                self._undo_log.append(bucket.pop)

    def add_to_collections(self, names, value) -> None:
        for name in ([names] if isinstance(names, str) else set(names)):
            self.add_to_collection(name, value)

    def get_collection_ref(self, name: str) -> list:
        with self._lock:
            return self._collections.setdefault(name, [])

    def get_collection(self, name: str, scope: Optional[str] = None) -> list:
        items = list(self._collections.get(name, ()))
        if scope is None:
            return items
        pattern = re.compile(scope)
        return [item for item in items if getattr(item, "name", None) is not None
                and pattern.match(item.name)]

    def get_all_collection_keys(self) -> list[str]:
        return [k for k, v in self._collections.items() if v]

    def clear_collection(self, name: str) -> None:
        with self._lock:
            self._collections.pop(name, None)

    # ------------------------------------------------------------------ functions
    def add_function(self, name: str, function) -> None:
        with self._lock:
            self._functions[name] = function
            if self._undo_log is not None:
                self._undo_log.append(lambda: self._functions.pop(name, None))

    def get_function(self, name: str):
        graph = self
        while graph is not None:
            if name in graph._functions:
                return graph._functions[name]
            graph = graph.outer_graph
        return None

    # ------------------------------------------------------------- default graph
    @contextlib.contextmanager
    def as_default(self) -> Iterator["Graph"]:
        """Makes this the default graph of the current thread inside the block."""
        stack = _default_graph_stack()
        stack.append(self)
        try:
            yield self
        finally:
            stack.pop()

    def as_graph_def(self, from_version: Optional[int] = None, add_shapes: bool = False):
        """This graph as TensorFlow's ``GraphDef`` protocol buffer (see
        ``gradflow/io/graph_def.py``)."""
        if _graph_def_converter is None:
            raise RuntimeError("gradflow.io.graph_def is not loaded (import gradflow)")
        return _graph_def_converter(self, from_version, add_shapes)

    def is_fetchable(self, element) -> bool:
        return True


class gc_paused:  # noqa: N801 - a context manager used like a function
    """Pauses Python's cyclic garbage collector inside the block.

    Building thousands of ops at once would otherwise trigger full collections that
    walk the entire graph again and again; collection resumes when the block exits.
    """

    __slots__ = ("_was_enabled",)

    def __enter__(self):
        self._was_enabled = gc.isenabled()
        gc.disable()

    def __exit__(self, *exc):
        if self._was_enabled:
            gc.enable()
        return False


class _GradientScope:
    __slots__ = ("_graph", "_op", "_extra_attrs", "_saved")

    def __init__(self, graph: Graph, op: Operation, extra_attrs: Optional[dict]):
        self._graph = graph
        self._op = op
        self._extra_attrs = extra_attrs

    def __enter__(self) -> str:
        graph = self._graph
        state = graph._scope_state()
        self._saved = (state, state.name_stack, state.original_op, state.attr_scope)
        with graph._lock:
            scope = graph._uniquify(state.name_stack + self._op._name + "_grad") + "/"
        state.name_stack = scope
        state.original_op = self._op
        if self._extra_attrs:
            state.attr_scope = {**state.attr_scope, **self._extra_attrs}
        return scope

    def __exit__(self, *exc) -> bool:
        state, state.name_stack, state.original_op, state.attr_scope = self._saved
        return False


# Set by gradflow/io/graph_def.py, which knows the protocol buffers (a floor above this one).
_graph_def_converter: Optional[Callable] = None


def register_graph_def_converter(converter: Callable) -> None:
    """Installs the function behind ``Graph.as_graph_def``."""
    global _graph_def_converter
    _graph_def_converter = converter


_node_def_converter: Optional[Callable] = None
_node_summary: Optional[Callable] = None


def register_node_def_converter(converter: Callable, summary: Callable) -> None:
    """Installs the functions behind ``Operation.node_def`` (and ``str(op)``) and the
    one-line node description of shape errors (``{{node MatMul}} = MatMul[...](a, b)``)."""
    global _node_def_converter, _node_summary
    _node_def_converter, _node_summary = converter, summary


def _shape_text(shape: TensorShape) -> str:
    """A shape as TF1's messages write it: ``[2,?]``, or ``?`` for an unknown rank."""
    dims = shape.as_tuple()
    if dims is None:
        return "?"
    return "[" + ",".join("?" if d is None else str(d) for d in dims) + "]"


def _remove_control_edges(sources: list, target: Operation, start: int) -> None:
    """Undoes ``Graph._add_control_edges``. Undo runs newest first, so the edges are the
    last entries of each list: popped, not searched for."""
    del target._control_inputs[start:]
    for source in sources:
        outputs = source._control_outputs
        if outputs[-1] is target:
            outputs.pop()
        else:
            outputs.remove(target)


def _check_op_name(name: str) -> None:
    if name not in _valid_names:
        if not _VALID_OP_NAME.match(name):
            raise ValueError(f"'{name}' is not a valid node name")
        if len(_valid_names) < 100_000:
            _valid_names.add(name)


def name_text(name, argument: str) -> str:
    """``name`` as a str (bytes decoded as TF1 does); TypeError naming ``argument`` else.

    Every name entering a graph (op names, scope names, unique names) passes here, so a
    non-string ``name=`` to any constructor fails with the same clear error."""
    if isinstance(name, str):
        return name
    if isinstance(name, bytes):
        return name.decode("utf-8")
    raise TypeError(f"`{argument}` must be a string, got {name!r}: expected string or "
                    f"bytes-like object, got '{type(name).__name__}'")


def merge_device(outer, inner) -> str:
    """Merges device names (strings or DeviceSpecs) as TF1: set ``inner`` fields win."""
    return device_spec.merge_device(outer, inner)


def _as_operation(value) -> Operation:
    if isinstance(value, Operation):
        return value
    if isinstance(value, Tensor):
        return value._op
    op = getattr(value, "op", None)
    if isinstance(op, Operation):
        return op
    raise TypeError(f"Can not convert a {type(value).__name__} into an Operation: {value!r}")


# ---------------------------------------------------------------- default graph stack
_global_default_graph: Optional[Graph] = None
_global_lock = threading.Lock()
_thread_state = threading.local()


def _default_graph_stack() -> list:
    try:
        return _thread_state.graphs
    except AttributeError:
        _thread_state.graphs = []
        return _thread_state.graphs


def get_default_graph() -> Graph:
    """The innermost ``as_default`` graph of this thread, else the global default graph."""
    stack = _default_graph_stack()
    if stack:
        return stack[-1]
    global _global_default_graph
    if _global_default_graph is None:
        with _global_lock:
            if _global_default_graph is None:
                _global_default_graph = Graph()
    return _global_default_graph


def reset_default_graph() -> None:
    """Replaces the global default graph with a new one (not inside ``as_default``)."""
    if _default_graph_stack():
        raise AssertionError("Do not use tf.reset_default_graph() to clear nested graphs. "
                             "If you need a cleared graph, exit the nesting and create a "
                             "new graph.")
    global _global_default_graph
    _global_default_graph = Graph()


def op_scope_graph(values) -> Graph:
    """The graph of the first tensor/op/variable among ``values``, else the default."""
    for value in values or ():
        graph = getattr(value, "graph", None)
        if isinstance(graph, Graph):
            return graph
    return get_default_graph()


@contextlib.contextmanager
def name_scope(name: Optional[str], default_name: Optional[str] = None,
               values=None) -> Iterator[str]:
    """TF1's ``tf.name_scope(name, default_name=None, values=None)``."""
    if default_name is not None and not isinstance(default_name, (str, bytes)):
        raise TypeError(f"`default_name` type ({type(default_name)}) is not a string type. "
                        "You likely meant to pass this into the `values` kwarg.")
    if name is None:
        name = default_name
    graph = graph_of(values) if values else get_default_graph()
    if graph is not get_default_graph():
        with graph.as_default(), graph.name_scope(name) as scope:
            yield scope
    else:
        with graph.name_scope(name) as scope:
            yield scope


def graph_of(values, default: Optional[Graph] = None) -> Graph:
    """The graph an op on ``values`` belongs to (TF1's rule).

    The default graph, unless it is a plain graph and a tensor, op or variable among
    ``values`` (or in a list among them) lives in another one; function graphs capture
    foreign tensors instead. ``default``: the default graph, when the caller has it.
    """
    graph = get_default_graph() if default is None else default
    if graph.outer_graph is not None:
        return graph
    for value in values:
        kind = type(value)
        if kind is Tensor:  # the common cases first: a tensor, a Python number or None
            if value._op._graph is not graph:
                return value._op._graph
            continue
        if kind in _PLAIN_TYPES:
            continue
        for item in (value if kind in (list, tuple) else (value,)):
            if type(item) not in _PLAIN_TYPES:
                owner = getattr(item, "graph", None)
                if owner is not graph and isinstance(owner, Graph):
                    return owner
    return graph


_PLAIN_TYPES = frozenset((int, float, bool, complex, str, bytes, type(None)))


class op_scope:  # noqa: N801 - a context manager used like a function
    """The scope a public op constructor builds in: a transaction and TF1's op naming.

    ``with op_scope(name, default_name, values) as scope:`` picks the graph from
    ``values`` (:func:`graph_of`) and makes it the default inside, opens a transaction
    on it (as :meth:`Graph.atomic`: if the block raises, every op, name, scope counter,
    collection entry and static shape it made or changed is undone), and opens the name
    scope ``name`` (``default_name`` when None), uniquified as TF1 does. ``scope`` is
    the scope's full name ending in '/': passed as ``name`` to ``create_op`` it is the
    exact name of the constructor's result op, and the constants made from its Python
    arguments inside are named after the argument (``Reshape/shape``).

    A class rather than a generator: public constructors with Python arguments enter it
    once per call, gradient rules thousands of times.
    """

    __slots__ = ("_graph", "_name", "_pushed", "_outermost", "_mark", "_first_id", "_state",
                 "_previous")

    def __init__(self, name: Optional[str], default_name: str, values: Sequence = ()):
        if name is not None:
            name = name_text(name, "name")
        default = get_default_graph()
        self._graph = graph = graph_of(values, default)
        self._pushed = graph is not default
        self._name = name or default_name

    def __enter__(self) -> str:
        graph = self._graph
        graph._lock.acquire()
        if self._pushed:
            _default_graph_stack().append(graph)
        self._outermost = graph._undo_log is None
        if self._outermost:
            graph._undo_log = []
        self._mark, self._first_id = len(graph._undo_log), graph._next_id
        state = self._state = graph._scope_state()
        self._previous = state.name_stack
        try:
            scope = graph._scope_name(self._previous, self._name)
        except BaseException:
            self.__exit__(None, None, None)
            raise
        state.name_stack = scope
        return scope

    def __exit__(self, exc_type, exc, traceback) -> bool:
        graph = self._graph
        self._state.name_stack = self._previous
        try:
            if exc_type is not None:
                graph._roll_back(self._mark, self._first_id)
        finally:
            if self._outermost:
                graph._undo_log = None
            if self._pushed:
                _default_graph_stack().pop()
            graph._lock.release()
        return False


def device(device_name_or_function):
    return get_default_graph().device(device_name_or_function)


def colocate_with(op, ignore_existing: bool = False):
    return get_default_graph().colocate_with(op, ignore_existing)


def control_dependencies(control_inputs):
    return get_default_graph().control_dependencies(control_inputs)


def get_collection(key: str, scope: Optional[str] = None) -> list:
    return get_default_graph().get_collection(key, scope)


def get_collection_ref(key: str) -> list:
    return get_default_graph().get_collection_ref(key)


def add_to_collection(name: str, value) -> None:
    get_default_graph().add_to_collection(name, value)


def add_to_collections(names, value) -> None:
    """Adds ``value`` to each collection in ``names`` of the default graph."""
    get_default_graph().add_to_collections(names, value)
