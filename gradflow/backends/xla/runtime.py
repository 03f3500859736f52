"""Running one cluster: its ops traced into one ``jax.jit`` function, called per run.

JAX is imported on first use (``jax_module()``), with 64-bit types enabled so float64
and int64 graphs keep their dtypes. A cluster's compiled function takes the values of
the variables it reads, how often each of its random ops ran before (a count kept in
the session, so each run draws anew) and its inputs, and returns
its outputs and the new values of the variables it writes; the step writes those
through the run context, so they are committed only if the whole run succeeds, under
the session's per-variable locks, as every variable write is. ``jax.jit`` compiles once
per input shape signature; the function lives with the cluster, hence with the plan.
"""
from __future__ import annotations

from typing import Optional, Sequence

import numpy as np

from gradflow.backends.xla.devices import device_key, placement
from gradflow.backends.xla.lowerings import lowering_of, ref_tensor
from gradflow.framework import errors
from gradflow.runtime.clusters import (INSTALL_HINT, ClusterNode, DeviceValue,
                                       XlaUnavailableError)
from gradflow.runtime.optimizer import Constant

__all__ = ["jax_module", "jax_available", "compile_cluster", "cluster_device", "evaluate"]

_loaded: dict = {}


def jax_module():
    """The ``jax`` module, imported (and set to 64-bit types) on first use."""
    if "jax" not in _loaded:
        try:
            import jax
        except ImportError as err:
            raise XlaUnavailableError(f"XLA compilation was asked for, but JAX is not "
                                      f"installed. {INSTALL_HINT}") from err
        jax.config.update("jax_enable_x64", True)
        _loaded["jax"] = jax
    return _loaded["jax"]


def jax_available() -> bool:
    """Whether JAX can be imported (tried once)."""
    if "available" not in _loaded:
        try:
            jax_module()
            _loaded["available"] = True
        except XlaUnavailableError:
            _loaded["available"] = False
    return _loaded["available"]


def cluster_device() -> str:
    """The device clusters run on (JAX's default), in TF's spelling."""
    platform = jax_module().default_backend().upper()
    kind = "GPU" if platform in ("GPU", "CUDA", "ROCM") else "CPU"
    return f"/job:localhost/replica:0/task:0/device:XLA_{kind}:0"


class _Lowering:
    """What a lowering sees while a cluster is traced: JAX, variables, random keys."""

    def __init__(self, jax, state: dict, draws: dict, seeds: dict,
                 cluster_inputs: Optional[dict] = None):
        self.jax = jax
        self.jnp = jax.numpy
        self.lax = jax.lax
        self.state = state
        self.draws = draws  # random op -> how many times it ran before (traced)
        self.seeds = seeds  # random op -> its (seed, seed2)
        self.checks: list = []  # (op, any input bad?, the op's inputs), traced
        # id of a cluster input's traced value -> its position, where range checks of
        # cluster inputs are made on the host (None: every check in compiled code)
        self.cluster_inputs = cluster_inputs
        self.hosted: list = []  # (cluster input position, bound): checked on the host

    def check(self, op, bad, inputs: tuple) -> None:
        """Makes the run raise ``op``'s kernel error where ``bad`` holds anywhere."""
        self.checks.append((op, self.jnp.any(bad), inputs))

    def check_range(self, op, indices, bound: int, inputs: tuple) -> None:
        """``check`` that every index is in ``[0, bound)``. Indices that are the
        cluster's own input (a fed batch of labels) are checked on the host while the
        computation runs, so the run need not wait for a flag computed on the device."""
        position = None if self.cluster_inputs is None else \
            self.cluster_inputs.get(id(indices))
        if position is None:
            self.check(op, (indices < 0) | (indices >= bound), inputs)
        else:
            self.hosted.append((position, int(bound)))

    def read(self, key: str):
        return self.state[key]

    def write(self, key: str, value):
        self.state[key] = value
        return value

    def key(self, op):
        """The key of the op's next draw: its seeds, then how often it ran before."""
        random = self.jax.random
        seed, seed2 = self.seeds[op]
        return random.fold_in(random.fold_in(random.PRNGKey(seed), seed2), self.draws[op])


def _op_seeds(op) -> tuple:
    """The op's (seed, seed2); an unseeded op (0, 0) gets fresh entropy, as on NumPy."""
    seed, seed2 = int(op._attrs.get("seed", 0)), int(op._attrs.get("seed2", 0))
    if seed == 0 and seed2 == 0:
        seed, seed2 = (int(v) & 0x7FFFFFFF for v in np.random.SeedSequence().generate_state(2))
    return seed, seed2


def _draw_key(op) -> tuple:
    """The session-state entry counting a compiled random op's runs (beside the NumPy
    stream's own entry, whose lock the plan holds)."""
    return ("xla_random_draws", op._attrs.get("stream"))


def _ref_key(value) -> str:
    """The variable a reference input names (a tensor, or its plan-time Constant)."""
    return ref_tensor(value).op._attrs["shared_name"]


def compile_cluster(members: Sequence, inputs: list, outputs: list) -> ClusterNode:
    """The ClusterNode running ``members`` (program nodes, creation order) as one."""
    jax = jax_module()
    reads, writes = [], []
    for node in members:
        lowering = lowering_of(node.op._type)
        for position in sorted(lowering.refs_of(node.inputs)):
            key = _ref_key(node.inputs[position])
            if lowering.reads and key not in writes and key not in reads:
                reads.append(key)
            if lowering.writes and key not in writes:
                writes.append(key)
    dtypes_out = [np.dtype(t.dtype.as_numpy_dtype) for t in outputs]
    randoms = [node.op for node in members if lowering_of(node.op._type).random]
    seeds = {op: _op_seeds(op) for op in randoms}
    draw_keys = [_draw_key(op) for op in randoms]

    # the ops of the checks compiled in each mode (_HOSTED, _CHECKED, _CHECK_INPUTS), and
    # the range checks of cluster inputs that _HOSTED leaves to the host
    checked_ops: dict = {}
    hosted: list = []

    def traced(draws, read_values, input_values, mode: int):
        state = dict(zip(reads, read_values, strict=True))
        positions = {id(v): i for i, v in enumerate(input_values)} if mode == _HOSTED \
            else None
        lower = _Lowering(jax, state, dict(zip(randoms, draws, strict=True)), seeds, positions)
        env = dict(zip(inputs, input_values, strict=True))
        evaluate(lower, members, env)
        checked_ops[mode] = [op for op, _, _ in lower.checks]
        if mode == _HOSTED:
            hosted[:] = lower.hosted
        if mode == _CHECK_INPUTS:  # only after a check failed: the failing ops' inputs
            return tuple(inputs for _, _, inputs in lower.checks)
        flags = jax.numpy.stack([bad for _, bad, _ in lower.checks]) if lower.checks else ()
        return (tuple(jax.numpy.asarray(env[t]).astype(d) for t, d in
                      zip(outputs, dtypes_out, strict=True)),
                tuple(state[k] for k in writes), flags)

    compiled = jax.jit(traced, static_argnums=3)
    single = len(outputs) == 1
    asking = next((node.op for node in members if node.op._device), members[0].op)
    place = placement(jax, device_key(asking), cluster_device())
    device_put = jax.device_put

    def device_value(ctx, key):
        """The variable's value, as a device array where a compiled run left it so."""
        value = ctx.pending.get(key)
        if value is None:
            value = ctx.store.get(key)
            if value is None:
                return ctx.read_variable(key, key)  # raises: uninitialized
        return value.array if type(value) is DeviceValue else value

    def call(ctx, *input_values):
        if place.missing is not None:
            place.check(ctx, asking)
        if ctx.pending:
            read_values = [device_value(ctx, k) for k in reads]
        else:  # the common case, the cluster first in its run: the store's values
            read_values = [v.array if type(v) is DeviceValue else v
                           for v in map(ctx.store.get, reads)]
            if any(v is None for v in read_values):
                read_values = [device_value(ctx, k) for k in reads]  # raises
        draws = [np.uint32(ctx.read_variable(k, "") if ctx.is_initialized(k) else 0)
                 for k in draw_keys] if draw_keys else ()
        host_inputs = input_values
        if place.device is not None:  # the computation follows its operands there
            read_values = device_put(read_values, place.device)
            input_values = device_put(input_values, place.device)
        results, written, flags = _in_x64(jax, compiled, draws, read_values, input_values,
                                          _HOSTED)
        # while the computation runs: the checks of its inputs, then its own flags
        # (reading them waits for it); on a failure nothing is written
        failed = checked_ops[_HOSTED] and _to_host(flags).any()
        for position, bound in hosted:
            failed = failed or _out_of_range(host_inputs[position], bound)
        if failed:
            _raise_first_failure(jax, compiled, checked_ops, draws, read_values, input_values)
        # the new values stay on the device: the next compiled run takes them as they
        # are, any other reader gets their NumPy view (DeviceValue.host)
        ctx.pending.update(zip(writes, map(DeviceValue, written), strict=True))
        for key, count in zip(draw_keys, draws, strict=True):
            ctx.write_variable(key, int(count) + 1)
        if single:
            return _host(results[0])
        return tuple(_host(r) for r in results) if results else ()

    return ClusterNode([node.op for node in members], inputs, outputs, call, place.name)


# The compiled function's modes: range checks of cluster inputs left to the host (every
# run); every check compiled, returning flags (after a host check failed); every check
# compiled, returning the checked ops' inputs (after a flag was raised).
_HOSTED, _CHECKED, _CHECK_INPUTS = 0, 1, 2


_UNSIGNED = {np.dtype(t): np.dtype(u) for t, u in
             (("int8", "uint8"), ("int16", "uint16"), ("int32", "uint32"), ("int64", "uint64"))}


def _out_of_range(indices, bound: int) -> bool:
    """Whether an integer index array holds a value outside ``[0, bound)``: one
    reduction, negative values reading as huge ones once unsigned."""
    if type(indices) is not np.ndarray:
        indices = np.asarray(indices)
    if not indices.size:
        return False
    unsigned = _UNSIGNED.get(indices.dtype)
    return bool((indices if unsigned is None else indices.view(unsigned)).max() >= bound)


def _raise_first_failure(jax, compiled, checked_ops: dict, *args) -> None:
    """Raises the kernel error of the first op whose check fails, in op order, from the
    computation with every check compiled in."""
    _, _, flags = _in_x64(jax, compiled, *args, _CHECKED)
    flags = _to_host(flags)
    checked = _in_x64(jax, compiled, *args, _CHECK_INPUTS)
    for op, bad, op_inputs in zip(checked_ops[_CHECKED], flags, checked, strict=True):
        if bad:
            _raise_kernel_error(op, op_inputs)
    raise errors.InternalError(None, checked_ops[_CHECKED][0] if checked_ops[_CHECKED]
                               else None, "a compiled cluster's input check failed, but "
                               "no check of its ops did")


def _in_x64(jax, fn, *args):
    """``fn(*args)`` with JAX's 64-bit types on, even if other code turned them off since
    (``jax_enable_x64`` is process-wide): float64 graphs must not become float32."""
    if jax.config.jax_enable_x64:
        return fn(*args)
    with jax.enable_x64(True):
        return fn(*args)


def _to_host(value) -> np.ndarray:
    """A read-only NumPy view of a device array (no copy on CPU). Not DLPack: a buffer
    exported that way makes XLA's next dispatch with it twice as slow."""
    return np.asarray(value)


def _host(value):
    """A cluster output as the NumPy kernels give it: an array, a NumPy scalar if 0-d."""
    array = _to_host(value)
    return array[()] if array.ndim == 0 else array


def _raise_kernel_error(op, inputs: tuple) -> None:
    """Raises what ``op``'s NumPy kernel raises for these inputs, naming the node.

    A kernel that needs the run context (variable updates) is not rerun: its check's
    inputs end with the indices, and the first one out of the range of the first
    input's rows is named, in TF's words."""
    if op._op_def.needs_context:
        rows, indices = len(np.asarray(inputs[0])), np.asarray(inputs[-1]).reshape(-1)
        bad = np.flatnonzero((indices < 0) | (indices >= rows))
        at = int(bad[0]) if bad.size else 0
        raise errors.InvalidArgumentError(
            None, op, f"indices[{at}] = {int(indices[at])} is not in [0, {rows})\n\t "
                      f"[[node {op.name} (op type {op.type})]]")
    attrs = {k: v for k, v in op._attrs.items() if not k.startswith("_")}
    try:
        with np.errstate(all="ignore"):  # a plan's runs raise no floating-point warnings
            op._op_def.kernel(*(np.asarray(v) for v in inputs), **attrs)
    except errors.OpError as err:
        err.op = op
        err.message = f"{err.message}\n\t [[node {op.name} (op type {op.type})]]"
        err.args = (err.message,)
        raise
    except (ValueError, TypeError, IndexError, ArithmeticError) as err:
        # as the executor reports a kernel's Python error: TF's error type, naming the node
        raise errors.InvalidArgumentError(
            None, op, f"{type(err).__name__} while running op '{op.name}' "
            f"(type {op.type}): {err}") from err
    raise errors.InvalidArgumentError(None, op, f"Invalid input to op '{op.name}' "
                                                f"(type {op.type})")


def evaluate(lower, nodes: Sequence, env: dict) -> None:
    """Traces ``nodes`` (program nodes, in order) with their lowerings, reading input
    values from ``env`` and adding the outputs' values to it."""
    for node in nodes:
        lowering = lowering_of(node.op._type)
        refs = lowering.refs_of(node.inputs)
        args = [_argument(value, position in refs, env)
                for position, value in enumerate(node.inputs)]
        result = lowering.fn(lower, node.op, *args)
        results = (result,) if len(node.outputs) == 1 else tuple(result)
        for t, value in zip(node.outputs, results, strict=True):
            if t is not None:
                env[t] = value


def _argument(value, ref: bool, env: dict):
    if ref:  # a variable's key; inside a function, the key its caller passed
        if isinstance(value, Constant):
            return _ref_key(value)
        return env[value] if value in env else _ref_key(value)
    if isinstance(value, Constant):
        return value.value
    return env[value]
