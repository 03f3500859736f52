"""Compiling the part of a graph that some fetches need into a flat, reusable plan.

A plan is a list of steps in creation (hence topological) order. Every value gets a
slot in a value list; each step names the slots it reads and writes, and the slots
whose last reader it is, so intermediates are dropped as soon as nothing needs them.

Compiling runs the plan-time optimizer (``runtime/optimizer.py``: aliases, constant
folding, common subexpressions, dead ops) and picks, per step, the op's kernel or an
allocation-aware fast kernel (``runtime/fast_kernels.py``) that may write its result
into the buffer of an input dying at that step. A plan runs interpreted at first; once
it has run ``CODEGEN_AFTER_RUNS`` times it is turned into straight-line Python
(``runtime/codegen.py``), which does the same steps without the interpreter's
per-step overhead (plans of up to ``CODEGEN_MAX_STEPS`` steps). Results are
bit-identical in every mode; with optimizations off (``set_optimizations(False)`` or
``GRADFLOW_OPTIMIZE=0``) a plan runs every required op's own kernel, interpreted.
"""
from __future__ import annotations

import concurrent.futures
import contextvars
import functools
import os
import re
import sys
import time
from typing import Optional, Sequence

import numpy as np

from gradflow.framework import errors
from gradflow.framework.function import Function
from gradflow.framework.graph import Graph, Operation, Tensor, gc_paused
from gradflow.runtime import blas_threads, clusters, codegen, fast_kernels
from gradflow.runtime.optimizer import (Constant, FusedMemberError, FusedNode, Node, Program,
                                        build_program)
from gradflow.runtime.state_locks import state_order

__all__ = ["Plan", "RunContext", "compile_plan", "check_kernels_enabled", "set_kernel_checks",
           "optimizations_enabled", "set_optimizations", "required_ops",
           "graph_structure_version", "state_writes"]

# When set, every kernel output is checked against its tensor's static dtype and shape.
# The test suite turns this on; it is off by default because it costs time per op.
_CHECK_KERNELS = os.environ.get("GRADFLOW_CHECK_KERNELS", "") not in ("", "0")
_OPTIMIZE = os.environ.get("GRADFLOW_OPTIMIZE", "1") != "0"
# Runs a plan makes interpreted before it is compiled to Python (0: compile at once).
CODEGEN_AFTER_RUNS = int(os.environ.get("GRADFLOW_CODEGEN_AFTER", "2"))
# CPython compiles ~30 us of source per step; beyond this many steps a plan stays
# interpreted (its kernels outweigh the interpreter's ~0.5 us per step anyway).
CODEGEN_MAX_STEPS = 20_000
# The optimizer costs ~10 us per op; plans of more ops run unoptimized the first time
# and are optimized when they run again, so a plan run once does not pay for it.
EAGER_OPTIMIZE_MAX_OPS = 20_000
# Differential testing: every optimized plan free of side effects is checked, on every
# run, against its unoptimized twin; any bit of difference raises AssertionError.
_VERIFY = os.environ.get("GRADFLOW_VERIFY_PLANS", "") not in ("", "0")
_SIDE_EFFECT_FREE = frozenset({"VariableV2", "ReadVariableOp"})  # stateful, but only read


def check_kernels_enabled() -> bool:
    return _CHECK_KERNELS


def set_kernel_checks(enabled: bool) -> None:
    global _CHECK_KERNELS
    _CHECK_KERNELS = bool(enabled)


def optimizations_enabled() -> bool:
    return _OPTIMIZE


def set_optimizations(enabled: bool) -> None:
    """Turns the plan optimizer and fast kernels on or off for plans compiled from now."""
    global _OPTIMIZE
    _OPTIMIZE = bool(enabled)


class RunContext:
    """What stateful kernels may touch during one run: the session's variables.

    Writes go to an overlay committed only when the whole run succeeds, so a failed
    run changes no variable. The session holds the locks of the entries the plan
    writes from before the run's first read until after the commit
    (``runtime/state_locks.py``), so concurrent updates are never lost.

    An optimizer update writes its new values into ``spare(key, current)``: the value
    the entry held before the last commit that replaced it, kept in ``spares`` (the
    session's) as long as nothing but that dict holds it, so an update reuses the
    same two buffers run after run instead of allocating.
    """

    __slots__ = ("session", "store", "pending", "levels", "spares", "recycled")

    def __init__(self, session, store: dict, spares: Optional[dict] = None):
        self.session = session
        self.store = store
        self.pending: dict = {}
        self.levels = 0  # graph functions nested on the current thread's stack
        self.spares = {} if spares is None else spares
        self.recycled: Optional[set] = None  # keys whose replaced values become spares

    def read_variable(self, key, name: str):
        value = self.pending.get(key)
        if value is None:
            value = self.store.get(key)
        if value is None:
            raise errors.FailedPreconditionError(
                None, None, f"Attempting to use uninitialized value {name}")
        if type(value) is clusters.DeviceValue:  # left on a device by a compiled run
            return value.host()
        return value

    def write_variable(self, key, value) -> None:
        self.pending[key] = value

    def spare(self, key, like) -> np.ndarray:
        """A C-ordered array of ``like``'s shape and dtype that nothing else holds, for
        the next value of entry ``key``: its spare buffer when there is one."""
        if self.recycled is None:
            self.recycled = set()
        self.recycled.add(key)
        buffer = _sole_spare(self.spares, key)
        if buffer is None or buffer.shape != like.shape or buffer.dtype != like.dtype:
            return np.empty(like.shape, like.dtype)
        return buffer

    def is_initialized(self, key) -> bool:
        return key in self.pending or key in self.store

    def commit(self) -> None:
        if self.recycled:
            for key in self.recycled:
                replaced = self.store.get(key)
                if replaced is not None and replaced is not self.pending.get(key):
                    self.spares[key] = replaced
            self.recycled = None
        self.store.update(self.pending)
        self.pending.clear()

    def call(self, function: Function, args: Sequence) -> list:
        """Runs a graph function (the body of a call, cond or loop op) within this run.

        Its plan is compiled on first use and kept on the function until its graph changes.
        """
        plan = function.plan
        if plan is None or plan.structure_version != graph_structure_version(function.graph):
            plan = function.plan = compile_plan(function.graph, function.outputs, function.inputs,
                                                track_writes=False)
        if self.levels >= LEVELS_PER_THREAD:
            return _on_fresh_stack(self, plan, args)
        self.levels += 1
        try:
            return plan.run_nested(self, args)
        finally:
            self.levels -= 1


def _spare_references(spares: dict, key) -> int:
    """References to the array popped from ``spares[key]`` (-1: none there): the
    caller's and getrefcount's own when nothing else holds it."""
    buffer = spares.pop(key, None)
    return -1 if buffer is None else sys.getrefcount(buffer)


# References an array popped from a dict has when nothing else holds it, measured
# with the interpreter running this module (borrowed references vary by version).
_SOLE_REFERENCES = _spare_references({0: np.empty(1)}, 0)


def _sole_spare(spares: dict, key) -> Optional[np.ndarray]:
    """``spares[key]``, removed, when it is a writable C-ordered array owning its
    memory that no one else holds (no fetched result, view or other entry): only
    then may it be overwritten. None otherwise."""
    buffer = spares.pop(key, None)
    if buffer is None or sys.getrefcount(buffer) != _SOLE_REFERENCES or \
            type(buffer) is not np.ndarray or buffer.base is not None or \
            not buffer.flags.c_contiguous or not buffer.flags.writeable:
        return None
    return buffer


# A graph function nested in another runs a few Python frames deeper. Past this many
# levels on one thread, the next level runs on a worker thread with a fresh stack (the
# calling thread waits for it), so 1,000 nested levels never meet the recursion limit.
LEVELS_PER_THREAD = 24
_hops = concurrent.futures.ThreadPoolExecutor(max_workers=100_000,
                                              thread_name_prefix="gradflow-nested")


def _on_fresh_stack(context: RunContext, plan, args: Sequence) -> list:
    """Runs ``plan`` on a worker thread, in this thread's context (NumPy's error state),
    counting nesting levels from zero there."""
    def run() -> list:
        context.levels = 1
        try:
            return plan.run_nested(context, args)
        finally:
            context.levels = outer

    outer = context.levels
    return _hops.submit(contextvars.copy_context().run, run).result()


class Step:
    """One kernel call: ``call([ctx,] *values[args][, out=values[out]])`` into ``outputs``.

    ``outputs`` holds a slot per op output (``SCRATCH`` for a fed one, whose computed
    value is dropped); ``frees`` the slots whose last reader this step is; ``fast``
    tells a fast kernel from the op's own.
    """

    __slots__ = ("op", "call", "args", "out", "outputs", "frees", "needs_context", "fast",
                 "tensors")

    def __init__(self, op: Operation, call, args: tuple, outputs: tuple, needs_context: bool,
                 fast: bool, tensors: Optional[Sequence[Tensor]] = None):
        self.op = op
        self.tensors = op.outputs if tensors is None else tensors  # one per output slot
        self.call = call
        self.args = args
        self.out: Optional[int] = None
        self.outputs = outputs
        self.frees: tuple = ()
        self.needs_context = needs_context
        self.fast = fast


class ClusterStep(Step):
    """A compiled cluster's step: its ``call`` runs all of ``cluster_ops`` at once."""

    __slots__ = ("cluster_ops", "device", "fused")

    def __init__(self, node: clusters.ClusterNode, args: tuple, outputs: tuple):
        super().__init__(node.ops[-1], node.call, args, outputs, True, False, node.outputs)
        self.cluster_ops = node.ops
        self.device = node.device
        self.fused = isinstance(node, FusedNode)  # the runtime's own, not compiled


SCRATCH = -1


class Plan:
    """The compiled schedule for one (fetches, feeds, targets) signature."""

    def __init__(self, steps: list, template: list, feed_slots: list, fetch_slots: list,
                 constant_fetches: frozenset, structure_version, optimized: bool):
        self.steps = steps
        self.template = template  # a run's initial slot values: folded constants filled in
        self.num_slots = len(template)
        self.feed_slots = feed_slots
        self.fetch_slots = fetch_slots
        self.constant_fetches = constant_fetches  # fetch positions served by a constant
        self.structure_version = structure_version
        self.codegen_after = CODEGEN_AFTER_RUNS if optimized and \
            len(steps) <= CODEGEN_MAX_STEPS else float("inf")
        self.runs = 0
        self._compiled: dict = {}  # checked? -> generated function
        self.reference: Optional[Plan] = None  # the unoptimized twin, when verifying
        # the session-state keys a run may write, in locking order (None: unknown)
        self.writes: Optional[tuple] = ()
        # the compiled clusters' ops, one tuple of op names a cluster (runtime/clusters.py)
        compiled = [step for step in steps if isinstance(step, ClusterStep) and not step.fused]
        self.clusters: tuple = tuple(tuple(op.name for op in step.cluster_ops)
                                     for step in compiled)
        self.cluster_devices = {op.name: step.device for step in compiled
                                for op in step.cluster_ops}
        # a plan that is one compiled cluster runs it directly (``_run_direct``)
        self.direct: Optional[ClusterStep] = compiled[0] if len(steps) == 1 and compiled \
            else None
        # BLAS threads for its products (None: as the load allows; blas_threads.py)
        self.blas_threads = blas_threads.plan_threads(step.op for step in steps)

    def run(self, context: Optional[RunContext], feed_values: Sequence,
            trace: Optional[list] = None) -> list:
        """Executes the steps; returns the fetched values in fetch order.

        With a ``trace`` list the steps run interpreted and each appends
        ``(op, start_ns, end_ns, output values)`` to it (``RunOptions.FULL_TRACE``).
        """
        if self.direct is not None and trace is None and self.reference is None:
            return self._run_direct(context, feed_values)
        values = self.template.copy()
        for slot, value in zip(self.feed_slots, feed_values):
            values[slot] = value
        check = _CHECK_KERNELS
        self.runs += 1
        threads = blas_threads.enter(self.blas_threads)
        try:
            # NaN and infinity are values here, as in TF: NumPy's floating-point
            # warnings would only repeat, from deep inside a kernel, what the fetched
            # values show (gf.check_numerics is the way to make them errors)
            with np.errstate(all="ignore"):
                if trace is None:
                    self._execute(context, values, check)
                else:
                    _interpret_traced(self.steps, context, values, trace)
        finally:
            blas_threads.leave(threads)
        if self.constant_fetches:  # a constant's array is the plan's: each run copies it
            results = [values[s].copy() if i in self.constant_fetches else values[s]
                       for i, s in enumerate(self.fetch_slots)]
        else:
            results = [values[s] for s in self.fetch_slots]
        if self.reference is not None:
            _verify(self, results, self.reference.run(context, feed_values))
        return results

    def _run_direct(self, context: Optional[RunContext], feed_values: Sequence) -> list:
        """``run`` for a plan that is one compiled cluster: its call alone (compiled
        code calls neither NumPy kernels nor BLAS, so no thread count or error state
        to set; a failing check reruns its kernel under its own error state)."""
        step = self.direct
        values = self.template.copy()
        for slot, value in zip(self.feed_slots, feed_values):
            values[slot] = value
        self.runs += 1
        try:
            result = step.call(context, *[values[i] for i in step.args])
        except Exception as err:  # re-raised naming the cluster's op
            _raise_kernel_error(step, err)
        outputs = step.outputs
        if len(outputs) == 1:
            values[outputs[0]] = result
        else:
            for slot, value in zip(outputs, result):
                values[slot] = value
        if _CHECK_KERNELS:
            _check_outputs(step, [values[s] for s in outputs])
        return [values[s].copy() if i in self.constant_fetches else values[s]
                for i, s in enumerate(self.fetch_slots)]

    def run_nested(self, context: RunContext, feed_values: Sequence) -> list:
        """``run`` for a graph function called by a running plan (a loop body runs
        thousands of times): NumPy's error state is the caller's already, and the BLAS
        threads change only when this plan has its own choice."""
        values = self.template.copy()
        for slot, value in zip(self.feed_slots, feed_values):
            values[slot] = value
        self.runs += 1
        threads = 0 if self.blas_threads is None else blas_threads.enter(self.blas_threads)
        try:
            self._execute(context, values, _CHECK_KERNELS)
        finally:
            if threads:
                blas_threads.leave(threads)
        if self.constant_fetches or self.reference is not None:
            results = [values[s].copy() if i in self.constant_fetches else values[s]
                       for i, s in enumerate(self.fetch_slots)]
            if self.reference is not None:
                _verify(self, results, self.reference.run(context, feed_values))
            return results
        return [values[s] for s in self.fetch_slots]

    def _execute(self, context, values: list, check: bool) -> None:
        generated = self._generated(check)
        if generated is None:
            _interpret(self.steps, context, values, check)
            return
        try:
            generated(context, values)
        except Exception as err:  # noqa: BLE001 - re-raised naming the failing op
            _raise_kernel_error(self.steps[generated.failed_step(err)], err)

    def _generated(self, check: bool):
        generated = self._compiled.get(check)
        if generated is None and self.runs > self.codegen_after:
            generated = self._compiled[check] = codegen.generate(
                self.steps, _check_outputs if check else None)
        return generated


def _verify(plan: Plan, results: list, expected: list) -> None:
    for tensor_slot, got, want in zip(plan.fetch_slots, results, expected):
        if not same_bits(got, want):
            raise AssertionError(f"optimized plan differs from the unoptimized one in fetch "
                                 f"slot {tensor_slot}: {got!r} != {want!r}")


def same_bits(a, b) -> bool:
    """Whether two results are the same: type, dtype, shape and every bit of the data."""
    if type(a) is not type(b):
        return False
    if not isinstance(a, (np.ndarray, np.generic)):
        return True  # handles (variables, loops...) compare by kind only
    if a.dtype != b.dtype or a.shape != b.shape:
        return False
    if a.dtype.kind == "O":
        return bool(np.all(a == b))
    return np.ascontiguousarray(a).tobytes() == np.ascontiguousarray(b).tobytes()


def _interpret(steps: list, context, values: list, check: bool) -> None:
    for step in steps:
        args = [values[i] for i in step.args]
        if step.needs_context:
            args.insert(0, context)
        try:
            if step.out is None:
                result = step.call(*args)
            else:
                result = step.call(*args, out=values[step.out])
        except Exception as err:  # noqa: BLE001 - re-raised naming the failing op
            _raise_kernel_error(step, err)
        outputs = step.outputs
        if len(outputs) == 1:
            values[outputs[0]] = result
        else:
            for slot, value in zip(outputs, result):
                values[slot] = value
        if check:
            _check_outputs(step, [values[s] for s in outputs])
        for slot in step.frees:
            values[slot] = None


def _interpret_traced(steps: list, context, values: list, trace: list) -> None:
    """``_interpret`` recording each step's wall-clock span and outputs into ``trace``."""
    clock = time.perf_counter_ns
    for step in steps:
        args = [values[i] for i in step.args]
        if step.needs_context:
            args.insert(0, context)
        start = clock()
        try:
            result = step.call(*args) if step.out is None else \
                step.call(*args, out=values[step.out])
        except Exception as err:  # noqa: BLE001 - re-raised naming the failing op
            _raise_kernel_error(step, err)
        end = clock()
        results = [result] if len(step.outputs) == 1 else list(result)
        for slot, value in zip(step.outputs, results):
            values[slot] = value
        if isinstance(step, ClusterStep):  # every op of a cluster, over the cluster's span
            trace.extend((op, start, end, []) for op in step.cluster_ops)
        else:
            trace.append((step.op, start, end, results))
        for slot in step.frees:
            values[slot] = None


def _raise_kernel_error(step: Step, err: Exception):
    """Raises what a failing kernel's run raises: TF's error, naming the node (the
    member that failed, for a fused node)."""
    op = step.op
    if isinstance(err, FusedMemberError):
        op, err = err.op, err.error
    if isinstance(err, errors.OpError):
        if err.op is None:  # raised by a kernel: say which node failed, as TF does
            err.op = op
            err.message = f"{err.message}\n\t [[{{{{node {op.name}}}}}]]"  # TF's suffix
            err.args = (err.message,)
        raise err
    broadcast = _NUMPY_BROADCAST_FAILURE.search(str(err))
    if broadcast is not None:  # TF's words, naming the node as TF's suffix does
        shapes = [f"[{dims.strip('(),').replace(' ', '')}]" for dims in broadcast.groups()]
        raise errors.InvalidArgumentError(
            None, op, f"Incompatible shapes: {shapes[0]} vs. {shapes[1]}\n\t "
            f"[[{{{{node {op.name}}}}}]]") from err
    raise errors.InvalidArgumentError(
        None, op, f"{type(err).__name__} while running op '{op.name}' "
        f"(type {op.type}): {err}") from err


# NumPy's message for operands that do not broadcast (a binary op's kernel)
_NUMPY_BROADCAST_FAILURE = re.compile(r"could not be broadcast together with shapes "
                                      r"(\([\d,\s]*\))\s*(\([\d,\s]*\))")


def _check_outputs(step: Step, results: list) -> None:
    """Kernel outputs must have their tensors' static dtypes and shapes."""
    for tensor, slot, value in zip(step.tensors, step.outputs, results):
        if slot != SCRATCH:
            _check_value(tensor.op, tensor, value)


def _check_value(op: Operation, tensor: Tensor, value) -> None:
    if not isinstance(value, (np.ndarray, np.generic)) or value.dtype.kind == "O":
        return
    if value.dtype != np.dtype(tensor.dtype.as_numpy_dtype):
        raise errors.InternalError(None, op, f"Kernel of op '{op.name}' ({op.type}) "
                                   f"produced {value.dtype} for {tensor.dtype.name} output "
                                   f"{tensor.name}")
    if not tensor.shape.is_compatible_with(value.shape):
        raise errors.InternalError(None, op, f"Kernel of op '{op.name}' ({op.type}) "
                                   f"produced shape {value.shape} for output {tensor.name} "
                                   f"of static shape {tensor.shape}")


def required_ops(fetch_tensors: Sequence[Tensor], target_ops: Sequence[Operation],
                 fed: set) -> list[Operation]:
    """The ops that must run to produce the fetches, in creation order.

    Fed tensors cut the walk: their producers run only if needed for something else.
    """
    needed: set = set()
    stack = [t._op for t in fetch_tensors if t not in fed] + list(target_ops)
    while stack:
        op = stack.pop()
        if op in needed:
            continue
        needed.add(op)
        for t in op._inputs:
            if t not in fed and t._op not in needed:
                stack.append(t._op)
        # a control input whose outputs are all fed counts as run (a fed placeholder)
        stack.extend(c for c in op._control_inputs if c not in needed
                     and not (c._outputs and all(t in fed for t in c._outputs)))
    return sorted(needed, key=_op_id)


def _op_id(op: Operation) -> int:
    return op._id


def compile_plan(graph: Graph, fetch_tensors: Sequence[Tensor], feed_tensors: Sequence[Tensor],
                 target_ops: Sequence[Operation] = (),
                 optimize: Optional[bool] = None,
                 track_writes: bool = True, global_jit: bool = False) -> "Plan | _TieredPlan":
    """Builds the plan computing ``fetch_tensors`` (and running ``target_ops``) from feeds.

    ``optimize`` (default: the global setting) turns the optimizer and fast kernels on.
    ``track_writes`` finds the state the plan writes (``Plan.writes``), which a
    session locks; a graph function's plan runs under its caller's locks.
    ``global_jit`` (``ConfigProto``'s ``global_jit_level``) compiles every op that can be;
    without it only ops marked by ``jit_scope`` are (``runtime/clusters.py``).
    Returns something with ``run(context, feed_values)`` and ``structure_version``: a
    Plan, or for more than ``EAGER_OPTIMIZE_MAX_OPS`` ops a plan optimized on its
    second run.
    """
    optimize = _OPTIMIZE if optimize is None else optimize
    with graph.mutation_lock():
        ops = required_ops(fetch_tensors, target_ops, set(feed_tensors))
        structure_version = graph_structure_version(graph)
    for op in ops:
        if op._op_def.kernel is None:
            raise errors.InvalidArgumentError(None, op, _unfed_message(op))

    compiler = clusters.cluster_compiler(global_jit) \
        if clusters.jit_requested(ops, global_jit) else None

    read_order = _ReadOrder(ops)

    def schedule(optimized: bool) -> Plan:
        with gc_paused():  # compiling makes objects per op: no collections of the graph
            program = build_program(ops, fetch_tensors, feed_tensors, target_ops, optimized,
                                    fuse=compiler is None, ordered_after=read_order.after)
            program.nodes = read_order.reread(program, fetch_tensors)
            if compiler is not None:
                program = compiler(program, global_jit)
            return _Scheduler(program, feed_tensors, optimized).plan(structure_version)

    writes = read_order.plan_writes() if track_writes else None
    if optimize and len(ops) > EAGER_OPTIMIZE_MAX_OPS:
        return _TieredPlan(schedule(False), lambda: schedule(True), writes)
    plan = schedule(optimize)
    plan.writes = writes
    if optimize and _VERIFY and compiler is None and \
            all(not op._op_def.stateful or op._type in _SIDE_EFFECT_FREE for op in ops):
        plan.reference = schedule(False)
    return plan


# Context ops that read the session's state (or only name an entry of it).
_STATE_READERS = frozenset({"VariableV2", "ReadVariableOp", "IsVariableInitialized"})


def state_writes(ops: Sequence[Operation]) -> Optional[tuple]:
    """The session-state keys that running ``ops`` may write, in locking order.

    A context op writes the variables whose references it is given, and the entry its
    op definition names (``state_key``); an op running graph functions writes what
    their ops write, at any depth of nesting (walked with a stack, each function
    once). None when some op's writes cannot be told: the run then locks everything.
    """
    keys: set = set()
    seen: set = set()
    known: dict = {}
    pending = [ops]
    while pending:
        for op in pending.pop():
            op_def = op._op_def
            if not op_def.needs_context or op_def.locks_itself or op._type in _STATE_READERS:
                continue
            named = False
            if op_def.state_key is not None:
                keys.add(op_def.state_key(op._attrs))
                named = True
            for value in op._attrs.values():
                if isinstance(value, Function):
                    named = True
                    if value.graph not in seen:
                        seen.add(value.graph)
                        pending.append(value.graph.get_operations())
            for t in op._inputs:
                key = _variable_key(t, known)
                if key is not None:
                    keys.add(key)
                    named = True
            if not named:
                return None
    return tuple(sorted(keys, key=state_order))


# A write whose variables cannot be told (a graph function's, say): it may write any.
_ANY_VARIABLE = object()


class _ReadOrder:
    """Which variable reads of a plan the graph orders after writes to the variable.

    In TF1 a variable's ``v/read`` output shares the variable's buffer, so an op that a
    data or control edge orders after an update of the variable reads the updated
    value (``with control_dependencies([train_op]): ema.apply(...)`` averages the new
    weights). A plan reads each snapshot once, where its op was created;
    :meth:`reread` reads it again (into the same slot) before each node, and at the end
    for each fetch, that the graph orders after a write to its variable. Reads no edge
    orders after a write keep the value the run started with, one of the orders TF1
    allows. ``after`` maps each op ordered after writes to those write ops (for the
    optimizer, which must not merge it with an op ordered after other writes); both
    are empty for plans that write none of the variables they read.
    """

    def __init__(self, ops: Sequence[Operation]):
        self.read_key: dict = {}  # a snapshot tensor -> its variable
        self.after: dict = {}     # an op -> the write ops it is ordered after
        self.written: dict = {}   # a write op -> the variables it writes
        known: dict = {}
        for op in ops:
            if op._type == "ReadVariableOp":
                key = _variable_key(op._inputs[0], known)
                if key is not None:
                    self.read_key[op._outputs[0]] = key
            elif op._op_def.needs_context and not op._op_def.locks_itself and \
                    op._type not in _STATE_READERS:
                keys = state_writes([op])
                self.written[op] = frozenset((_ANY_VARIABLE,) if keys is None else keys)
        read_variables = set(self.read_key.values())
        if not any(_ANY_VARIABLE in keys or not keys.isdisjoint(read_variables)
                   for keys in self.written.values()):
            self.read_key = {}
            return
        for op in ops:
            writes: set = set()
            for producer in [t._op for t in op._inputs] + op._control_inputs:
                writes.update(self.after.get(producer, ()))
                if producer in self.written:
                    writes.add(producer)
            if writes:
                self.after[op] = frozenset(writes)

    def plan_writes(self) -> Optional[tuple]:
        """What :func:`state_writes` tells of the whole plan, from the per-op writes
        found here: the keys in locking order, None when some op's cannot be told."""
        keys: set = set()
        for written in self.written.values():
            if _ANY_VARIABLE in written:
                return None
            keys.update(written)
        return tuple(sorted(keys, key=state_order))

    def _variables_after(self, ops) -> set:
        return {key for op in ops for write in self.after.get(op, ())
                for key in self.written[write]}

    def reread(self, program: Program, fetch_tensors: Sequence[Tensor]) -> list:
        """The program's nodes with the snapshot reads the order asks for added."""
        if not self.read_key:
            return program.nodes
        result: list = []
        reader_of: dict = {}  # a snapshot tensor -> the node reading it

        def read_again(values, variables: set) -> None:
            for value in dict.fromkeys(v for v in values if isinstance(v, Tensor)):
                reader = reader_of.get(value)
                if reader is not None and (self.read_key[value] in variables
                                           or _ANY_VARIABLE in variables):
                    result.append(Node(reader.op, reader.inputs, reader.outputs))

        for node in program.nodes:
            members = node.ops if isinstance(node, clusters.ClusterNode) else (node.op,)
            variables = self._variables_after(members)
            if variables:
                read_again(node.inputs, variables)
            if type(node) is Node and node.outputs and node.outputs[0] in self.read_key:
                reader_of[node.outputs[0]] = node
            result.append(node)
        # fetches the optimizer made aliases of a snapshot (identity(v) after train_op)
        for tensor, value in zip(fetch_tensors, program.fetches, strict=True):
            variables = self._variables_after((tensor._op,))
            if variables:
                read_again((value,), variables)
        return result


def _variable_key(t: Tensor, known: dict):
    """The variable whose reference ``t`` is (through identities and captures), or None.

    ``known`` remembers every tensor walked through, so captures shared by nested
    functions are followed once."""
    walked = []
    key = None
    while True:
        if t in known:
            key = known[t]
            break
        walked.append(t)
        op = t._op
        if op._type == "VariableV2":
            key = op._attrs["shared_name"]
            break
        if op._type == "Identity":
            t = op._inputs[0]
        elif op._type == "Placeholder" and t in getattr(op._graph, "capture_sources", ()):
            t = op._graph.capture_sources[t]
        else:
            break
    for tensor in walked:
        known[tensor] = key
    return key


class _TieredPlan:
    """A large plan: unoptimized on its first run, optimized from its second one."""

    def __init__(self, first: Plan, optimized, writes: Optional[tuple]):
        self._plan = first
        self._optimized = optimized
        self.structure_version = first.structure_version
        self.writes = writes

    def run(self, context: Optional[RunContext], feed_values: Sequence,
            trace: Optional[list] = None) -> list:
        if self._optimized is not None and self._plan.runs:
            self._plan, self._optimized = self._optimized(), None
        return self._plan.run(context, feed_values, trace)

    def run_nested(self, context: RunContext, feed_values: Sequence) -> list:
        if self._optimized is not None and self._plan.runs:
            self._plan, self._optimized = self._optimized(), None
        return self._plan.run_nested(context, feed_values)


def graph_structure_version(graph: Graph) -> tuple:
    """Changes whenever an op or a control edge is added, invalidating cached plans."""
    return (graph.version, graph.control_edge_version)


# TF's own names of dtypes in its kernel messages (``DataTypeString``)
_TF_DTYPE_NAMES = {"float32": "float", "float64": "double", "float16": "half"}


def _unfed_message(op: Operation) -> str:
    dtype = op.outputs[0].dtype.name if op.outputs else "?"
    dtype = _TF_DTYPE_NAMES.get(dtype, dtype)
    shape = op.outputs[0].shape if op.outputs else "?"
    shape_text = "unknown" if shape.ndims is None else \
        "[" + ",".join("?" if d is None else str(d) for d in shape.as_list()) + "]"
    return (f"You must feed a value for placeholder tensor '{op.name}' with dtype {dtype}"
            f" and shape {shape_text}\n\t [[{{{{node {op.name}}}}}]]")


def _bind_attrs(op: Operation):
    kernel = op._op_def.kernel
    attrs = {k: v for k, v in op._attrs.items() if not k.startswith("_")}
    return functools.partial(kernel, **attrs) if attrs else kernel


class _Scheduler:
    """Turns a program into steps: slots, kernels, in-place outputs and frees."""

    def __init__(self, program: Program, feed_tensors: Sequence[Tensor], optimize: bool):
        self.program = program
        self.optimize = optimize
        self.slot_of: dict = {}
        self.template: list = []
        self.feed_slots = [self._slot(t) for t in feed_tensors]
        self.kept = set(self.feed_slots)   # slots never freed nor written over
        self.owned: set = set()            # slots holding a fresh array only the plan sees
        self.shared: set = set()           # slots a possibly aliasing kernel has read

    def plan(self, structure_version) -> Plan:
        steps, fits = [], []
        for node in self.program.nodes:
            step, out_inputs = self._step(node)
            steps.append(step)
            fits.append(out_inputs)
        fetch_slots = [self._slot(v) for v in self.program.fetches]
        self.template.append(None)  # the SCRATCH slot, last
        self.kept.update(fetch_slots)
        last_reader = _last_readers(steps)
        for index, (step, out_inputs) in enumerate(zip(steps, fits)):
            step.out = self._out_slot(index, step, out_inputs, last_reader)
            if step.out is not None:
                step.call = _in_place(step.call)
        _assign_frees(steps, self.kept, last_reader)
        constants = frozenset(i for i, v in enumerate(self.program.fetches)  # copied per run
                              if isinstance(v, Constant) and hasattr(v.value, "copy"))
        return Plan(steps, self.template, self.feed_slots, fetch_slots, constants,
                    structure_version, self.optimize)

    def _slot(self, value) -> int:
        slot = self.slot_of.get(value)
        if slot is None:
            slot = self.slot_of[value] = len(self.template)
            self.template.append(self._constant(value) if isinstance(value, Constant) else None)
            if isinstance(value, Constant):
                self.kept.add(slot)
        return slot

    def _constant(self, constant: Constant):
        if _CHECK_KERNELS:
            _check_value(constant.tensor.op, constant.tensor, constant.value)
        return constant.value

    def _step(self, node) -> tuple[Step, tuple]:
        """The node's step, and the inputs whose buffer may take its output."""
        args = tuple(self._slot(v) for v in node.inputs)
        outputs = tuple(SCRATCH if t is None else self._slot(t) for t in node.outputs)
        if isinstance(node, clusters.ClusterNode):
            self.shared.update(args)  # compiled code neither writes nor takes input buffers
            return ClusterStep(node, args, outputs), ()
        op = node.op
        fast = node.fast if node.fast is not None else \
            fast_kernels.lookup(op) if self.optimize else None
        if fast is None and not (self.optimize and op._type in fast_kernels.FRESH_OUTPUT_TYPES):
            self.shared.update(args)
        elif fast is None or fast.private_result:
            self.owned.update(s for s in outputs if s != SCRATCH)
        step = Step(op, _bind_attrs(op) if fast is None else fast.fn, args, outputs,
                    op._op_def.needs_context, fast is not None,
                    None if node.fast is None else node.outputs)
        out_inputs = () if fast is None else \
            tuple(i for i in fast.out_inputs if _fits_output(node, i))
        return step, out_inputs

    def _out_slot(self, index: int, step: Step, out_inputs: tuple,
                  last_reader: dict) -> Optional[int]:
        """An input buffer the step may write into: the plan's own, dying at this step."""
        for position in out_inputs:
            slot = step.args[position]
            if slot in self.owned and slot not in self.shared and slot not in self.kept \
                    and last_reader.get(slot) == index and step.args.count(slot) == 1:
                return slot
        return None


def _fits_output(node, position: int) -> bool:
    """Input ``position`` has exactly the output's dtype and fully known static shape,
    large enough to be worth reusing (and so of rank 1 or more: NumPy computes 0-d
    results as scalars, which take no output)."""
    value = node.inputs[position]
    if isinstance(value, Constant) or len(node.outputs) != 1:
        return False
    out = node.op._outputs[0]
    count = out.shape.num_elements()
    return (value.dtype is out.dtype and count is not None
            and count >= fast_kernels.INPLACE_MIN_ELEMENTS
            and value.shape.as_tuple() == out.shape.as_tuple())


def _in_place(call):
    """``call`` writing into ``out`` only when all arrays are C-ordered: then the result
    has the layout a fresh one would have."""
    ndarray = np.ndarray

    def in_place(*args, out):
        if out.flags.c_contiguous and \
                all(a.flags.c_contiguous for a in args if type(a) is ndarray):
            return call(*args, out=out)
        return call(*args)
    return in_place


def _last_readers(steps: list) -> dict:
    last_reader: dict[int, int] = {}
    for index, step in enumerate(steps):
        for slot in step.args:
            last_reader[slot] = index
    return last_reader


def _assign_frees(steps: list, keep: set, last_reader: dict) -> None:
    """Marks each slot free after its last reader (or right after its writer if unread)."""
    frees: list[list[int]] = [[] for _ in steps]
    for index, step in enumerate(steps):
        for slot in step.outputs:
            if slot != SCRATCH and slot not in keep:
                frees[last_reader.get(slot, index)].append(slot)
    for step, slots in zip(steps, frees):
        step.frees = tuple(slots)
