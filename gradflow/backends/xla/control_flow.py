"""Lowerings of functional control flow: ``If`` to ``lax.cond``, ``While`` to ``lax.while_loop``
(or ``lax.scan`` when it records its iterations for a gradient), ``PartitionedCall`` inline.

A branch, loop body or called function (``framework/function.py``) lowers when every op
its outputs need lowers (``cluster.compilable``, checked at any depth of nesting) and
none of them reads or writes a variable, draws random numbers or keeps a kernel's
run-time check: those need the session's state or a value leaving the compiled code
mid-loop, so such a construct runs on NumPy, as before. The function's program is the
one the runtime builds for it (the plan optimizer folds its constants, so shapes and
axes inside are static), traced with the same lowerings as a cluster.

A loop whose gradient is asked for records, per iteration, its state and the values
the gradient reads (the ``LoopHistory`` of ``ops/functional.py``). Compiled, the
history is a stack of those values over a static bound on the iterations: the loop
runs as a ``lax.scan`` of that many steps that stop changing the state once ``cond``
fails, and counts the iterations run. The bound is the loop's counter limit: a loop
variable starting at a constant, incremented by one, and compared to a constant in
``cond`` (``maximum_iterations``, ``dynamic_rnn``'s and ``map_fn``'s loops over a
static number of steps). Without one such a loop stays on NumPy; a loop without a
gradient needs none. The backward loop reads the history by index
(``LoopHistoryRead``) and runs ``LoopHistorySize`` times.
"""
from __future__ import annotations

import weakref
from typing import Optional, Sequence

import numpy as np

from gradflow.backends.xla.cluster import compilable, static_numeric
from gradflow.backends.xla.lowerings import is_variable_ref, lowering_of, register
from gradflow.backends.xla.runtime import evaluate
from gradflow.framework import dtypes
from gradflow.framework.constant import constant_value
from gradflow.framework.function import Function
from gradflow.framework.graph import Operation, Tensor
from gradflow.runtime.executor import graph_structure_version, required_ops
from gradflow.runtime.optimizer import Constant, Program, build_program

__all__ = ["function_program", "lower_function", "iteration_bound", "MAX_HISTORY_BYTES"]

# function -> (its graph's structure version, its program or None when it cannot lower);
# weak, so a dropped graph's functions go with it
_programs: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def function_program(function: Function) -> Optional[Program]:
    """The program of ``function`` when all of it lowers, else None (cached per graph
    version)."""
    version = graph_structure_version(function.graph)
    cached = _programs.get(function)
    if cached is not None and cached[0] == version:
        return cached[1]
    program = _lowerable_program(function)
    _programs[function] = (version, program)
    return program


def _lowerable_program(function: Function) -> Optional[Program]:
    fed = set(function.inputs)
    ops = required_ops(function.outputs, (), fed)
    # unfused: each node is one op, lowered by its own lowering
    program = build_program(ops, function.outputs, function.inputs, (), fuse=False)
    for node in program.nodes:
        lowering = lowering_of(node.op._type)
        if lowering is None or lowering.writes or lowering.random or lowering.checks \
                or not compilable(node):
            return None
    for value in program.fetches:
        if isinstance(value, Tensor) and not (static_numeric(value) or _is_variant(value)):
            return None
    return program


def _is_variant(t: Tensor) -> bool:
    return t.dtype.base_dtype is dtypes.variant


def _like(lower, value, t: Tensor):
    """``value`` with ``t``'s dtype and static shape (variant values pass as they are)."""
    if _is_variant(t):
        return value
    jnp = lower.jnp
    return jnp.reshape(jnp.asarray(value).astype(t.dtype.as_numpy_dtype),
                       tuple(t.shape.as_list()))


def lower_function(lower, function: Function, args: Sequence, like: Sequence[Tensor]) -> list:
    """Traces ``function`` on ``args``; its results take the dtypes and shapes of ``like``."""
    program = function_program(function)
    env = dict(zip(function.inputs, args, strict=True))
    evaluate(lower, program.nodes, env)
    return [_like(lower, value.value if isinstance(value, Constant) else env[value], t)
            for value, t in zip(program.fetches, like, strict=True)]


def _functions_lower(*functions: Function) -> bool:
    return all(function_program(f) is not None for f in functions)


# ---------------------------------------------------------------------- calls
@register("PartitionedCall", variants=True, forwards_refs=True,
          accepts=lambda op: _functions_lower(op._attrs["f"]))
def _call(L, op, *args):
    function = op._attrs["f"]
    results = lower_function(L, function, args, function.outputs)
    return results[0] if len(results) == 1 else tuple(results)


@register("If", variants=True, forwards_refs=True,
          accepts=lambda op: _functions_lower(op._attrs["then_branch"],
                                              op._attrs["else_branch"]))
def _if(L, op, predicate, *args):
    outputs = op._outputs
    # variables arrive as their keys (strings, not operands): the branches close over them
    keys = {i: a for i, a in enumerate(args) if isinstance(a, str)}
    operands = tuple(a for a in args if not isinstance(a, str))

    def branch(function):
        def run(values):
            values = iter(values)
            full = [keys[i] if i in keys else next(values) for i in range(len(args))]
            return tuple(lower_function(L, function, full, outputs))
        return run

    results = L.lax.cond(L.jnp.asarray(predicate).astype(bool).reshape(()),
                         branch(op._attrs["then_branch"]), branch(op._attrs["else_branch"]),
                         operands)
    return results[0] if len(results) == 1 else results


# ---------------------------------------------------------------------- loops
def _step_function(op: Operation) -> Function:
    """What one iteration runs: the body, or when recording the body that also returns
    the values its gradient reads."""
    saving = op._attrs.get("saving") if op._attrs.get("record_history") else None
    return saving if saving is not None else op._attrs["body"]


def iteration_bound(op: Operation) -> Optional[int]:
    """A static bound on a While op's iterations, from its counter: see the module
    docstring. None when the loop has no such counter."""
    n = op._attrs["num_loop_vars"]
    cond, body = op._attrs["cond"], op._attrs["body"]
    test = cond.outputs[0]
    tests = list(test.op._inputs) if test.op._type == "LogicalAnd" else [test]
    for less in tests:
        if less.op._type != "Less":
            continue
        counter, limit = less.op._inputs
        if counter not in cond.inputs[:n] or limit not in cond.inputs[n:]:
            continue
        j, k = cond.inputs.index(counter), cond.inputs.index(limit)
        start, stop = constant_value(op._inputs[j]), constant_value(op._inputs[k])
        if start is None or stop is None or not _increments(body, j):
            continue
        return max(int(stop) - int(start), 0)
    return None


def _increments(body: Function, j: int) -> bool:
    """Whether the body's loop variable ``j`` comes back as itself plus one."""
    step = body.outputs[j].op
    if step._type not in ("Add", "AddV2"):
        return False
    one = [t for t in step._inputs if t is not body.inputs[j]]
    return len(one) == 1 and len(step._inputs) == 2 and \
        np.array_equal(constant_value(one[0]), 1)


def _while_lowers(op: Operation) -> bool:
    if any(is_variable_ref(t) for t in op._inputs[:op._attrs["num_loop_vars"]]):
        return False  # a variable as a loop variable: its key cannot be carried
    functions = (op._attrs["cond"], op._attrs["body"], _step_function(op))
    if not _functions_lower(*functions):
        return False
    if not op._attrs.get("record_history"):
        return True
    bound = iteration_bound(op)
    return bound is not None and bound * _record_bytes(op) <= MAX_HISTORY_BYTES


# A compiled history holds every step up to the bound, run or not: past this size (a
# loop bounded by a large maximum_iterations) the loop records on NumPy instead.
MAX_HISTORY_BYTES = 1 << 28


def _record_bytes(op: Operation) -> int:
    """The bytes one recorded iteration takes (of its values of known size)."""
    n = op._attrs["num_loop_vars"]
    recorded = list(op._outputs[:n]) + list(_step_function(op).outputs[n:])
    return sum(t.shape.num_elements() * t.dtype.size for t in recorded
               if static_numeric(t))


@register("While", accepts=_while_lowers, variants=True, forwards_refs=True)
def _while(L, op, *args):
    n = op._attrs["num_loop_vars"]
    cond = op._attrs["cond"]
    state_like = list(op._outputs[:n])
    extras = list(args[n:])
    tree, jnp = L.jax.tree_util, L.jnp

    def test(state):
        (result,) = lower_function(L, cond, list(state) + extras, [cond.outputs[0]])
        return jnp.asarray(result).astype(bool).reshape(())

    start = tuple(_like(L, v, t) for v, t in zip(args[:n], state_like, strict=True))
    if not op._attrs.get("record_history"):
        body = op._attrs["body"]
        final = L.lax.while_loop(
            test, lambda state: tuple(lower_function(L, body, list(state) + extras,
                                                     state_like)), start)
        return tuple(final) + (np.int32(0),)  # no history: nothing reads it
    step_fn = _step_function(op)
    step_like = state_like + list(step_fn.outputs[n:])

    def iteration(carry, _):
        state, running, count = carry
        going = running & test(state)
        results = lower_function(L, step_fn, list(state) + extras, step_like)
        new_state = tree.tree_map(lambda new, old: jnp.where(going, new, old),
                                  tuple(results[:n]), state)
        record = tuple(state) + tuple(results[n:])
        return (new_state, going, count + going.astype(np.int32)), record

    (final, _, count), records = L.lax.scan(
        iteration, (start, jnp.asarray(True), jnp.asarray(0, np.int32)), None,
        length=iteration_bound(op))
    return tuple(final) + ((count, records),)


@register("LoopHistorySize", variants=True)
def _history_size(L, op, history):
    return history[0]


@register("LoopHistoryRead", variants=True)
def _history_read(L, op, history, index):
    tree = L.jax.tree_util
    count = len(op._attrs["dtypes"])
    record = tuple(tree.tree_map(lambda stack: stack[index], r) for r in history[1][:count])
    return record[0] if count == 1 else record


@register("ZerosLikeVariant", variants=True)
def _zeros_like_variant(L, op, value):
    return L.jax.tree_util.tree_map(L.jnp.zeros_like, value)


@register("AddVariants", variants=True)
def _add_variants(L, op, *values):
    total = values[0]
    for value in values[1:]:
        total = L.jax.tree_util.tree_map(lambda a, b: a + b, total, value)
    return total
