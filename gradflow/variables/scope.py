"""The TF1 variable store: ``variable_scope``, ``get_variable`` and ``VariableScope``.

Each graph has one store mapping full variable names (``"scope/name"``) to the
``Variable`` made for them, and, per thread, the current ``VariableScope`` and the count
of times each scope name was opened (which ``default_name`` scopes are uniquified
against). Variable names depend only on variable scopes; the ops a program builds
inside a scope go in the name scope the scope opened (``scope/``, then ``scope_1/`` when
re-entered), as in TF1.

The store's bookkeeping rolls back with the graph: a call that fails inside
``Graph.atomic()`` leaves no entry for a variable whose ops were removed.
"""
from __future__ import annotations

import contextlib
import enum
import functools
import inspect
import os
import sys
import threading
from typing import Any, Callable, Iterator, Optional

from gradflow.framework import dtypes
from gradflow.framework.constant import convert_to_tensor
from gradflow.framework.graph import Graph, GraphKeys, get_default_graph, op_scope_graph
from gradflow.framework.tensor_shape import as_shape
from gradflow.ops.state import Variable
from gradflow.variables.init_ops import glorot_uniform_initializer, zeros_initializer

__all__ = ["AUTO_REUSE", "VariableScope", "VariableSynchronization", "VariableAggregation",
           "variable_scope", "variable_op_scope", "get_variable_scope", "get_variable",
           "get_local_variable", "no_regularizer"]


class _ReuseMode(enum.Enum):
    """Reuse modes beyond True/False."""
    AUTO_REUSE = 1


AUTO_REUSE = _ReuseMode.AUTO_REUSE
AUTO_REUSE.__doc__ = "Scope reuse mode: create a variable if missing, else share it."


class VariableSynchronization(enum.Enum):
    """When a distributed variable is synchronised (accepted; gradflow runs in one process)."""
    AUTO = 0
    NONE = 1
    ON_WRITE = 2
    ON_READ = 3


class VariableAggregation(enum.Enum):
    """How distributed updates of a variable combine (accepted; one process here)."""
    NONE = 0
    SUM = 1
    MEAN = 2
    ONLY_FIRST_REPLICA = 3


def no_regularizer(_: Any) -> None:
    """The regularizer that adds no loss: turns off a scope's regularizer for a variable."""
    return None


# ----------------------------------------------------------------------- the store
class _ThreadScopes(threading.local):
    """One thread's current variable scope and scope-opening counts in one graph."""

    def __init__(self):
        super().__init__()
        self.current: VariableScope = VariableScope(False)
        self.counts: dict[str, int] = {}


class _Store:
    """A graph's variables by full name, and its per-thread scope state."""

    def __init__(self, graph: Graph):
        self.graph = graph
        self.variables: dict[str, Variable] = {}
        self.origins: dict[str, str] = {}
        self.scopes = _ThreadScopes()

    def add(self, name: str, variable: Variable) -> None:
        """Keeps ``variable`` under ``name``, and where the program made it."""
        self.variables[name] = variable
        self.origins[name] = _user_frames()
        self.graph.on_rollback(lambda: (self.variables.pop(name, None),
                                        self.origins.pop(name, None)))

    def set_count(self, scope_name: str, count: int) -> None:
        counts = self.scopes.counts
        previous = counts.get(scope_name)
        counts[scope_name] = count
        self.graph.on_rollback(lambda: counts.pop(scope_name) if previous is None
                               else counts.__setitem__(scope_name, previous))

    def open_scope(self, scope_name: str) -> None:
        """Counts one more opening of ``scope_name``."""
        self.set_count(scope_name, self.scopes.counts.get(scope_name, 0) + 1)

    def close_subscopes(self, scope_name: str) -> None:
        """Forgets the openings of the scopes inside ``scope_name`` (leaving it)."""
        prefix = scope_name + "/"
        for key, count in list(self.scopes.counts.items()):
            if count and key.startswith(prefix):
                self.set_count(key, 0)

    def unique_scope_name(self, prefix: str) -> str:
        """``prefix``, suffixed ``_N`` if a scope of that name was opened here before."""
        current = self.scopes.current.name
        base = f"{current}/{prefix}" if current else prefix
        counts = self.scopes.counts
        if not counts.get(base):
            return prefix
        index = 1
        while counts.get(f"{base}_{index}"):
            index += 1
        return f"{prefix}_{index}"


_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_ORIGIN_FRAMES = 5


def _user_frames() -> str:
    """The innermost few frames of the calling program outside gradflow, as TF1's
    "Originally defined at" lists them (file, line, function; no source lines)."""
    lines = []
    frame = sys._getframe(1)
    while frame is not None and len(lines) < _ORIGIN_FRAMES:
        code = frame.f_code
        if not code.co_filename.startswith(_PACKAGE_DIR):
            lines.append(f'  File "{code.co_filename}", line {frame.f_lineno}, in '
                         f"{code.co_name}\n")
        frame = frame.f_back
    return "".join(lines)


def _outermost(graph: Graph) -> Graph:
    """The graph variables are made in: the outermost one (TF1's init_scope)."""
    while graph.outer_graph is not None:
        graph = graph.outer_graph
    return graph


def _store(graph: Optional[Graph] = None) -> _Store:
    """The variable store of ``graph`` (default: the default graph), made on first use."""
    graph = _outermost(graph or get_default_graph())
    return graph.extension("variable_store", lambda: _Store(graph))


# -------------------------------------------------------------------- VariableScope
def _chain_getters(custom_getter: Callable, outer_getter: Optional[Callable]) -> Callable:
    """``custom_getter`` placed inside ``outer_getter``: the inner getter is called with a
    getter that runs the outer one, which runs the real one (TF1's chaining order)."""
    if outer_getter is None:
        return custom_getter

    def chained(getter, *args, **kwargs):
        return custom_getter(functools.partial(outer_getter, getter), *args, **kwargs)
    return chained


class VariableScope:
    """A variable scope's settings: name, reuse mode, and the defaults of ``get_variable``.

    ``original_name_scope`` is the name scope opened when the scope was first entered;
    re-entering the scope by this object keeps it.
    """

    def __init__(self, reuse, name: str = "", initializer=None, regularizer=None,
                 caching_device=None, partitioner=None, custom_getter=None,
                 name_scope: str = "", dtype=dtypes.float32, use_resource=None,
                 constraint=None):
        self._name = name
        self._reuse = reuse
        self._initializer = initializer
        self._regularizer = regularizer
        self._caching_device = caching_device
        self._partitioner = None
        self.set_partitioner(partitioner)
        self._custom_getter = None
        self.set_custom_getter(custom_getter)
        self._name_scope = name_scope
        self._dtype = dtypes.as_dtype(dtype)
        self._use_resource = use_resource
        self._constraint = constraint

    @property
    def name(self) -> str:
        return self._name

    @property
    def original_name_scope(self) -> str:
        return self._name_scope

    @property
    def reuse(self):
        return self._reuse

    @property
    def initializer(self):
        return self._initializer

    @property
    def regularizer(self):
        return self._regularizer

    @property
    def caching_device(self):
        return self._caching_device

    @property
    def partitioner(self):
        return self._partitioner

    @property
    def custom_getter(self):
        return self._custom_getter

    @property
    def dtype(self) -> dtypes.DType:
        return self._dtype

    @property
    def use_resource(self):
        return self._use_resource

    @property
    def constraint(self):
        return self._constraint

    def reuse_variables(self) -> None:
        """Makes ``get_variable`` in this scope share existing variables from now on."""
        self._reuse = True

    def set_initializer(self, initializer) -> None:
        self._initializer = initializer

    def set_dtype(self, dtype) -> None:
        self._dtype = dtypes.as_dtype(dtype)

    def set_use_resource(self, use_resource) -> None:
        self._use_resource = use_resource

    def set_regularizer(self, regularizer) -> None:
        self._regularizer = regularizer

    def set_caching_device(self, caching_device) -> None:
        self._caching_device = caching_device

    def set_partitioner(self, partitioner) -> None:
        _refuse_partitioner(partitioner)
        self._partitioner = partitioner

    def set_custom_getter(self, custom_getter) -> None:
        """Sets the getter ``get_variable`` runs through (checked when it is used, as TF1)."""
        self._custom_getter = custom_getter

    def get_collection(self, name: str) -> list:
        """The items of collection ``name`` whose names lie in this scope."""
        scope = self._name + "/" if self._name else ""
        return get_default_graph().get_collection(name, scope)

    def global_variables(self) -> list:
        return self.get_collection(GraphKeys.GLOBAL_VARIABLES)

    def trainable_variables(self) -> list:
        return self.get_collection(GraphKeys.TRAINABLE_VARIABLES)

    def local_variables(self) -> list:
        return self.get_collection(GraphKeys.LOCAL_VARIABLES)

    def get_variable(self, var_store, name: str, shape=None, dtype=None, initializer=None,
                     regularizer=None, reuse=None, trainable=None, collections=None,
                     caching_device=None, partitioner=None, validate_shape: bool = True,
                     use_resource=None, custom_getter=None, constraint=None,
                     synchronization=VariableSynchronization.AUTO,
                     aggregation=VariableAggregation.NONE) -> Variable:
        """``name`` in this scope from ``var_store`` (None: the default graph's store),
        made or shared by this scope's defaults where an argument is None."""
        store = var_store if isinstance(var_store, _Store) else _store()
        _refuse_partitioner(partitioner)
        if regularizer is None:
            regularizer = self._regularizer
        if caching_device is None:
            caching_device = self._caching_device
        if custom_getter is None:
            custom_getter = self._custom_getter
        if reuse is None:
            reuse = self._reuse
        if use_resource is None:
            use_resource = self._use_resource
        full_name = f"{self._name}/{name}" if self._name else name
        graph = store.graph
        with graph.as_default(), graph.atomic(), graph.name_scope(None):
            if dtype is not None and initializer is not None and not callable(initializer):
                init_dtype = convert_to_tensor(initializer).dtype.base_dtype
                if init_dtype is not dtypes.as_dtype(dtype).base_dtype:
                    raise ValueError(f"Initializer type '{_dtype_repr(init_dtype)}' and "
                                     f"explicit dtype '{_dtype_repr(dtype)}' don't match.")
            return _get_from_store(
                store, full_name, shape=shape,
                dtype=self._dtype if dtype is None else dtype,
                initializer=self._initializer if initializer is None else initializer,
                regularizer=regularizer, reuse=reuse, trainable=trainable,
                collections=collections, caching_device=caching_device,
                validate_shape=validate_shape, use_resource=use_resource,
                custom_getter=custom_getter,
                constraint=self._constraint if constraint is None else constraint,
                synchronization=synchronization, aggregation=aggregation)

    def __repr__(self) -> str:
        return f"<VariableScope name={self._name!r} reuse={self._reuse!r}>"


def _dtype_repr(dtype) -> str:
    """A dtype as TF's messages print it: ``<dtype: 'float32'>``."""
    return f"<dtype: '{dtypes.as_dtype(dtype).name}'>"


def _refuse_partitioner(partitioner) -> None:
    if partitioner is not None:
        raise ValueError(f"partitioner={partitioner!r} is not supported: gradflow has no "
                         "partitioned variables; pass partitioner=None")


# ------------------------------------------------------------------- get_variable
def _needs_no_arguments(fn: Callable) -> bool:
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return False
    return all(p.default is not inspect.Parameter.empty
               or p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in params)


def _takes_argument(fn: Callable, name: str) -> bool:
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False
    return name in params or any(p.kind is p.VAR_KEYWORD for p in params.values())


def _get_from_store(store: _Store, name: str, *, custom_getter, **kwargs) -> Variable:
    """Runs the true getter, through ``custom_getter`` when there is one."""
    synchronization = kwargs["synchronization"]
    if kwargs["trainable"] is None:
        kwargs["trainable"] = synchronization is not VariableSynchronization.ON_READ
    elif kwargs["trainable"] and synchronization is VariableSynchronization.ON_READ:
        raise ValueError("Synchronization value can be set to VariableSynchronization.ON_READ "
                         "only for non-trainable variables. You have specified "
                         f"trainable=True and synchronization=VariableSynchronization.ON_READ "
                         f"for variable {name}.")
    true_getter = functools.partial(_true_getter, store)
    if custom_getter is None:
        return true_getter(name, **kwargs)
    if not callable(custom_getter):
        raise ValueError(f"Passed a custom_getter which is not callable: {custom_getter}")
    constraint = kwargs.pop("constraint")
    if _takes_argument(custom_getter, "constraint"):
        kwargs["constraint"] = constraint
    return custom_getter(getter=true_getter, name=name, partitioner=None, **kwargs)


def _true_getter(store: _Store, name: str, shape=None, dtype=dtypes.float32,
                 initializer=None, regularizer=None, reuse=None, trainable=None,
                 collections=None, caching_device=None, partitioner=None,
                 validate_shape: bool = True, use_resource=None, constraint=None,
                 synchronization=VariableSynchronization.AUTO,
                 aggregation=VariableAggregation.NONE) -> Variable:
    """Shares variable ``name`` if it exists (and reuse allows), else makes it."""
    _refuse_partitioner(partitioner)
    from_value = initializer is not None and not callable(initializer)
    if shape is not None and from_value:
        raise ValueError("If initializer is a constant, do not specify shape.")
    dtype = dtypes.as_dtype(dtype).base_dtype
    shape = as_shape(shape)
    found = store.variables.get(name)
    if found is not None:
        if reuse is False:  # a scope's None means "inherit", and the root scope says False
            raise ValueError(f"Variable {name} already exists, disallowed. Did you mean to "
                             "set reuse=True or reuse=tf.AUTO_REUSE in VarScope? Originally "
                             f"defined at:\n\n{store.origins.get(name, '')}")
        if not shape.is_compatible_with(found.shape):
            raise ValueError(f"Trying to share variable {name}, but specified shape "
                             f"{shape} and found shape {found.shape}.")
        if dtype is not found.dtype.base_dtype:
            raise ValueError(f"Trying to share variable {name}, but specified dtype "
                             f"{dtype.name} and found dtype {found.dtype.name}_ref.")
        return found
    if reuse is True:
        raise ValueError(f"Variable {name} does not exist, or was not created with "
                         "tf.get_variable(). Did you mean to set reuse=tf.AUTO_REUSE in "
                         "VarScope?")
    if initializer is None and shape.ndims is None:
        raise ValueError(f"Variable {name} did not get an initializer, so its `shape` "
                         "argument must be specified.")
    graph = store.graph
    with graph.atomic():
        initial_value, variable_dtype = _initial_value(name, shape, dtype, initializer,
                                                       from_value)
        with graph.control_dependencies(None):
            variable = Variable(initial_value=initial_value, trainable=trainable,
                                collections=collections, validate_shape=validate_shape,
                                caching_device=caching_device, name=name,
                                dtype=variable_dtype, constraint=constraint,
                                use_resource=use_resource)
            store.add(name, variable)
            if regularizer:
                _regularize(graph, name, variable, regularizer)
    return variable


def _initial_value(name: str, shape, dtype: dtypes.DType, initializer, from_value: bool):
    """The Variable's ``initial_value`` (a value or a no-argument callable) and dtype."""
    if from_value:
        return initializer, None
    if initializer is None:
        if dtype.is_floating:
            initializer = glorot_uniform_initializer()
        elif dtype.is_integer or dtype.is_unsigned or dtype.is_bool or dtype is dtypes.string:
            initializer = zeros_initializer()
        else:
            raise ValueError(f"An initializer for variable {name} of {_dtype_repr(dtype)} is "
                             "required")
    if inspect.isclass(initializer):
        initializer = initializer()
    if shape.is_fully_defined():
        extra = {"partition_info": None} if _takes_argument(initializer, "partition_info") \
            else {}
        return functools.partial(initializer, shape.as_list(), dtype=dtype, **extra), dtype
    if _needs_no_arguments(initializer):
        return initializer, None
    raise ValueError("The initializer passed is not valid. It should be a callable with no "
                     "arguments and the shape should not be provided or an instance of "
                     "`tf.keras.initializers.*' and `shape` should be fully defined.")


def _regularize(graph: Graph, name: str, variable: Variable, regularizer: Callable) -> None:
    """Adds ``regularizer(variable)`` to REGULARIZATION_LOSSES (ops in ``name/Regularizer/``)."""
    with graph.colocate_with(variable.op), graph.name_scope(name + "/Regularizer/"):
        loss = regularizer(variable)
    if loss is not None:
        graph.add_to_collection(GraphKeys.REGULARIZATION_LOSSES, loss)


# ----------------------------------------------------------------- variable_scope
class _PureScope:
    """Switches the current variable scope (no name scope): enter, then exit, once each."""

    def __init__(self, store: _Store, name_or_scope, reuse, settings: dict,
                 old_name_scope: Optional[str]):
        self._store = store
        self._name_or_scope = name_or_scope
        self._reuse = reuse
        self._settings = settings
        self._old_name_scope = old_name_scope
        self._old: Optional[VariableScope] = None
        self._old_counts: Optional[dict] = None
        self._new_name = ""

    def _apply_settings(self, scope: VariableScope, outer_getter) -> None:
        settings = self._settings
        for key in ("initializer", "regularizer", "caching_device", "partitioner", "dtype",
                    "use_resource"):
            if settings.get(key) is not None:
                getattr(scope, f"set_{key}")(settings[key])
        if settings.get("custom_getter") is not None:
            scope.set_custom_getter(_chain_getters(settings["custom_getter"], outer_getter))

    def enter(self) -> VariableScope:
        scopes = self._store.scopes
        self._old = scopes.current
        target = self._name_or_scope
        if isinstance(target, VariableScope):
            self._new_name = target.name
            scope = VariableScope(target.reuse if not self._reuse else self._reuse,
                                  name=target.name, initializer=target.initializer,
                                  regularizer=target.regularizer,
                                  caching_device=target.caching_device,
                                  partitioner=target.partitioner, dtype=target.dtype,
                                  custom_getter=target.custom_getter,
                                  name_scope=target.original_name_scope,
                                  use_resource=target.use_resource,
                                  constraint=target.constraint)
            self._apply_settings(scope, target.custom_getter)
            self._store.open_scope(self._new_name)
            self._old_counts = dict(scopes.counts)
        else:
            old = self._old
            self._new_name = f"{old.name}/{target}" if old.name else target
            reuse = self._reuse or old.reuse  # reuse is inherited inward
            scope = VariableScope(reuse, name=self._new_name, initializer=old.initializer,
                                  regularizer=old.regularizer,
                                  caching_device=old.caching_device,
                                  partitioner=old.partitioner, dtype=old.dtype,
                                  use_resource=old.use_resource,
                                  custom_getter=old.custom_getter,
                                  name_scope=(target if self._old_name_scope is None
                                              else self._old_name_scope),
                                  constraint=self._settings.get("constraint"))
            self._apply_settings(scope, old.custom_getter)
            self._store.open_scope(self._new_name)
        scopes.current = scope
        return scope

    def exit(self) -> None:
        scopes = self._store.scopes
        if self._old_counts is not None:
            for key in set(scopes.counts) | set(self._old_counts):
                if scopes.counts.get(key, 0) != self._old_counts.get(key, 0):
                    self._store.set_count(key, self._old_counts.get(key, 0))
        else:
            self._store.close_subscopes(self._new_name)
        scopes.current = self._old


class VariableScopeContext:
    """What ``variable_scope(...)`` returns: a context manager entering the scope (and
    its name scope) each time it is used; entered again, it opens a new name scope."""

    def __init__(self, name_or_scope, default_name: Optional[str] = None, values=None,
                 initializer=None, regularizer=None, caching_device=None, partitioner=None,
                 custom_getter=None, reuse=None, dtype=None, use_resource=None,
                 constraint=None, auxiliary_name_scope: bool = True):
        if default_name is None and name_or_scope is None:
            raise TypeError("If default_name is None then name_or_scope is required")
        if reuse is False:  # False never resets an outer reuse: it means "inherit"
            reuse = None
        if not (reuse is True or reuse is None or reuse is AUTO_REUSE):
            raise ValueError("The reuse parameter must be True or False or None.")
        if not isinstance(auxiliary_name_scope, bool):
            raise TypeError("The auxiliary_name_scope must be `True` or `False`, while get "
                            f"{auxiliary_name_scope}")
        _refuse_partitioner(partitioner)
        self._name_or_scope = name_or_scope
        self._default_name = default_name
        self._reuse = reuse
        self._settings = {"initializer": initializer, "regularizer": regularizer,
                          "caching_device": caching_device, "partitioner": partitioner,
                          "custom_getter": custom_getter, "dtype": dtype,
                          "use_resource": use_resource, "constraint": constraint}
        self._auxiliary_name_scope = auxiliary_name_scope
        self._graph = op_scope_graph(values) if values else get_default_graph()
        self._pure: Optional[_PureScope] = None
        self._name_scope_arg: Optional[str] = None
        self._exits: list = []

    def __enter__(self) -> VariableScope:
        graph = self._graph
        self._exits = []
        self._push(graph.as_default())
        try:
            return self._enter(graph)
        except BaseException:
            self._unwind()
            raise

    def __exit__(self, *exc) -> bool:
        self._unwind()
        return False

    def _push(self, context) -> Any:
        value = context.__enter__()
        self._exits.append(context.__exit__)
        return value

    def _unwind(self) -> None:
        while self._exits:
            self._exits.pop()(None, None, None)

    def _enter(self, graph: Graph) -> VariableScope:
        if self._pure is not None:  # this object entered again: same scope, new name scope
            if self._name_scope_arg is not None:
                self._push(graph.name_scope(self._name_scope_arg))
            return self._enter_pure(self._pure)
        store = _store(graph)
        if self._auxiliary_name_scope:
            name_scope_arg = None
        else:  # stay in the current name scope
            current = graph.get_name_scope()
            name_scope_arg = current + "/" if current else ""
        target = self._name_or_scope
        if target is not None:
            if not isinstance(target, (VariableScope, str)):
                raise TypeError("VariableScope: name_or_scope must be a string or "
                                "VariableScope.")
            last = target if isinstance(target, str) else target.name.split("/")[-1]
            if not last and name_scope_arg is None:  # the root scope: no name scope
                return self._enter_pure(_PureScope(store, target, self._reuse,
                                                   self._settings, None))
            if name_scope_arg is None:
                name_scope_arg = last
            opened = self._push(graph.name_scope(name_scope_arg))
            old_name_scope = opened if isinstance(target, str) else target.original_name_scope
            self._name_scope_arg = name_scope_arg
            return self._enter_pure(_PureScope(store, target, self._reuse, self._settings,
                                               old_name_scope))
        if self._reuse:
            raise ValueError("reuse=True cannot be used without a name_or_scope")
        if name_scope_arg is None:
            name_scope_arg = self._default_name
        opened = self._push(graph.name_scope(name_scope_arg))
        self._name_scope_arg = name_scope_arg
        unique = store.unique_scope_name(self._default_name)
        return self._enter_pure(_PureScope(store, unique, None, self._settings, opened))

    def _enter_pure(self, pure: _PureScope) -> VariableScope:
        self._pure = pure
        scope = pure.enter()
        self._exits.append(lambda *exc: pure.exit())
        return scope


@contextlib.contextmanager
def pure_variable_scope(name_or_scope, custom_getter=None) -> Iterator[VariableScope]:
    """Switches the current variable scope without opening a name scope; its
    ``original_name_scope`` is the bare name (what ``make_template`` scopes start with)."""
    pure = _PureScope(_store(), name_or_scope, None, {"custom_getter": custom_getter}, None)
    scope = pure.enter()
    try:
        yield scope
    finally:
        pure.exit()


def unique_variable_scope_name(prefix: str) -> str:
    """``prefix`` made unique among the variable scopes opened in the current scope."""
    return _store().unique_scope_name(prefix)


def variable_scope(name_or_scope, default_name: Optional[str] = None, values=None,
                   initializer=None, regularizer=None, caching_device=None, partitioner=None,
                   custom_getter=None, reuse=None, dtype=None, use_resource=None,
                   constraint=None, auxiliary_name_scope: bool = True) -> VariableScopeContext:
    """TF1's ``tf.variable_scope``: a variable scope, and a name scope for the ops inside.

    ``name_or_scope`` is a name (opened inside the current scope) or a ``VariableScope``
    (re-entered whole, keeping its ``original_name_scope``); with neither,
    ``default_name`` is made unique among the scopes opened here. ``reuse`` True or
    ``AUTO_REUSE`` is inherited by inner scopes; False or None inherits the outer mode.
    ``initializer``, ``regularizer``, ``dtype``, ``custom_getter`` (chained inside the
    outer one), ``caching_device`` and ``use_resource`` become the defaults of
    ``get_variable`` here and in inner scopes; ``constraint`` only here, as in TF1.
    """
    return VariableScopeContext(name_or_scope, default_name, values, initializer, regularizer,
                                caching_device, partitioner, custom_getter, reuse, dtype,
                                use_resource, constraint, auxiliary_name_scope)


def variable_op_scope(values, name_or_scope, default_name: Optional[str] = None,
                      initializer=None, regularizer=None, caching_device=None,
                      partitioner=None, custom_getter=None, reuse=None, dtype=None,
                      use_resource=None, constraint=None) -> VariableScopeContext:
    """TF1's deprecated ``variable_op_scope``: ``variable_scope`` with ``values`` first."""
    return variable_scope(name_or_scope, default_name=default_name, values=values,
                          initializer=initializer, regularizer=regularizer,
                          caching_device=caching_device, partitioner=partitioner,
                          custom_getter=custom_getter, reuse=reuse, dtype=dtype,
                          use_resource=use_resource, constraint=constraint)


def get_variable_scope() -> VariableScope:
    """The current variable scope of this thread in the default graph."""
    return _store().scopes.current


def get_variable(name: str, shape=None, dtype=None, initializer=None, regularizer=None,
                 trainable=None, collections=None, caching_device=None, partitioner=None,
                 validate_shape: bool = True, use_resource=None, custom_getter=None,
                 constraint=None, synchronization=VariableSynchronization.AUTO,
                 aggregation=VariableAggregation.NONE) -> Variable:
    """TF1's ``tf.get_variable``: variable ``name`` of the current scope, made or shared.

    Made when missing (unless the scope's reuse is True), shared when present (only if
    reuse is True or AUTO_REUSE). ``initializer`` is an initializer (called with the
    shape and dtype), a tensor or value (then ``shape`` must be None), or None for the
    scope's (glorot_uniform for floats, zeros for integers and bools).
    """
    return get_variable_scope().get_variable(
        _store(), name, shape=shape, dtype=dtype, initializer=initializer,
        regularizer=regularizer, trainable=trainable, collections=collections,
        caching_device=caching_device, partitioner=partitioner,
        validate_shape=validate_shape, use_resource=use_resource,
        custom_getter=custom_getter, constraint=constraint,
        synchronization=synchronization, aggregation=aggregation)


def get_local_variable(name: str, shape=None, dtype=None, initializer=None,
                       regularizer=None, trainable: bool = False, collections=None,
                       caching_device=None, partitioner=None, validate_shape: bool = True,
                       use_resource=None, custom_getter=None, constraint=None,
                       synchronization=VariableSynchronization.AUTO,
                       aggregation=VariableAggregation.NONE) -> Variable:
    """``get_variable`` for a LOCAL_VARIABLES entry, never trainable (TF1 ignores
    ``trainable`` here)."""
    collections = list(collections or []) + [GraphKeys.LOCAL_VARIABLES]
    return get_variable(name, shape=shape, dtype=dtype, initializer=initializer,
                        regularizer=regularizer, trainable=False, collections=collections,
                        caching_device=caching_device, partitioner=partitioner,
                        validate_shape=validate_shape, use_resource=use_resource,
                        custom_getter=custom_getter, constraint=constraint,
                        synchronization=synchronization, aggregation=aggregation)
