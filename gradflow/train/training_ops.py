"""Fused optimizer updates: one op per optimizer rule, dense and sparse.

Each rule reads a variable and its slots, applies TF1's update formula in NumPy and
writes them back (committed with the run, like every variable write). The new values
are written with ``out=`` into a second buffer per state array that the session keeps
across runs (the previous step's values, once nothing else holds them), so a step
allocates nothing parameter-sized and a failed run still changes no variable. The op layout
is uniform: ``[var, *slots, *hyperparameters, grad]`` for ``Apply<Name>`` and
``[var, *slots, *hyperparameters, grad_values, indices]`` for ``SparseApply<Name>``.
A sparse update sums the rows of repeated indices first (as TF1's optimizers do) and
then changes only the touched rows, except where TF1's own rule is dense (Adam).
"""
from __future__ import annotations

from typing import Callable, Optional, Sequence

import numpy as np

from gradflow.framework import dtypes
from gradflow.framework.graph import Operation, Tensor
from gradflow.framework.registry import NotDifferentiable, define_op
from gradflow.runtime.optimizer import register_update_group

__all__ = ["apply_update", "UPDATE_RULES"]

_INDEX_TYPES = (dtypes.int32, dtypes.int64)


# ----------------------------------------------------------------- update rules
# Each rule maps (var, *slots, grad) and named scalar hyperparameters to the new
# (var, *slots), written into ``out`` (one array per state array, none of them an
# input; fresh arrays when ``out`` is None); the formulas and their operation order
# follow TF1's kernels. A rule is written per block (``_block_*``: the new values
# written into ``out`` arrays, using at most one block-sized temporary) and run over
# the parameters in blocks of ``_UPDATE_BLOCK`` elements, so every array passes
# through memory once and no temporary grows with the parameters; each element sees
# the same operations in the same order as the plain NumPy formula, so the bits are
# the same. The rarer rules run their whole-array formula on each block instead
# (``_formula_blocks``): block-sized temporaries, the formula's bits by construction.
_UPDATE_BLOCK = 1 << 16


def _block_gradient_descent(out, var, grad, *, learning_rate):
    new_var, = out
    np.multiply(grad, learning_rate, out=new_var)
    np.subtract(var, new_var, out=new_var)


def _block_momentum(out, var, accum, grad, *, learning_rate, momentum, use_nesterov=False):
    new_var, new_accum = out
    np.multiply(accum, momentum, out=new_accum)
    np.add(new_accum, grad, out=new_accum)
    if use_nesterov:  # var - (grad * lr + accum * momentum * lr)
        np.multiply(new_accum, momentum, out=new_var)
        np.multiply(new_var, learning_rate, out=new_var)
        scratch = np.multiply(grad, learning_rate)
        np.add(scratch, new_var, out=new_var)
    else:  # var - lr * accum
        np.multiply(new_accum, learning_rate, out=new_var)
    np.subtract(var, new_var, out=new_var)


def _block_adagrad(out, var, accum, grad, *, learning_rate):
    new_var, new_accum = out
    np.multiply(grad, grad, out=new_accum)
    np.add(accum, new_accum, out=new_accum)
    scratch = np.sqrt(new_accum)                    # var - grad * lr * (1 / sqrt(accum))
    np.divide(1, scratch, out=scratch)
    np.multiply(grad, learning_rate, out=new_var)
    np.multiply(new_var, scratch, out=new_var)
    np.subtract(var, new_var, out=new_var)


def _decayed_square(new_ms, ms, grad, decay) -> None:
    """new_ms = ms + (grad * grad - ms) * (1 - decay)."""
    np.multiply(grad, grad, out=new_ms)
    np.subtract(new_ms, ms, out=new_ms)
    np.multiply(new_ms, 1 - decay, out=new_ms)
    np.add(ms, new_ms, out=new_ms)


def _momentum_step(new_var, new_mom, var, mom, grad, denominator, learning_rate,
                   momentum) -> None:
    """new_mom = mom * momentum + grad * lr / sqrt(denominator); new_var = var - new_mom
    (``denominator`` is scratch, overwritten)."""
    np.sqrt(denominator, out=denominator)
    np.multiply(grad, learning_rate, out=new_var)
    np.divide(new_var, denominator, out=new_var)
    np.multiply(mom, momentum, out=new_mom)
    np.add(new_mom, new_var, out=new_mom)
    np.subtract(var, new_mom, out=new_var)


def _block_rmsprop(out, var, ms, mom, grad, *, learning_rate, decay, momentum, epsilon):
    new_var, new_ms, new_mom = out
    _decayed_square(new_ms, ms, grad, decay)
    scratch = np.add(new_ms, epsilon)
    _momentum_step(new_var, new_mom, var, mom, grad, scratch, learning_rate, momentum)


def _block_centered_rmsprop(out, var, ms, mg, mom, grad, *, learning_rate, decay, momentum,
                            epsilon):
    new_var, new_ms, new_mg, new_mom = out
    _decayed_square(new_ms, ms, grad, decay)
    np.subtract(grad, mg, out=new_mg)               # mg + (grad - mg) * (1 - decay)
    np.multiply(new_mg, 1 - decay, out=new_mg)
    np.add(mg, new_mg, out=new_mg)
    scratch = np.multiply(new_mg, new_mg)           # (ms - mg * mg) + epsilon
    np.subtract(new_ms, scratch, out=scratch)
    np.add(scratch, epsilon, out=scratch)
    _momentum_step(new_var, new_mom, var, mom, grad, scratch, learning_rate, momentum)


def _adam_step_size(learning_rate, beta1_power, beta2_power):
    return learning_rate * np.sqrt(1 - beta2_power) / (1 - beta1_power)


def _adam_var(new_var, var, m, v, alpha, epsilon) -> None:
    """new_var = var - m * alpha / (sqrt(v) + epsilon)."""
    scratch = np.sqrt(v)
    np.add(scratch, epsilon, out=scratch)
    np.multiply(m, alpha, out=new_var)
    np.divide(new_var, scratch, out=new_var)
    np.subtract(var, new_var, out=new_var)


def _block_adam(out, var, m, v, grad, *, alpha, beta1, beta2, epsilon):
    new_var, new_m, new_v = out
    np.subtract(grad, m, out=new_m)                 # m + (grad - m) * (1 - beta1)
    np.multiply(new_m, 1 - beta1, out=new_m)
    np.add(m, new_m, out=new_m)
    _decayed_square(new_v, v, grad, beta2)
    _adam_var(new_var, var, new_m, new_v, alpha, epsilon)


def _blocked(block_rule: Callable) -> Callable:
    """The rule over whole arrays, block by block, into ``out`` (C-ordered arrays of the
    gradient's shape; fresh ones when None)."""
    def rule(*state_and_grad, out=None, **hypers):
        grad = state_and_grad[-1]
        if out is None:
            dtype = np.result_type(*state_and_grad)
            out = [np.empty(np.shape(grad), dtype) for _ in state_and_grad[:-1]]
        # A 0-d block goes the flat way: the rules' scratch results must be arrays (NumPy
        # gives a scalar for a 0-d operand, which cannot take ``out=``).
        if 0 < np.ndim(grad) and np.size(grad) <= _UPDATE_BLOCK and \
                all(np.shape(a) == np.shape(grad) for a in state_and_grad):
            block_rule(out, *state_and_grad, **hypers)  # one block: the arrays themselves
            return tuple(out)
        flat_out = [o.reshape(-1) for o in out]
        flat = [np.ravel(a) for a in state_and_grad]
        for start in range(0, flat[-1].size, _UPDATE_BLOCK):
            block = slice(start, start + _UPDATE_BLOCK)
            block_rule([o[block] for o in flat_out], *(a[block] for a in flat), **hypers)
        return tuple(out)
    return rule


def _formula_blocks(formula: Callable) -> Callable:
    """A whole-array formula run block by block into ``out``: only block-sized
    temporaries, and (elementwise as it is) the bits of the formula on whole arrays."""
    def block_rule(out, *state_and_grad, **hypers):
        for target, value in zip(out, formula(*state_and_grad, **hypers), strict=True):
            np.copyto(target, value)
    return _blocked(block_rule)


_gradient_descent = _blocked(_block_gradient_descent)
_momentum = _blocked(_block_momentum)
_adagrad = _blocked(_block_adagrad)
_rmsprop = _blocked(_block_rmsprop)
_centered_rmsprop = _blocked(_block_centered_rmsprop)
_adam_blocks = _blocked(_block_adam)


def _adam(var, m, v, grad, *, beta1_power, beta2_power, learning_rate, beta1, beta2, epsilon,
          out=None):
    return _adam_blocks(var, m, v, grad, out=out, beta1=beta1, beta2=beta2, epsilon=epsilon,
                        alpha=_adam_step_size(learning_rate, beta1_power, beta2_power))


def _sparse_adam(var, m, v, values, rows, *, beta1_power, beta2_power, learning_rate, beta1,
                 beta2, epsilon, out):
    """TF1's sparse Adam: m and v decay everywhere, so every row with history moves."""
    new_var, new_m, new_v = out
    alpha = _adam_step_size(learning_rate, beta1_power, beta2_power)
    np.multiply(m, beta1, out=new_m)
    new_m[rows] += values * (1 - beta1)
    np.multiply(v, beta2, out=new_v)
    new_v[rows] += (values * values) * (1 - beta2)
    flat = [a.reshape(-1) for a in (new_var, var, new_m, new_v)]
    for start in range(0, var.size, _UPDATE_BLOCK):
        block = slice(start, start + _UPDATE_BLOCK)
        _adam_var(*(a[block] for a in flat), alpha, epsilon)
    return tuple(out)


def _adadelta_formula(var, accum, accum_update, grad, *, lr, rho, epsilon):
    accum = accum * rho + grad * grad * (1 - rho)
    update = np.sqrt(accum_update + epsilon) / np.sqrt(accum + epsilon) * grad
    accum_update = accum_update * rho + update * update * (1 - rho)
    return var - update * lr, accum, accum_update


def _shrink(value, threshold):
    """Soft thresholding: ``sign(value) * max(|value| - threshold, 0)``."""
    return np.sign(value) * np.maximum(np.abs(value) - threshold, 0)


def _proximal_step(prox_var, step_size, l1, l2):
    """The proximal map of ``l1 * |x| + l2 / 2 * x**2`` at ``prox_var`` for ``step_size``."""
    if l1 > 0:
        prox_var = _shrink(prox_var, step_size * l1)
    return prox_var / (1 + step_size * l2)


def _proximal_gradient_descent_formula(var, grad, *, learning_rate, l1, l2):
    return (_proximal_step(var - grad * learning_rate, learning_rate, l1, l2),)


def _proximal_adagrad_formula(var, accum, grad, *, learning_rate, l1, l2):
    accum = accum + grad * grad
    step_size = learning_rate / np.sqrt(accum)
    return _proximal_step(var - grad * step_size, step_size, l1, l2), accum


def _adagrad_da_formula(var, gradient_accum, gradient_squared_accum, grad, *, learning_rate,
                        l1, l2, global_step):
    """Dual averaging: the variable is recomputed from the accumulated gradients."""
    gradient_accum = gradient_accum + grad
    gradient_squared_accum = gradient_squared_accum + grad * grad
    denominator = l2 * global_step * learning_rate + np.sqrt(gradient_squared_accum)
    numerator = _shrink(gradient_accum, l1 * global_step) if l1 > 0 else gradient_accum
    return -learning_rate * numerator / denominator, gradient_accum, gradient_squared_accum


def _ftrl_v2_formula(var, accum, linear, grad, *, learning_rate, l1, l2, l2_shrinkage,
                     learning_rate_power):
    """FTRL-Proximal (McMahan et al., 2013); ``l2_shrinkage`` adds ``2 * s * var`` to the
    gradient the linear term sees (the accumulator sees the plain gradient)."""
    shrunk_grad = grad + 2 * l2_shrinkage * var
    new_accum = accum + grad * grad
    if learning_rate_power == -0.5:
        sigma = (np.sqrt(new_accum) - np.sqrt(accum)) / learning_rate
        quadratic = np.sqrt(new_accum) / learning_rate + 2 * l2
    else:
        sigma = (new_accum ** -learning_rate_power - accum ** -learning_rate_power) / \
            learning_rate
        quadratic = new_accum ** -learning_rate_power / learning_rate + 2 * l2
    linear = linear + shrunk_grad - sigma * var
    var = np.where(np.abs(linear) > l1, (np.sign(linear) * l1 - linear) / quadratic, 0)
    return var, new_accum, linear


_adadelta = _formula_blocks(_adadelta_formula)
_proximal_gradient_descent = _formula_blocks(_proximal_gradient_descent_formula)
_proximal_adagrad = _formula_blocks(_proximal_adagrad_formula)
_adagrad_da = _formula_blocks(_adagrad_da_formula)
_ftrl_v2 = _formula_blocks(_ftrl_v2_formula)


def _ftrl(var, accum, linear, grad, *, learning_rate, l1, l2, learning_rate_power, out=None):
    return _ftrl_v2(var, accum, linear, grad, out=out, learning_rate=learning_rate, l1=l1,
                    l2=l2, l2_shrinkage=0, learning_rate_power=learning_rate_power)


class UpdateRule:
    """One optimizer rule: its slots and hyperparameters in op-input order."""

    __slots__ = ("name", "slots", "hypers", "dense", "sparse")

    def __init__(self, name: str, slots: Sequence[str], hypers: Sequence[str],
                 dense: Callable, sparse: Optional[Callable] = None):
        self.name = name
        self.slots = tuple(slots)
        self.hypers = tuple(hypers)
        self.dense = dense
        self.sparse = sparse or _rows_only(dense)


def _rows_only(dense: Callable) -> Callable:
    """Applies a dense rule to the touched rows only; other rows keep their values."""
    def sparse(*state_and_values, out, **hypers):
        *state, values, rows = state_and_values
        updated = dense(*(s[rows] for s in state), values, **hypers)
        for target, current, new_rows in zip(out, state, updated, strict=True):
            np.copyto(target, current)
            target[rows] = new_rows
        return tuple(out)
    return sparse


_LR = ("learning_rate",)
UPDATE_RULES = {rule.name: rule for rule in (
    UpdateRule("GradientDescent", (), _LR, _gradient_descent),
    UpdateRule("Momentum", ("momentum",), _LR + ("momentum",), _momentum),
    UpdateRule("Adagrad", ("accumulator",), _LR, _adagrad),
    UpdateRule("RMSProp", ("rms", "momentum"), _LR + ("decay", "momentum", "epsilon"),
               _rmsprop),
    UpdateRule("CenteredRMSProp", ("rms", "mg", "momentum"),
               _LR + ("decay", "momentum", "epsilon"), _centered_rmsprop),
    UpdateRule("Adam", ("m", "v"), ("beta1_power", "beta2_power") + _LR +
               ("beta1", "beta2", "epsilon"), _adam, _sparse_adam),
    UpdateRule("Adadelta", ("accum", "accum_update"), ("lr", "rho", "epsilon"), _adadelta),
    UpdateRule("AdagradDA", ("gradient_accumulator", "gradient_squared_accumulator"),
               _LR + ("l1", "l2", "global_step"), _adagrad_da),
    UpdateRule("Ftrl", ("accum", "linear"), _LR + ("l1", "l2", "learning_rate_power"),
               _ftrl),
    UpdateRule("FtrlV2", ("accum", "linear"),
               _LR + ("l1", "l2", "l2_shrinkage", "learning_rate_power"), _ftrl_v2),
    UpdateRule("ProximalGradientDescent", (), _LR + ("l1", "l2"),
               _proximal_gradient_descent),
    UpdateRule("ProximalAdagrad", ("accumulator",), _LR + ("l1", "l2"), _proximal_adagrad),
)}


# ------------------------------------------------------------------ op plumbing
def _check_state(op_type: str, refs: Sequence[Tensor]) -> None:
    var = refs[0]
    for ref in refs:
        if ref.op.type != "VariableV2":
            raise TypeError(f"{op_type} updates variables: input {ref.name} is not a "
                            "variable reference (pass var.ref() / slot.ref())")
        if ref.dtype is not var.dtype or not ref.shape.is_compatible_with(var.shape):
            raise ValueError(f"{op_type}: slot {ref.name} ({ref.dtype.name} {ref.shape}) does "
                             f"not match variable {var.name} ({var.dtype.name} {var.shape})")
    if not var.dtype.is_floating:
        raise TypeError(f"{op_type} needs a floating-point variable, got {var.name} of type "
                        f"{var.dtype.name}")


def _check_operand(op_type: str, var: Tensor, t: Tensor, what: str) -> None:
    if t.dtype is not var.dtype:
        raise TypeError(f"Input '{what}' of '{op_type}' Op has type {t.dtype.name} that does "
                        f"not match type {var.dtype.name} of argument 'var' ({var.op.name}).")


def _infer_dense(rule: UpdateRule, op_type: str):
    n_state = 1 + len(rule.slots)

    def infer(inputs, attrs):
        state, hypers, grad = inputs[:n_state], inputs[n_state:-1], inputs[-1]
        _check_state(op_type, state)
        var = state[0]
        for name, t in zip(rule.hypers, hypers):
            _check_scalar(op_type, var, t, name)
        _check_operand(op_type, var, grad, "grad")
        if not var.shape.is_compatible_with(grad.shape):
            raise ValueError(f"{op_type}: gradient {grad.name} has shape {grad.shape}, "
                             f"variable {var.op.name} has shape {var.shape}")
        return [(var.dtype, var.shape)]
    return infer


def _infer_sparse(rule: UpdateRule, op_type: str):
    n_state = 1 + len(rule.slots)

    def infer(inputs, attrs):
        state, hypers = inputs[:n_state], inputs[n_state:-2]
        values, indices = inputs[-2:]
        _check_state(op_type, state)
        var = state[0]
        for name, t in zip(rule.hypers, hypers):
            _check_scalar(op_type, var, t, name)
        _check_operand(op_type, var, values, "grad")
        if indices.dtype not in _INDEX_TYPES or indices.shape.ndims not in (None, 1):
            raise TypeError(f"{op_type}: indices {indices.name} must be a 1-D int32 or int64 "
                            f"tensor, got {indices.dtype.name} {indices.shape}")
        if var.shape.ndims is not None and values.shape.ndims is not None:
            expected = var.shape[1:]
            if values.shape.ndims != var.shape.ndims or \
                    not values.shape[1:].is_compatible_with(expected):
                raise ValueError(f"{op_type}: gradient rows {values.name} have shape "
                                 f"{values.shape}; rows of variable {var.op.name} have shape "
                                 f"{expected}")
        return [(var.dtype, var.shape)]
    return infer


def _check_scalar(op_type: str, var: Tensor, t: Tensor, name: str) -> None:
    _check_operand(op_type, var, t, name)
    if t.shape.ndims not in (None, 0):
        raise ValueError(f"{op_type}: {name} must be a scalar, got {t.name} of shape {t.shape}")


# The attrs a rule reads; the others (``T``, ``use_locking`` of an imported graph) do
# not change the arithmetic.
_RULE_ATTRS = ("use_nesterov",)


def _rule_attrs(attrs: dict) -> dict:
    return {name: attrs[name] for name in _RULE_ATTRS if name in attrs}


def _read_state(ctx, refs) -> list:
    return [ctx.read_variable(ref.key, ref.key) for ref in refs]


def _buffers(ctx, refs, state) -> list:
    """Where the new values go: each state array's second buffer, kept by the session
    across runs (``RunContext.spare``), so a step allocates nothing parameter-sized."""
    return [ctx.spare(ref.key, array) for ref, array in zip(refs, state, strict=True)]


def _write_state(ctx, refs, arrays) -> np.ndarray:
    for ref, array in zip(refs, arrays, strict=True):
        ctx.write_variable(ref.key, array)
    return arrays[0]


def _dense_kernel(rule: UpdateRule):
    n_state = 1 + len(rule.slots)

    def kernel(ctx, *args, **attrs):
        refs, hypers, grad = args[:n_state], args[n_state:-1], args[-1]
        state = _read_state(ctx, refs)
        if state[0].shape != grad.shape:
            raise ValueError(f"variable {refs[0].key} has shape {list(state[0].shape)} but "
                             f"its gradient has shape {list(grad.shape)}")
        updated = rule.dense(*state, grad, out=_buffers(ctx, refs, state),
                             **dict(zip(rule.hypers, hypers)), **_rule_attrs(attrs))
        return _write_state(ctx, refs, updated)
    return kernel


def _unique_rows(values: np.ndarray, indices: np.ndarray, num_rows: int, name: str):
    """Sums the rows of repeated indices; checks every index is a row of the variable."""
    if indices.size and (indices.min() < 0 or indices.max() >= num_rows):
        bad = indices[(indices < 0) | (indices >= num_rows)][0]
        raise IndexError(f"index {bad} is not in [0, {num_rows}) for variable {name}")
    rows, position = np.unique(indices, return_inverse=True)
    summed = np.zeros((len(rows),) + values.shape[1:], dtype=values.dtype)
    np.add.at(summed, position.reshape(-1), values)
    return summed, rows


def _sparse_kernel(rule: UpdateRule):
    n_state = 1 + len(rule.slots)

    def kernel(ctx, *args, **attrs):
        refs, hypers, (values, indices) = args[:n_state], args[n_state:-2], args[-2:]
        state = _read_state(ctx, refs)
        if values.shape[1:] != state[0].shape[1:] or len(values) != len(indices):
            raise ValueError(f"gradient rows of shape {list(values.shape)} with "
                             f"{len(indices)} indices do not fit variable {refs[0].key} of "
                             f"shape {list(state[0].shape)}")
        values, rows = _unique_rows(values, indices, state[0].shape[0], refs[0].key)
        updated = rule.sparse(*state, values, rows, out=_buffers(ctx, refs, state),
                              **dict(zip(rule.hypers, hypers)), **_rule_attrs(attrs))
        return _write_state(ctx, refs, updated)
    return kernel


def _group_rule(rule: UpdateRule) -> Callable:
    """The rule over the flat buffers of a group of updates (runtime/optimizer.py)."""
    def run(state, grad, hypers, attrs, out) -> None:
        rule.dense(*state, grad, out=out, **dict(zip(rule.hypers, hypers)),
                   **_rule_attrs(attrs))
    return run


for _rule in UPDATE_RULES.values():
    register_update_group(f"Apply{_rule.name}", 1 + len(_rule.slots), _group_rule(_rule))
    for _op_type, _infer, _kernel in (
            (f"Apply{_rule.name}", _infer_dense, _dense_kernel),
            (f"SparseApply{_rule.name}", _infer_sparse, _sparse_kernel)):
        define_op(_op_type, infer=_infer(_rule, _op_type), kernel=_kernel(_rule),
                  stateful=True, needs_context=True)
        NotDifferentiable(_op_type)


def apply_update(rule_name: str, var_ref: Tensor, slot_refs: Sequence[Tensor],
                 hypers: Sequence[Tensor], grad, name: Optional[str] = None,
                 **attrs) -> Operation:
    """Adds the ``Apply<rule>`` op (Tensor grad) or ``SparseApply<rule>`` op (IndexedSlices)."""
    rule = UPDATE_RULES[rule_name]
    graph = var_ref.graph
    state = [var_ref, *slot_refs]
    if isinstance(grad, Tensor):
        op_type, inputs = f"Apply{rule.name}", [*state, *hypers, grad]
    else:
        op_type, inputs = f"SparseApply{rule.name}", [*state, *hypers, grad.values, grad.indices]
    return graph.create_op(op_type, inputs, attrs, name=name or op_type)
