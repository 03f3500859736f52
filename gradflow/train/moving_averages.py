"""``ExponentialMovingAverage``: shadow variables tracking moving averages (TF1's
``tf.train.ExponentialMovingAverage``), typically of trained weights for evaluation.
"""
from __future__ import annotations

import contextlib

from typing import Optional, Union

from gradflow.framework import dtypes
from gradflow.framework.constant import constant, convert_to_tensor
from gradflow.framework.graph import Graph, GraphKeys, Operation, Tensor, get_default_graph
from gradflow.ops.array import shape as shape_of
from gradflow.ops.array import zeros
from gradflow.ops.control import group
from gradflow.ops.functional import cond
from gradflow.ops.math import cast, minimum, pow
from gradflow.ops.state import (Variable, assign, assign_add, assign_sub, global_variables,
                                is_variable_initialized, trainable_variables)
from gradflow.variables.scope import get_variable_scope

__all__ = ["ExponentialMovingAverage"]

_AVERAGEABLE = (dtypes.float16, dtypes.float32, dtypes.float64, dtypes.bfloat16)

Averaged = Union[Variable, Tensor]


def _key(value: Averaged):
    """Shadows are kept per variable op (or per tensor, for tensors)."""
    return value.op if isinstance(value, Variable) else value


class ExponentialMovingAverage:
    """Maintains ``shadow = decay * shadow + (1 - decay) * value`` for variables and tensors.

    ``apply(var_list)`` creates one non-trainable shadow variable per entry, named
    ``<variable scope>/<var>/<name>`` as TF1's slots are (in GLOBAL_VARIABLES; the
    averaged *variables* go to MOVING_AVERAGE_VARIABLES), and returns the op that updates
    them all. A variable's shadow starts at the variable's value (its initial value unless
    it is already initialised), a tensor's at zero. With ``num_updates`` (usually the
    global step) the decay used is ``min(decay, (1 + num_updates) / (10 + num_updates))``.
    With ``zero_debias``, the averages of *tensors* (not variables, as in TF1) are corrected
    for their zero start (Adam's bias correction), with two more variables
    ``<variable scope>/<shadow>/biased`` and ``.../local_step``.

    Called inside a ``cond`` branch (the hand-written batch norm's
    ``cond(is_training, mean_var_with_update, ...)``), the shadows are made in the outer
    graph and the update op in the branch, so it runs only when the branch is taken.
    """

    def __init__(self, decay, num_updates=None, zero_debias: bool = False,
                 name: str = "ExponentialMovingAverage"):
        self._decay = decay
        self._num_updates = num_updates
        self._zero_debias = bool(zero_debias)
        self._name = name
        self._averages: dict = {}
        self._debiased: set = set()  # keys of averages corrected for their zero start

    @property
    def name(self) -> str:
        return self._name

    def apply(self, var_list=None) -> Operation:
        """Creates the shadows of ``var_list`` (default: trainable variables) that do not
        exist yet and returns an op updating the shadows of all of ``var_list``."""
        values = list(trainable_variables() if var_list is None else var_list)
        for value in values:
            if not isinstance(value, (Variable, Tensor)):
                raise TypeError(f"ExponentialMovingAverage.apply: var_list must hold "
                                f"Variables or Tensors, got {type(value).__name__}: "
                                f"{value!r}")
            if value.dtype not in _AVERAGEABLE:
                raise TypeError(f"The variables must be half, float, or double: {value.name}")
        graph = _update_graph(values)
        outer = _outermost(graph)
        averages, debiased = dict(self._averages), set(self._debiased)
        try:
            with outer.atomic(), graph.as_default(), graph.atomic():
                for value in values:
                    if _key(value) not in self._averages:
                        self._averages[_key(value)] = self._create_shadow(outer, value)
                return self._update_op(graph, values)
        except BaseException:
            self._averages, self._debiased = averages, debiased
            raise

    def _create_shadow(self, graph: Graph, value: Averaged) -> Variable:
        if isinstance(value, Variable):
            with graph.control_dependencies(None), graph.colocate_with(value.op):
                start = cond(is_variable_initialized(value), value.read_value,
                             lambda: value.initial_value)
            shadow = self._shadow_variable(graph, value, lambda: start)
            graph.add_to_collection(GraphKeys.MOVING_AVERAGE_VARIABLES, value)
            return shadow
        shadow = self._shadow_variable(graph, value, lambda: _zeros_like(value))
        if self._zero_debias:
            self._debiased.add(_key(value))
        return shadow

    def _shadow_variable(self, graph: Graph, value: Averaged, initial_value) -> Variable:
        """A non-trainable variable ``<variable scope>/<value's op>/<name>``."""
        with graph.as_default(), graph.control_dependencies(None), \
                graph.name_scope(_slot_scope(value.op.name)), _colocated(graph, value.op):
            return Variable(initial_value, trainable=False, name=self._name,
                            dtype=value.dtype, validate_shape=value.shape.is_fully_defined())

    def _update_op(self, graph: Graph, values: list) -> Operation:
        with graph.name_scope(self._name) as scope:
            decay = convert_to_tensor(self._decay, name="decay")
            decay = cast(decay, dtypes.float32) if decay.dtype is not dtypes.float32 else decay
            if self._num_updates is not None:
                num_updates = self._num_updates
                if isinstance(num_updates, Variable):
                    # A fresh read, like the values': the global step a train op under the
                    # control dependencies in force has just incremented (as in TF1).
                    num_updates = num_updates.read_value()
                num_updates = cast(num_updates, dtypes.float32, name="num_updates")
                decay = minimum(decay, (1.0 + num_updates) / (10.0 + num_updates))
            updates = [self._assign_moving_average(graph, self._averages[_key(v)], v, decay,
                                                   _key(v) in self._debiased)
                       for v in values]
            return group(*updates, name=scope)

    def _assign_moving_average(self, graph: Graph, shadow: Variable, value: Averaged,
                               decay: Tensor, zero_debias: bool):
        """``shadow -= (shadow - value) * (1 - decay)``, bias-corrected if asked."""
        with graph.name_scope("AssignMovingAvg") as scope:
            if isinstance(value, Variable):
                # A fresh read, ordered after the control dependencies in force (the
                # usual `with control_dependencies([train_op]): ema.apply(...)`).
                value = value.read_value()
            rate = cast(1.0 - decay, shadow.dtype)
            if not zero_debias:
                return assign_sub(shadow, (shadow - value) * rate, name=scope)
            biased, local_step = self._debias_variables(_outermost(graph), shadow)
            update_biased = assign_sub(biased, (biased - value) * rate)
            update_step = assign_add(local_step, constant(1, dtype=shadow.dtype))
            bias_factor = 1 - pow(1.0 - rate, update_step)
            return assign(shadow, update_biased / bias_factor, name=scope)

    @staticmethod
    def _debias_variables(graph: Graph, shadow: Variable) -> tuple[Variable, Variable]:
        """``<variable scope>/<shadow>/biased`` (the plain average) and ``.../local_step``."""
        with graph.as_default(), graph.control_dependencies(None), \
                graph.name_scope(_slot_scope(shadow.op.name)), graph.colocate_with(shadow.op):
            biased = Variable(lambda: _zeros_like(shadow), trainable=False, name="biased",
                              dtype=shadow.dtype,
                              validate_shape=shadow.shape.is_fully_defined())
            local_step = Variable(lambda: zeros([], dtype=shadow.dtype), trainable=False,
                                  name="local_step", dtype=shadow.dtype)
        return biased, local_step

    def average(self, var: Averaged) -> Optional[Variable]:
        """The shadow variable of ``var``, or None if ``apply`` never saw it."""
        return self._averages.get(_key(var))

    def average_name(self, var: Averaged) -> str:
        """The op name of ``var``'s shadow: the existing one, else the name it would get."""
        shadow = self.average(var)
        if shadow is not None:
            return shadow.op.name
        return var.graph.unique_name(f"{var.op.name}/{self._name}", mark_as_used=False)

    def variables_to_restore(self, moving_avg_variables=None) -> dict:
        """``{checkpoint name: variable}`` for a Saver that loads averages into the model.

        Each variable of ``moving_avg_variables`` (default: trainable variables and
        MOVING_AVERAGE_VARIABLES) is restored from its shadow's name; every other global
        variable from its own name.
        """
        if moving_avg_variables is None:
            moving_avg_variables = trainable_variables() + \
                get_default_graph().get_collection(GraphKeys.MOVING_AVERAGE_VARIABLES)
        averaged = list({id(v): v for v in moving_avg_variables}.values())
        name_map = {self.average_name(v): v for v in averaged}
        averaged_names = {v.name for v in averaged}
        for v in global_variables():
            if v.name not in averaged_names and v.op.name not in name_map:
                name_map[v.op.name] = v
        return name_map


def _update_graph(values: list) -> Graph:
    """Where the update op goes: the default graph when the values live in it or in a
    graph enclosing it (a branch or loop body being built), else the values' graph."""
    graph = get_default_graph()
    if not values:
        return graph
    enclosing = graph
    while enclosing is not None:
        if enclosing is values[0].graph:
            return graph
        enclosing = enclosing.outer_graph
    return values[0].graph


def _outermost(graph: Graph) -> Graph:
    """The graph shadow variables are made in (TF1's init_scope)."""
    while graph.outer_graph is not None:
        graph = graph.outer_graph
    return graph


def _slot_scope(op_name: str) -> str:
    """The absolute name scope of a shadow of ``op_name``: under the current variable
    scope, as TF1's slot variables are (``bn1/bn1/moments/Squeeze/...`` in scope bn1)."""
    prefix = get_variable_scope().name
    return f"{prefix}/{op_name}/" if prefix else f"{op_name}/"


def _colocated(graph: Graph, op: Operation):
    """Colocation with ``op`` when it is in ``graph`` (not made in a branch being built)."""
    return graph.colocate_with(op) if op.graph is graph else contextlib.nullcontext()


def _zeros_like(value: Averaged) -> Tensor:
    """Zeros of ``value``'s shape and dtype (a dynamic shape if the static one is partial)."""
    shape = value.shape.as_list() if value.shape.is_fully_defined() else shape_of(value)
    return zeros(shape, dtype=value.dtype)
