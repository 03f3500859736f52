"""``Optimizer``: the base class of every optimizer (TF1's ``tf.train.Optimizer``).

``minimize`` = ``compute_gradients`` + ``apply_gradients``. A concrete optimizer says
three things: its hyperparameters (``_hyper``), the update rule it applies (``_rule``,
a name in :data:`gradflow.train.training_ops.UPDATE_RULES`, which also lists the rule's
slots) and, where a slot does not start at zero, its initial value (``_slot_fill``).
Custom optimizers may instead override TF1's hooks ``_create_slots``, ``_prepare``,
``_apply_dense``, ``_apply_sparse`` and ``_finish``.
"""
from __future__ import annotations

import collections.abc
import contextlib
from typing import Iterator, Optional

import numpy as np

from gradflow.autodiff.gradients import gradients
from gradflow.framework import dtypes
from gradflow.framework.constant import constant, convert_to_tensor
from gradflow.framework.graph import Graph, GraphKeys, Operation, Tensor, get_default_graph
from gradflow.framework.indexed_slices import IndexedSlices
from gradflow.ops import array, control, math
from gradflow.ops.state import Variable, assign_add
from gradflow.tools.diagnostics import explain_gradient
from gradflow.train.training_ops import UPDATE_RULES, apply_update
from gradflow.variables.scope import get_variable_scope

__all__ = ["Optimizer"]

_VALID_DTYPES = (dtypes.float32, dtypes.float64, dtypes.float16, dtypes.bfloat16)


class Optimizer:
    """Base class: computes gradients of a loss and applies them to variables."""

    GATE_NONE = 0
    GATE_OP = 1
    GATE_GRAPH = 2

    _rule: Optional[str] = None

    def __init__(self, use_locking: bool, name: str):
        if not name:
            raise ValueError("Must specify the optimizer name")
        self._use_locking = use_locking  # kept for TF1-style subclasses; runs are serial
        self._name = name
        self._hyper: dict[str, object] = {}
        self._hyper_tensors: dict[str, Tensor] = {}
        self._hyper_names: dict[str, str] = {}  # op names of hyperparameters, if not keys
        self._slot_fill: dict[str, float] = {}
        self._slot_op_names: dict[str, str] = {}  # slot variable names, if not self._name
        self._slots: dict[str, dict[Operation, Variable]] = {}
        self._non_slots: dict[tuple[str, Graph], Variable] = {}

    def get_name(self) -> str:
        return self._name

    # -------------------------------------------------------------- public API
    def minimize(self, loss, global_step=None, var_list=None, gate_gradients: int = GATE_OP,
                 aggregation_method=None, colocate_gradients_with_ops: bool = False,
                 name: Optional[str] = None, grad_loss=None) -> Operation:
        """Adds ops that update ``var_list`` to decrease ``loss``; returns the train op.

        Raises ValueError when no variable gets a gradient, explaining why for each.
        """
        loss = _loss_tensor(loss)
        with loss.graph.atomic():
            grads_and_vars = self.compute_gradients(
                loss, var_list=var_list, gate_gradients=gate_gradients,
                aggregation_method=aggregation_method,
                colocate_gradients_with_ops=colocate_gradients_with_ops, grad_loss=grad_loss)
            if all(g is None for g, _ in grads_and_vars):
                raise ValueError(_no_gradients_message(grads_and_vars, loss))
            return self.apply_gradients(grads_and_vars, global_step=global_step, name=name)

    def compute_gradients(self, loss, var_list=None, gate_gradients: int = GATE_OP,
                          aggregation_method=None, colocate_gradients_with_ops: bool = False,
                          grad_loss=None, stop_gradients=None) -> list:
        """Returns ``[(gradient or None, variable), ...]`` of ``loss`` for ``var_list``.

        ``var_list`` defaults to the graph's trainable variables.
        """
        if gate_gradients not in (Optimizer.GATE_NONE, Optimizer.GATE_OP, Optimizer.GATE_GRAPH):
            raise ValueError("gate_gradients must be one of: Optimizer.GATE_NONE, "
                             "Optimizer.GATE_OP, Optimizer.GATE_GRAPH.  Not "
                             f"{gate_gradients}")
        loss = _loss_tensor(loss)
        _assert_valid_dtypes([loss] if grad_loss is None else [loss, convert_to_tensor(grad_loss)])
        variables = _variable_list(var_list, loss.graph)
        graph = loss.graph
        with graph.atomic(), graph.as_default():
            grads = gradients(loss, [v.ref() for v in variables], grad_ys=grad_loss,
                              gate_gradients=gate_gradients == Optimizer.GATE_OP,
                              aggregation_method=aggregation_method,
                              colocate_gradients_with_ops=colocate_gradients_with_ops,
                              stop_gradients=stop_gradients)
            if gate_gradients == Optimizer.GATE_GRAPH:
                grads = control.tuple(grads)
        grads_and_vars = list(zip(grads, variables))
        _assert_valid_dtypes([v for g, v in grads_and_vars if g is not None])
        return grads_and_vars

    def apply_gradients(self, grads_and_vars, global_step=None,
                        name: Optional[str] = None) -> Operation:
        """Adds the ops applying ``grads_and_vars``; increments ``global_step`` if given.

        Returns the train op: it runs every update (and then the step increment).
        """
        pairs = _checked_pairs(grads_and_vars)
        var_list = [v for g, v in pairs if g is not None]
        if not var_list:
            raise ValueError(f"No gradients provided for any variable: "
                             f"{[str(v) for _, v in pairs]}.")
        graph = var_list[0].graph
        with graph.atomic(), graph.as_default(), self._forgetting_new_variables_on_error():
            with graph.control_dependencies(None):
                self._create_slots(var_list)
            with graph.name_scope(name or self._name) as scope:
                self._prepare()
                update_ops = [self._update_op(grad, var) for grad, var in pairs
                              if grad is not None]
                train_op = self._train_op(graph, update_ops, scope, global_step)
            if train_op not in graph.get_collection(GraphKeys.TRAIN_OP):
                graph.add_to_collection(GraphKeys.TRAIN_OP, train_op)
            return train_op

    @contextlib.contextmanager
    def _forgetting_new_variables_on_error(self) -> Iterator[None]:
        """The graph undoes a failed call's ops; this undoes its slot bookkeeping."""
        slots = {name: dict(by_var) for name, by_var in self._slots.items()}
        non_slots = dict(self._non_slots)
        try:
            yield
        except BaseException:
            self._slots, self._non_slots = slots, non_slots
            raise

    def get_slot(self, var, name: str) -> Optional[Variable]:
        """The slot variable ``name`` (e.g. 'm', 'momentum') kept for ``var``, or None."""
        return self._slots.get(name, {}).get(_var_key(var))

    def get_slot_names(self) -> list[str]:
        return sorted(self._slots)

    def variables(self) -> list[Variable]:
        """The optimizer's own variables (slots, accumulators) in the default graph."""
        graph = get_default_graph()
        own = [v for (_, g), v in self._non_slots.items() if g is graph]
        own += [v for slots in self._slots.values() for v in slots.values() if v.graph is graph]
        return sorted(own, key=lambda v: v.name)

    # ------------------------------------------------------ hooks for subclasses
    def _create_slots(self, var_list: list) -> None:
        """Creates the slots the update rule reads (zeros unless ``_slot_fill`` says)."""
        if self._rule is None:
            return
        for var in var_list:
            for slot_name in UPDATE_RULES[self._rule].slots:
                self._filled_slot(var, self._slot_fill.get(slot_name, 0.0), slot_name,
                                  self._slot_op_names.get(slot_name, self._name))

    def _prepare(self) -> None:
        """Converts the hyperparameters (values, tensors or callables) to tensors."""
        self._hyper_tensors = {
            key: convert_to_tensor(value() if callable(value) else value,
                                   name=self._hyper_names.get(key, key))
            for key, value in self._hyper.items()}

    def _apply_dense(self, grad: Tensor, var: Variable):
        return self._apply_rule(grad, var)

    def _apply_sparse(self, grad: IndexedSlices, var: Variable):
        return self._apply_rule(grad, var)

    def _finish(self, update_ops: list, name_scope: str) -> Operation:
        return control.group(*update_ops, name=name_scope)

    def _rule_attrs(self) -> dict:
        """Attrs of the update op besides its inputs (e.g. ``use_nesterov``)."""
        return {}

    def _hyper_tensor(self, key: str, dtype: dtypes.DType) -> Tensor:
        return math.cast(self._hyper_tensors[key], dtype)

    # ------------------------------------------------------------------ slots
    def _zeros_slot(self, var: Variable, slot_name: str, op_name: str) -> Variable:
        return self._filled_slot(var, 0.0, slot_name, op_name)

    def _filled_slot(self, var: Variable, value: float, slot_name: str,
                     op_name: str) -> Variable:
        """The slot ``slot_name`` of ``var``, created as ``var``-shaped ``value`` if new."""
        def initial_value():
            # TF1's slot initializers: ``Initializer/zeros`` (or ``ones``, or ``Const``
            # for another value), one Const unless the slot is large
            if not var.shape.is_fully_defined():
                return array.fill(array.shape(var.initialized_value()),
                                  constant(value, dtype=var.dtype, name="value"),
                                  name="zeros" if value == 0 else "Const")
            if value in (0, 1):
                make = array.zeros if value == 0 else array.ones
                return make(var.shape, dtype=var.dtype)
            return constant(np.full(var.shape.as_list(), value, var.dtype.as_numpy_dtype),
                            dtype=var.dtype, name="Const")
        return self._get_or_make_slot(var, initial_value, slot_name, op_name)

    def _get_or_make_slot(self, var: Variable, initial_value, slot_name: str,
                          op_name: str) -> Variable:
        """The slot ``slot_name`` of ``var``, created from ``initial_value`` if new.

        A slot is a non-trainable variable named ``<var>/<op_name>`` next to ``var``,
        under the variable scope in force as in TF1 (``train/model/w/Adam`` when
        ``minimize`` is called inside ``variable_scope("train")``).
        """
        slots = self._slots.setdefault(slot_name, {})
        key = _var_key(var)
        if key not in slots:
            graph = var.graph
            prefix = get_variable_scope().name
            scope = f"{prefix}/{var.op.name}/" if prefix else f"{var.op.name}/"
            with graph.as_default(), graph.name_scope(scope), \
                    graph.colocate_with(var.op):
                slots[key] = Variable(initial_value, trainable=False, name=op_name,
                                      dtype=var.dtype,
                                      validate_shape=var.shape.is_fully_defined())
        return slots[key]

    def _create_non_slot_variable(self, initial_value, name: str,
                                  colocate_with: Variable) -> Variable:
        """One variable per optimizer and graph (e.g. Adam's ``beta1_power``)."""
        graph = colocate_with.graph
        key = (name, graph)
        if key not in self._non_slots:
            with graph.as_default(), graph.colocate_with(colocate_with.op):
                self._non_slots[key] = Variable(initial_value, trainable=False, name=name)
        return self._non_slots[key]

    def _get_non_slot_variable(self, name: str, graph: Graph) -> Optional[Variable]:
        return self._non_slots.get((name, graph))

    # -------------------------------------------------------------- internals
    def _apply_rule(self, grad, var: Variable) -> Operation:
        if self._rule is None:
            raise NotImplementedError(f"{type(self).__name__} must implement _apply_dense "
                                      "and _apply_sparse or name an update _rule")
        rule = UPDATE_RULES[self._rule]
        slots = [self.get_slot(var, s).ref() for s in rule.slots]
        hypers = [self._hyper_tensor(h, var.dtype) for h in rule.hypers]
        return apply_update(rule.name, var.ref(), slots, hypers, grad, **self._rule_attrs())

    def _update_op(self, grad, var: Variable):
        graph = var.graph
        with graph.name_scope("update_" + var.op.name), graph.colocate_with(var.op):
            if isinstance(grad, IndexedSlices):
                if var.constraint is not None:
                    raise RuntimeError("Cannot use a constraint function on a sparse variable.")
                return self._apply_sparse(grad, var)
            update = self._apply_dense(grad, var)
            if var.constraint is None:
                return update
            with graph.control_dependencies([update]):
                return var.assign(var.constraint(var.read_value()))

    def _train_op(self, graph: Graph, update_ops: list, scope: str, global_step) -> Operation:
        if global_step is None:
            return self._finish(update_ops, scope)
        with graph.control_dependencies([self._finish(update_ops, "update")]):
            with graph.colocate_with(_var_key(global_step)):
                return assign_add(global_step, 1, name=scope).op


# ------------------------------------------------------------------- helpers
def _loss_tensor(loss) -> Tensor:
    if callable(loss) and not isinstance(loss, (Tensor, Variable)):
        loss = loss()
    return convert_to_tensor(loss)


def _var_key(var) -> Operation:
    if isinstance(var, Variable):
        return var.op
    if isinstance(var, Tensor) and var.op.type == "VariableV2":
        return var.op
    raise TypeError(f"Expected a gf.Variable, got {type(var).__name__}: {var!r}")


def _assert_valid_dtypes(tensors) -> None:
    for t in tensors:
        if t.dtype not in _VALID_DTYPES:
            raise ValueError(f"Invalid type {t.dtype!r} for {t.name}, expected: "
                             f"[{', '.join(repr(d) for d in _VALID_DTYPES)}].")


def _flatten(values) -> list:
    """The variables of a ``var_list``: TF1's ``nest.flatten`` (dicts give their values in
    key order), extended to any iterable (sets in name order, dict views, generators)."""
    flat, stack = [], [values]
    while stack:
        item = stack.pop()
        if isinstance(item, (Variable, Tensor, str, bytes)) or \
                not isinstance(item, collections.abc.Iterable):
            flat.append(item)
        elif isinstance(item, dict):
            stack.extend(reversed([item[key] for key in sorted(item)]))
        elif isinstance(item, (set, frozenset)):
            stack.extend(sorted(item, key=lambda v: getattr(v, "name", repr(v)), reverse=True))
        else:
            stack.extend(reversed(list(item)))
    return flat


def _variable_list(var_list, graph: Graph) -> list:
    variables = graph.get_collection(GraphKeys.TRAINABLE_VARIABLES) if var_list is None \
        else _flatten(var_list)
    if not variables:
        raise ValueError("No variables to optimize.")
    for v in variables:
        _check_variable(v)
    return variables


def _check_variable(v) -> None:
    if not isinstance(v, Variable):
        raise NotImplementedError(f"Trying to optimize unsupported type {type(v).__name__}: "
                                  f"{v!r}; optimizers update gf.Variable objects")


def _checked_pairs(grads_and_vars) -> list:
    pairs = []
    for item in tuple(grads_and_vars):
        if not isinstance(item, (list, tuple)) or len(item) != 2:
            raise TypeError(f"grads_and_vars must hold (gradient, variable) pairs, got "
                            f"{item!r}")
        grad, var = item
        _check_variable(var)
        pairs.append((_checked_gradient(grad), var))
    if not pairs:
        raise ValueError("No variables provided.")
    return pairs


def _checked_gradient(grad):
    if grad is None or isinstance(grad, IndexedSlices):
        return grad
    try:
        return convert_to_tensor(grad)
    except (TypeError, ValueError):
        raise TypeError(f"Gradient must be convertible to a Tensor or IndexedSlices, or None: "
                        f"{grad!r}") from None


def _no_gradients_message(grads_and_vars: list, loss: Tensor) -> str:
    lines = [f"No gradients provided for any variable, check your graph for ops that do not "
             f"support gradients, between variables {[str(v) for _, v in grads_and_vars]} "
             f"and loss {loss}.", "Why each gradient is None:"]
    for _, var in grads_and_vars:
        reason = explain_gradient(loss, var).summary()
        lines.append(f"  {var.op.name}: {reason}")
    return "\n".join(lines)
