"""``Session``: runs the part of a graph that the fetches need, with feeds and variables.

Fetches may be any nest of lists, tuples, namedtuples and dicts of tensors, ops,
IndexedSlices, SparseTensors, variables and names; the result has the same structure. Plans are
compiled once per (fetches, feeds) signature and cached.
"""
from __future__ import annotations

import threading
from typing import Any, Callable, Optional

import numpy as np

from gradflow.framework import dtypes
from gradflow.framework.constant import is_exact_conversion, string_array
from gradflow.framework.default_session import (default_session, get_default_session,
                                                push_default_session, remove_default_session)
from gradflow.framework.graph import Graph, Operation, Tensor, get_default_graph
from gradflow.framework.indexed_slices import IndexedSlices, IndexedSlicesValue
from gradflow.framework.sparse_tensor import SparseTensor, SparseTensorValue
from gradflow.runtime import clusters, remote, tracing
from gradflow.runtime.executor import (RunContext, compile_plan, graph_structure_version,
                                       required_ops)
from gradflow.runtime.state_locks import StateLocks, release

__all__ = ["Session", "InteractiveSession", "get_default_session"]

def _is_variable_snapshot(tensor: Tensor) -> bool:
    op = tensor.op
    return (op.type in ("Identity", "ReadVariableOp") and len(op.inputs) == 1
            and op.inputs[0].op.type == "VariableV2")


def _fetched(value):
    """A fetched value as TF1 returns it: a 0-d array becomes a NumPy scalar, and the
    items of a string tensor are ``bytes`` (kernels may hold ``str``: encoded UTF-8)."""
    if isinstance(value, (str, np.str_)):
        return value.encode()
    if isinstance(value, np.bytes_):
        return bytes(value)
    if type(value) is not np.ndarray:
        return value
    if value.dtype == object or value.dtype.kind in "SU":
        value = _as_bytes_items(value)
    if value.ndim == 0:
        return value[()]
    return value


def _as_bytes_items(value: np.ndarray) -> np.ndarray:
    """An object array whose str (and fixed-width) string items are bytes."""
    if value.dtype == object and not any(isinstance(v, str) for v in value.flat):
        return value
    result = np.empty(value.shape, dtype=object)
    for i, item in enumerate(value.flat):
        result.flat[i] = item.encode() if isinstance(item, str) else \
            bytes(item) if isinstance(item, np.bytes_) else item
    return result


class _Fetches:
    """Flattens a fetch nest into graph elements and rebuilds results into that nest."""

    def __init__(self, graph: Graph, fetches):
        self.tensors: list[Tensor] = []
        self.targets: list[Operation] = []
        self.refs: list[int] = []  # indices of fetched variable references
        self._graph = graph
        self._build = self._flatten(fetches)
        self.key = (tuple(self.tensors), tuple(self.targets))  # what a plan is keyed on

    def _flatten(self, fetch) -> Callable[[list], Any]:
        if isinstance(fetch, (list, tuple)) and not isinstance(fetch, Tensor):
            builders = [self._flatten(f) for f in fetch]
            if hasattr(fetch, "_fields"):  # namedtuple
                return lambda values: type(fetch)(*(b(values) for b in builders))
            kind = type(fetch)
            if kind is list:
                return lambda values: [b(values) for b in builders]
            return lambda values: kind(b(values) for b in builders)
        if isinstance(fetch, dict):
            keys = list(fetch)
            builders = [self._flatten(fetch[k]) for k in keys]
            kind = type(fetch)
            return lambda values: kind(zip(keys, (b(values) for b in builders)))
        if isinstance(fetch, IndexedSlices):
            parts = [self._flatten(fetch.values), self._flatten(fetch.indices)]
            shape = None if fetch.dense_shape is None else self._flatten(fetch.dense_shape)
            return lambda values: IndexedSlicesValue(
                parts[0](values), parts[1](values), None if shape is None else shape(values))
        if isinstance(fetch, SparseTensor):
            parts = [self._flatten(t) for t in (fetch.indices, fetch.values, fetch.dense_shape)]
            return lambda values: SparseTensorValue(*(part(values) for part in parts))
        element = self._element(fetch)
        if isinstance(element, Operation):
            self.targets.append(element)
            return lambda values: None
        if not isinstance(fetch, (Tensor, str)) and _is_variable_snapshot(element):
            # A fetched Variable is its reference, as in TF1: it reads the value the
            # variable holds after the run (``sess.run([train_op, global_step])`` sees the
            # incremented step), not the snapshot taken before the updates.
            element = element.op.inputs[0]
        index = len(self.tensors)
        self.tensors.append(element)
        if element.op.type == "VariableV2":
            self.refs.append(index)
        return lambda values: _fetched(values[index])

    def _element(self, fetch):
        # TF 2.21's words (a KeyError's text is quoted, as TF's)
        kind = type(fetch).__name__
        if fetch is None:
            raise TypeError(f"Argument `fetch` = {fetch} has invalid type \"{kind}\". "
                            "Cannot be None")
        try:
            return self._graph.as_graph_element(fetch, allow_tensor=True, allow_operation=True)
        except TypeError as err:
            raise TypeError(f"Argument `fetch` = {fetch} has invalid type \"{kind}\" must be a "
                            f"string or Tensor. ({err})") from None
        except (KeyError, ValueError) as err:
            raise ValueError(f"Argument `fetch` = {fetch} cannot be interpreted as a Tensor. "
                             f"({err})") from None

    def build(self, values: list):
        return self._build(values)


class Session:
    """Runs graph elements. ``with Session() as sess:`` also makes it the default session."""

    def __init__(self, target: str = "", graph: Optional[Graph] = None, config=None):
        if graph is not None and not isinstance(graph, Graph):
            raise TypeError(f"graph must be a gf.Graph, but got {type(graph).__name__}")
        self._graph = graph if graph is not None else get_default_graph()
        self._closed = False
        self._variables: dict = {}
        self._spares: dict = {}  # second buffers of optimizer-updated entries (executor)
        self._plans: dict = {}
        self._single_fetches: dict = {}  # a fetched tensor, op or list of them -> _Fetches
        self._state_locks = StateLocks()
        self._default_context = None
        self._config = tracing.checked_config(config)
        # stateful resources of input pipelines (iterators, queues, readers), by key
        self._resources: dict = {}
        self._resources_lock = threading.Lock()
        self._global_jit = clusters.global_jit_requested(self._config)
        self._target = target
        self._remote = remote.target_runner(target, self._graph, self._config)

    @property
    def graph(self) -> Graph:
        return self._graph

    @property
    def sess_str(self) -> str:
        return self._target

    @property
    def config(self):
        """The ``ConfigProto`` this session was made with (None for the defaults)."""
        return self._config

    def variable_store(self) -> dict:
        """This session's variable values, keyed by variable op (read-only use please);
        a value a compiled run left on its device is given as its NumPy view."""
        store = self._variables
        if any(type(v) is clusters.DeviceValue for v in store.values()):
            return {k: v.host() if type(v) is clusters.DeviceValue else v
                    for k, v in store.items()}
        return store

    def resource(self, key, factory: Optional[Callable[[], Any]] = None):
        """The session's resource under ``key`` (an iterator, a queue, a reader), made by
        ``factory()`` on first use (no factory: None when absent). ``close()`` calls each
        resource's ``close()`` (wake what waits, stop threads), then each one's ``join()``."""
        with self._resources_lock:
            found = self._resources.get(key)
            if found is None and factory is not None:
                found = self._resources[key] = factory()
            return found

    def run(self, fetches, feed_dict=None, options=None, run_metadata=None):
        """Computes ``fetches`` (any nest) with ``feed_dict`` overriding tensors' values."""
        if self._closed:
            raise RuntimeError("Attempted to use a closed Session.")
        trace = None if options is None else tracing.checked_trace(options, run_metadata)
        flat = self._fetches(fetches)
        feed_tensors, feed_values = self._feeds(feed_dict)
        if self._remote is not None:  # a cluster target: runtime/remote.py
            if trace is not None:
                raise ValueError("options: tracing a run on a cluster target is not supported")
            return flat.build(self._remote.run(flat.tensors, flat.targets, feed_tensors,
                                               feed_values))
        plan = self._plan(flat, feed_tensors)
        context = RunContext(self, self._variables, self._spares)
        writes = plan.writes
        if writes is not None and not writes:  # reads only: committed values, no lock
            results = plan.run(context, feed_values, trace)
            if context.pending:  # a write state_writes did not foresee: still kept whole
                held = self._state_locks.acquire(None)
                context.commit()
                release(held)
        else:  # read, modify and write the plan's variables as one step
            held = self._state_locks.acquire(writes)
            try:
                results = plan.run(context, feed_values, trace)
                context.commit()
            finally:
                release(held)
        if flat.refs:  # variable references read what the run left in them
            results = list(results)
            for index in flat.refs:
                key = results[index].key
                results[index] = np.array(context.read_variable(key, key), copy=True)
        if trace is not None:
            tracing.fill_step_stats(run_metadata, trace)
        if options is not None and options.output_partition_graphs and run_metadata is not None:
            run_metadata.partition_graphs.add().CopyFrom(self._graph.as_graph_def())
        return flat.build(results)

    def _fetches(self, fetches) -> _Fetches:
        """The flattened fetches; those of a lone tensor or op, or a list or tuple of
        them, are remembered."""
        kind = type(fetches)
        if kind is Tensor or kind is Operation:
            key = fetches
        elif (kind is list or kind is tuple) and \
                all(type(f) is Tensor or type(f) is Operation for f in fetches):
            key = (kind, *fetches)
        else:
            return _Fetches(self._graph, fetches)
        flat = self._single_fetches.get(key)
        if flat is None:
            flat = self._single_fetches[key] = _Fetches(self._graph, fetches)
        return flat

    def _plan(self, flat: _Fetches, feed_tensors: list):
        tensors, targets = flat.tensors, flat.targets
        key = (flat.key, tuple(feed_tensors))
        plan = self._plans.get(key)
        if plan is None or plan.structure_version != graph_structure_version(self._graph):
            plan = compile_plan(self._graph, tensors, feed_tensors, targets,
                                global_jit=self._global_jit)
            self._plans[key] = plan
            if self._config is not None and self._config.log_device_placement:
                tracing.log_placement(required_ops(tensors, targets, set(feed_tensors)),
                                      getattr(plan, "cluster_devices", {}))
        return plan

    def _feeds(self, feed_dict) -> tuple[list, list]:
        if not feed_dict:
            return [], []
        if not isinstance(feed_dict, dict):
            raise TypeError(f"feed_dict must be a dictionary, got {type(feed_dict).__name__}")
        tensors, values = [], []
        for key, value in feed_dict.items():
            if type(key) is Tensor and key._op._graph is self._graph:  # the common case
                pairs = ((key, value),)
            else:
                pairs = self._feed_pairs(key, value)
            for tensor, part in pairs:
                if tensor in tensors:
                    raise ValueError(f"Tensor {tensor.name} is fed more than once.")
                tensors.append(tensor)
                values.append(_checked_feed_value(tensor, part))
        return tensors, values

    def _feed_pairs(self, key, value):
        if isinstance(key, IndexedSlices):
            parts = (key.values, key.indices, key.dense_shape)
            given = tuple(value) if value is not None else ()
            if len(given) not in (2, 3):
                raise ValueError(f"Feed value for IndexedSlices {key.name} must be "
                                 "(values, indices[, dense_shape])")
            return [(self._feed_tensor(k), v) for k, v in zip(parts, given) if k is not None]
        if isinstance(key, SparseTensor):
            given = tuple(value) if isinstance(value, (tuple, list)) else ()
            if len(given) != 3:
                raise TypeError(f"The value of a SparseTensor feed ({key.name}) must be a "
                                "SparseTensorValue or an (indices, values, dense_shape) "
                                f"tuple, got {type(value).__name__}")
            parts = (key.indices, key.values, key.dense_shape)
            return [(self._feed_tensor(k), v) for k, v in zip(parts, given, strict=True)]
        return [(self._feed_tensor(key), value)]

    def _feed_tensor(self, key) -> Tensor:
        try:
            return self._graph.as_graph_element(key, allow_tensor=True, allow_operation=False)
        except (TypeError, ValueError, KeyError) as err:
            message = err.args[0] if err.args else str(err)
            raise TypeError(f"Cannot interpret feed_dict key as Tensor: {message}") from None

    def make_callable(self, fetches, feed_list=None, accept_options: bool = False):
        """A function running ``fetches`` with positional values for ``feed_list``."""
        feed_list = list(feed_list or [])

        def call(*feed_values, **_):
            if len(feed_values) != len(feed_list):
                raise ValueError(f"Expected {len(feed_list)} feed values, got "
                                 f"{len(feed_values)}")
            return self.run(fetches, dict(zip(feed_list, feed_values)))

        return call

    def list_devices(self) -> list:
        if self._remote is not None:
            return self._remote.list_devices()
        return ["/job:localhost/replica:0/task:0/device:CPU:0"]

    def close(self) -> None:
        self._closed = True
        if self._remote is not None:
            self._remote.close()
        with self._resources_lock:
            resources, self._resources = self._resources, {}
        for resource in resources.values():  # wakes blocked runs, tells threads to stop
            resource.close()
        for resource in resources.values():  # then waits for those threads to end
            resource.join()
        self._plans.clear()
        self._single_fetches.clear()
        self._variables.clear()
        self._spares.clear()

    def as_default(self):
        return default_session(self)

    def __enter__(self) -> "Session":
        if self._default_context is not None:
            raise RuntimeError("Session is already entered as the default session.")
        self._default_context = default_session(self)
        self._default_context.__enter__()
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        context, self._default_context = self._default_context, None
        context.__exit__(exc_type, exc, tb)
        self.close()

    def __del__(self):
        self._closed = True


class InteractiveSession(Session):
    """A Session that makes itself the default as soon as it is created (for shells)."""

    def __init__(self, target: str = "", graph: Optional[Graph] = None, config=None):
        super().__init__(target, graph, config)
        push_default_session(self)

    def close(self) -> None:
        remove_default_session(self)
        super().close()


def _checked_feed_value(tensor: Tensor, value) -> np.ndarray:
    """``value`` as an array of ``tensor``'s dtype; rejects wrong shapes and lossy casts."""
    if isinstance(value, (Tensor, Operation)):
        raise TypeError(f"The value of a feed cannot be a tf.Tensor object. Acceptable feed "
                        "values include Python scalars, strings, lists, numpy ndarrays, or "
                        f"TensorHandles. For reference, the tensor object was {value} which "
                        f"was passed to the argument `feed_dict` with key {tensor}.")
    dtype = tensor.dtype
    if type(value) is np.ndarray and value.dtype.type is dtype.as_numpy_dtype and \
            value.shape == tensor.shape.as_tuple() and dtype is not dtypes.string:
        return value  # already exactly right: what the checks below would return
    try:
        source = np.asarray(value) if not isinstance(value, np.ndarray) else value
    except ValueError as err:  # a ragged nest of lists: say which feed it was
        raise ValueError(f"Cannot feed the value given for Tensor '{tensor.name}': {err}") \
            from None
    if dtype is dtypes.string:
        try:  # str is fed as its UTF-8 bytes, as TF does
            array = string_array(source)
        except TypeError as err:
            raise TypeError(f"Cannot feed value of dtype {source.dtype} for Tensor "
                            f"'{tensor.name}' of dtype string: {err}") from None
    else:
        try:
            array = np.asarray(source, dtype=dtype.as_numpy_dtype)
        except (TypeError, ValueError) as err:
            raise TypeError(f"Cannot feed value of dtype {source.dtype} for Tensor "
                            f"'{tensor.name}' of dtype {dtype.name}: {err}") from None
        if source.dtype.kind in "fcb" and source.dtype != array.dtype and \
                not _feed_cast_ok(source, array, dtype):
            raise TypeError(f"Cannot feed value of dtype {source.dtype} for Tensor "
                            f"'{tensor.name}' of dtype {dtype.name}: the conversion would "
                            "lose information.")
    if not tensor.shape.is_compatible_with(array.shape):
        raise ValueError(f"Cannot feed value of shape {array.shape} for Tensor "
                         f"{tensor.name}, which has shape {tensor.shape}")
    return array


def _feed_cast_ok(source: np.ndarray, array: np.ndarray, dtype: dtypes.DType) -> bool:
    try:
        source_dtype = dtypes.as_dtype(source.dtype)
    except TypeError:
        return False
    return is_exact_conversion(source, array, source_dtype, dtype)
