"""Lowerings of the fused optimizer updates ``Apply<Rule>`` and ``SparseApply<Rule>``.

The op layout is ``train/training_ops.py``'s: ``[var, *slots, *hypers, grad]`` dense,
``[var, *slots, *hypers, grad_values, indices]`` sparse; the rules follow TF1's formulas
(the NumPy kernels' values within float tolerance). A sparse update sums the rows of
repeated indices (a scatter-add into a dense gradient) and changes only the touched
rows, but for Adam, whose TF1 rule decays every row's moments. Indices out of range
raise the kernel's error.
"""
from __future__ import annotations

from typing import Callable

from gradflow.backends.xla.lowerings import register

__all__ = ["RULES"]


def _gradient_descent(jnp, var, grad, *, learning_rate, **_):
    return (var - grad * learning_rate,)


def _momentum(jnp, var, accum, grad, *, learning_rate, momentum, use_nesterov=False, **_):
    accum = accum * momentum + grad
    if use_nesterov:
        return var - (grad * learning_rate + accum * momentum * learning_rate), accum
    return var - learning_rate * accum, accum


def _adagrad(jnp, var, accum, grad, *, learning_rate, **_):
    accum = accum + grad * grad
    return var - grad * learning_rate * (1 / jnp.sqrt(accum)), accum


def _rmsprop(jnp, var, ms, mom, grad, *, learning_rate, decay, momentum, epsilon, **_):
    ms = ms + (grad * grad - ms) * (1 - decay)
    mom = mom * momentum + grad * learning_rate / jnp.sqrt(ms + epsilon)
    return var - mom, ms, mom


def _centered_rmsprop(jnp, var, ms, mg, mom, grad, *, learning_rate, decay, momentum, epsilon,
                      **_):
    ms = ms + (grad * grad - ms) * (1 - decay)
    mg = mg + (grad - mg) * (1 - decay)
    mom = mom * momentum + grad * learning_rate / jnp.sqrt(ms - mg * mg + epsilon)
    return var - mom, ms, mg, mom


def _adam(jnp, var, m, v, grad, *, beta1_power, beta2_power, learning_rate, beta1, beta2,
          epsilon, **_):
    alpha = learning_rate * jnp.sqrt(1 - beta2_power) / (1 - beta1_power)
    m = m + (grad - m) * (1 - beta1)
    v = v + (grad * grad - v) * (1 - beta2)
    return var - m * alpha / (jnp.sqrt(v) + epsilon), m, v


def _adadelta(jnp, var, accum, accum_update, grad, *, lr, rho, epsilon, **_):
    accum = accum * rho + grad * grad * (1 - rho)
    update = jnp.sqrt(accum_update + epsilon) / jnp.sqrt(accum + epsilon) * grad
    accum_update = accum_update * rho + update * update * (1 - rho)
    return var - update * lr, accum, accum_update


def _shrink(jnp, value, threshold):
    return jnp.sign(value) * jnp.maximum(jnp.abs(value) - threshold, 0)


def _proximal_step(jnp, prox_var, step_size, l1, l2):
    prox_var = jnp.where(l1 > 0, _shrink(jnp, prox_var, step_size * l1), prox_var)
    return prox_var / (1 + step_size * l2)


def _proximal_gradient_descent(jnp, var, grad, *, learning_rate, l1, l2, **_):
    return (_proximal_step(jnp, var - grad * learning_rate, learning_rate, l1, l2),)


def _proximal_adagrad(jnp, var, accum, grad, *, learning_rate, l1, l2, **_):
    accum = accum + grad * grad
    step_size = learning_rate / jnp.sqrt(accum)
    return _proximal_step(jnp, var - grad * step_size, step_size, l1, l2), accum


def _adagrad_da(jnp, var, gradient_accum, gradient_squared_accum, grad, *, learning_rate, l1,
                l2, global_step, **_):
    gradient_accum = gradient_accum + grad
    gradient_squared_accum = gradient_squared_accum + grad * grad
    denominator = l2 * global_step * learning_rate + jnp.sqrt(gradient_squared_accum)
    numerator = jnp.where(l1 > 0, _shrink(jnp, gradient_accum, l1 * global_step),
                          gradient_accum)
    return -learning_rate * numerator / denominator, gradient_accum, gradient_squared_accum


def _ftrl_v2(jnp, var, accum, linear, grad, *, learning_rate, l1, l2, learning_rate_power,
             l2_shrinkage=0, **_):
    shrunk_grad = grad + 2 * l2_shrinkage * var
    new_accum = accum + grad * grad
    power = -learning_rate_power
    sigma = (new_accum ** power - accum ** power) / learning_rate
    quadratic = new_accum ** power / learning_rate + 2 * l2
    linear = linear + shrunk_grad - sigma * var
    var = jnp.where(jnp.abs(linear) > l1, (jnp.sign(linear) * l1 - linear) / quadratic,
                    jnp.zeros_like(var))
    return var, new_accum, linear


_LR = ("learning_rate",)
# name -> (number of slots, hyperparameter names in op-input order, rule)
RULES: dict[str, tuple[int, tuple, Callable]] = {
    "GradientDescent": (0, _LR, _gradient_descent),
    "Momentum": (1, _LR + ("momentum",), _momentum),
    "Adagrad": (1, _LR, _adagrad),
    "RMSProp": (2, _LR + ("decay", "momentum", "epsilon"), _rmsprop),
    "CenteredRMSProp": (3, _LR + ("decay", "momentum", "epsilon"), _centered_rmsprop),
    "Adam": (2, ("beta1_power", "beta2_power") + _LR + ("beta1", "beta2", "epsilon"), _adam),
    "Adadelta": (2, ("lr", "rho", "epsilon"), _adadelta),
    "AdagradDA": (2, _LR + ("l1", "l2", "global_step"), _adagrad_da),
    "Ftrl": (2, _LR + ("l1", "l2", "learning_rate_power"), _ftrl_v2),
    "FtrlV2": (2, _LR + ("l1", "l2", "l2_shrinkage", "learning_rate_power"), _ftrl_v2),
    "ProximalGradientDescent": (0, _LR + ("l1", "l2"), _proximal_gradient_descent),
    "ProximalAdagrad": (1, _LR + ("l1", "l2"), _proximal_adagrad),
}


def _attrs(op) -> dict:
    return {k: v for k, v in op._attrs.items() if not k.startswith("_")}


def _dense(name: str) -> Callable:
    n_state = 1 + RULES[name][0]

    def lower(L, op, *args):
        keys, hypers, grad = args[:n_state], args[n_state:-1], args[-1]
        state = [L.read(k) for k in keys]
        named = dict(zip(RULES[name][1], hypers, strict=True))
        updated = RULES[name][2](L.jnp, *state, grad, **named, **_attrs(op))
        for key, value, old in zip(keys, updated, state, strict=True):
            L.write(key, value.astype(old.dtype))
        return L.read(keys[0])
    return lower


def _sparse(name: str) -> Callable:
    n_state = 1 + RULES[name][0]

    def lower(L, op, *args):
        keys, hypers, (values, indices) = args[:n_state], args[n_state:-2], args[-2:]
        jnp = L.jnp
        state = [L.read(k) for k in keys]
        rows = state[0].shape[0]
        L.check(op, (indices < 0) | (indices >= rows), tuple(state) + (values, indices))
        grad = jnp.zeros_like(state[0]).at[indices].add(values)  # repeated rows summed
        named = dict(zip(RULES[name][1], hypers, strict=True))
        updated = RULES[name][2](jnp, *state, grad, **named, **_attrs(op))
        if name != "Adam":  # the other rules change the touched rows only
            touched = jnp.zeros((rows,), bool).at[indices].set(True)
            touched = jnp.reshape(touched, (rows,) + (1,) * (state[0].ndim - 1))
            updated = [jnp.where(touched, new, old) for new, old in
                       zip(updated, state, strict=True)]
        for key, value, old in zip(keys, updated, state, strict=True):
            L.write(key, value.astype(old.dtype))
        return L.read(keys[0])
    return lower


for _name, (_slots, _, _) in RULES.items():
    register(f"Apply{_name}", refs=tuple(range(1 + _slots)), writes=True)(_dense(_name))
    register(f"SparseApply{_name}", refs=tuple(range(1 + _slots)), writes=True,
             checks=True)(_sparse(_name))
