"""TF1's ``make_template``: a function whose variables are made once and shared after.

The first call opens a fresh variable scope (``name_``, made unique like a
``default_name``) and runs the function there; later calls re-enter that scope with
``reuse=True``, so every ``get_variable`` inside returns the first call's variable.
Each call's ops go in a new name scope (``tmpl/``, ``tmpl_1/``, ...), as in TF1.
"""
from __future__ import annotations

import functools
import threading
from typing import Any, Callable, Optional

from gradflow.framework.graph import GraphKeys, get_default_graph
from gradflow.variables.scope import (VariableScope, pure_variable_scope,
                                      unique_variable_scope_name, variable_scope)

__all__ = ["Template", "make_template"]


class Template:
    """A function wrapped so that its ``get_variable`` variables are shared across calls."""

    def __init__(self, name: str, func: Callable, create_scope_now: bool = False,
                 unique_name: Optional[str] = None, custom_getter: Optional[Callable] = None):
        if name is None:
            raise ValueError("name cannot be None.")
        self._func = func
        self._name = name
        self._unique_name = unique_name
        self._custom_getter = custom_getter
        self._variable_scope: Optional[VariableScope] = None
        if create_scope_now:
            scope_name = unique_name or unique_variable_scope_name(name)
            with pure_variable_scope(scope_name, custom_getter=custom_getter) as scope:
                self._variable_scope = scope
        self._variables_created = False
        self._first_call = True
        self._lock = threading.Lock()

    def __call__(self, *args, **kwargs) -> Any:
        graph = get_default_graph()
        with graph.atomic():
            if self._variable_scope is not None:
                with variable_scope(self._variable_scope, reuse=not self._first_call):
                    return self._call_func(args, kwargs)
            with variable_scope(self._unique_name, self._name,
                                custom_getter=self._custom_getter) as scope:
                self._variable_scope = scope
                return self._call_func(args, kwargs)

    def _call_func(self, args: tuple, kwargs: dict) -> Any:
        graph = get_default_graph()
        if not self._variables_created:
            with self._lock:
                first = self._first_call
                self._first_call = False
            if first:
                try:
                    result = self._func(*args, **kwargs)
                except BaseException:
                    self._first_call = True
                    raise
                self._variables_created = True
                return result
            return self._func(*args, **kwargs)  # a first call running in another thread
        trainable_before = len(graph.get_collection(GraphKeys.TRAINABLE_VARIABLES))
        result = self._func(*args, **kwargs)
        trainable = graph.get_collection(GraphKeys.TRAINABLE_VARIABLES)
        if len(trainable) != trainable_before:
            raise ValueError("Trainable variable created when calling a template after the "
                             "first time, perhaps you used tf.Variable when you meant "
                             f"tf.get_variable: {trainable[trainable_before:]}")
        return result

    @property
    def name(self) -> str:
        return self._name

    @property
    def func(self) -> Callable:
        return self._func

    @property
    def variable_scope(self) -> Optional[VariableScope]:
        return self._variable_scope

    @property
    def variable_scope_name(self) -> Optional[str]:
        """The scope's name ending in "/" (None before the scope exists)."""
        if self._variable_scope is None:
            return None
        name = self._variable_scope.name
        return name if not name or name.endswith("/") else name + "/"

    def _collection(self, key: str) -> list:
        scope_name = self.variable_scope_name
        if scope_name is None:
            return []
        return get_default_graph().get_collection(key, scope_name)

    @property
    def global_variables(self) -> list:
        return self._collection(GraphKeys.GLOBAL_VARIABLES)

    @property
    def trainable_variables(self) -> list:
        return self._collection(GraphKeys.TRAINABLE_VARIABLES)

    @property
    def non_trainable_variables(self) -> list:
        trainable = {id(v) for v in self.trainable_variables}
        return [v for v in self.global_variables if id(v) not in trainable]

    @property
    def local_variables(self) -> list:
        return self._collection(GraphKeys.LOCAL_VARIABLES)

    @property
    def variables(self) -> list:
        return self.global_variables

    weights = variables
    trainable_weights = trainable_variables
    non_trainable_weights = non_trainable_variables


def make_template(name_: str, func_: Callable, create_scope_now_: bool = False,
                  unique_name_: Optional[str] = None, custom_getter_: Optional[Callable] = None,
                  **kwargs) -> Template:
    """``func_`` (with ``kwargs`` bound) as a ``Template``: variables made by its first call
    in scope ``name_`` (made unique unless ``unique_name_``), shared by later calls."""
    if kwargs:
        func_ = functools.update_wrapper(functools.partial(func_, **kwargs), func_)
    return Template(name_, func_, create_scope_now=create_scope_now_,
                    unique_name=unique_name_, custom_getter=custom_getter_)
