"""Lowerings of functional control flow: ``If`` to ``lax.cond``, ``While`` to ``lax.while_loop``.

A branch or loop body is a graph function (``framework/function.py``). It lowers when
every op its outputs need lowers (``cluster.compilable``, checked at any depth of
nesting) and none of them reads or writes a variable, draws random numbers or keeps a
kernel's run-time check: those need the session's state or a value leaving the
compiled code mid-loop, so such a construct runs on NumPy, as before. The function's
program is the one the runtime builds for it (the plan optimizer folds its constants,
so shapes and axes inside are static), traced with the same lowerings as a cluster.

``maximum_iterations`` needs nothing of its own: ``while_loop`` carries it as a counter
tested in ``cond``, which lowers like any other op. A loop whose gradient is asked for
records its iterations (``record_history``) for the backward loop; such a loop, and the
history ops, stay on NumPy.
"""
from __future__ import annotations

from typing import Optional, Sequence

import numpy as np

from gradflow.backends.xla.cluster import compilable, static_numeric
from gradflow.backends.xla.lowerings import lowering_of, register
from gradflow.backends.xla.runtime import evaluate
from gradflow.framework.function import Function
from gradflow.framework.graph import Tensor
from gradflow.runtime.executor import graph_structure_version, required_ops
from gradflow.runtime.optimizer import Constant, Program, build_program

__all__ = ["function_program", "lower_function"]

# function -> (its graph's structure version, its program or None when it cannot lower)
_programs: dict = {}


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
    program = build_program(ops, function.outputs, function.inputs, ())
    for node in program.nodes:
        lowering = lowering_of(node.op._type)
        if lowering is None or lowering.refs or lowering.random or lowering.checks \
                or not compilable(node):
            return None
    for value in program.fetches:
        if isinstance(value, Tensor) and not static_numeric(value):
            return None
    return program


def lower_function(lower, function: Function, args: Sequence, like: Sequence[Tensor]) -> list:
    """Traces ``function`` on ``args``; its results take the dtypes and shapes of ``like``."""
    program = function_program(function)
    env = dict(zip(function.inputs, args, strict=True))
    evaluate(lower, program.nodes, env)
    jnp = lower.jnp
    results = []
    for value, t in zip(program.fetches, like, strict=True):
        value = value.value if isinstance(value, Constant) else env[value]
        results.append(jnp.reshape(jnp.asarray(value).astype(t.dtype.as_numpy_dtype),
                                   tuple(t.shape.as_list())))
    return results


def _functions_lower(*functions: Function) -> bool:
    return all(function_program(f) is not None for f in functions)


def _if_lowers(op) -> bool:
    return _functions_lower(op._attrs["then_branch"], op._attrs["else_branch"])


@register("If", accepts=_if_lowers)
def _if(L, op, predicate, *args):
    then_branch, else_branch = op._attrs["then_branch"], op._attrs["else_branch"]
    outputs = op._outputs

    def branch(function):
        return lambda values: tuple(lower_function(L, function, values, outputs))

    results = L.lax.cond(L.jnp.asarray(predicate).astype(bool).reshape(()),
                         branch(then_branch), branch(else_branch), tuple(args))
    return results[0] if len(results) == 1 else results


def _while_lowers(op) -> bool:
    return not op._attrs.get("record_history") and \
        _functions_lower(op._attrs["cond"], op._attrs["body"])


@register("While", accepts=_while_lowers, opaque=True)
def _while(L, op, *args):
    n = op._attrs["num_loop_vars"]
    cond, body = op._attrs["cond"], op._attrs["body"]
    state_like = op._outputs[:n]
    extras = list(args[n:])
    test_like = [cond.outputs[0]]

    def test(state):
        (result,) = lower_function(L, cond, list(state) + extras, test_like)
        return L.jnp.asarray(result).astype(bool).reshape(())

    def step(state):
        return tuple(lower_function(L, body, list(state) + extras, state_like))

    start = tuple(L.jnp.reshape(L.jnp.asarray(v).astype(t.dtype.as_numpy_dtype),
                                tuple(t.shape.as_list()))
                  for v, t in zip(args[:n], state_like, strict=True))
    final = L.lax.while_loop(test, step, start)
    # the iteration history is recorded only for a gradient, whose loops stay on NumPy
    return tuple(final) + (np.zeros((), np.int32),)
