"""``tf.keras.optimizers``: SGD, Adam, RMSprop and Adagrad as keras defines them (their
defaults, epsilon 1e-7, hyperparameters held in variables so ``K.set_value(opt.lr, x)``
works), plus TF1's ``tf.train.Optimizer`` objects wrapped for ``compile``.

``get_updates(loss, params)`` builds the update ops under ``training/<Name>/``: an
``iter`` counter, the hyperparameter variables, slots named after their weights.
"""
from __future__ import annotations

from typing import Optional, Sequence

from gradflow.autodiff.gradients import gradients
from gradflow.framework import dtypes
from gradflow.framework.constant import constant
from gradflow.framework.graph import get_default_graph
from gradflow.framework.indexed_slices import IndexedSlices
from gradflow.ops.array import unsorted_segment_sum
from gradflow.ops import math as math_ops
from gradflow.ops.state import Variable, assign, assign_add, assign_sub
from gradflow.train.optimizer import Optimizer as TFOptimizerBase

__all__ = ["Optimizer", "SGD", "Adam", "RMSprop", "Adagrad", "TFOptimizer", "get"]


class Optimizer:
    """Keras's optimizer base: hyperparameters become variables when updates are built."""

    def __init__(self, name: str, learning_rate: float, **kwargs):
        if "lr" in kwargs:
            learning_rate = kwargs.pop("lr")
        for argument in ("clipnorm", "clipvalue", "global_clipnorm"):
            if kwargs.get(argument) is not None:
                raise ValueError(f"{name}: {argument} is not supported")
            kwargs.pop(argument, None)
        decay = float(kwargs.pop("decay", 0.0))
        if kwargs:
            raise TypeError(f"Unexpected keyword argument passed to optimizer: "
                            f"{sorted(kwargs)[0]}")
        self._name = name
        self._hyper = {"decay": decay, "learning_rate": float(learning_rate)}
        self._variables: dict = {}
        self.iterations: Optional[Variable] = None
        self._slots: dict = {}

    @property
    def lr(self):
        """The learning rate: its variable once updates are built, else the number."""
        return self._variables.get("learning_rate", self._hyper["learning_rate"])

    learning_rate = lr

    def _make_variables(self) -> None:
        if self.iterations is not None:
            return
        graph = get_default_graph()
        with graph.control_dependencies(None):
            self.iterations = Variable(constant(0, dtype=dtypes.int64), name="iter",
                                       trainable=False)
            for name, value in sorted(self._hyper.items()):  # keras makes them by name
                self._variables[name] = Variable(constant(value, dtype=dtypes.float32),
                                                 name=name, trainable=False)

    def _slot(self, weight: Variable, name: str, initial: float = 0.0) -> Variable:
        key = (id(weight), name)
        if key not in self._slots:
            graph = get_default_graph()
            with graph.control_dependencies(None), graph.name_scope(None):
                slot_name = f"training/{self._name}/{weight.op.name}/{name}"
                self._slots[key] = Variable(
                    constant(initial, dtype=weight.dtype.base_dtype,
                             shape=weight.shape.as_list()),
                    name=slot_name, trainable=False)
        return self._slots[key]

    def get_updates(self, loss, params: Sequence) -> list:
        """The ops that take one step on ``params`` down ``loss``'s gradient (the last
        one increments ``iterations``)."""
        params = list(params)
        grads = gradients(loss, params)
        missing = [p.name for p, g in zip(params, grads, strict=True) if g is None]
        if missing:
            raise ValueError(f"An operation has `None` for gradient. Please make sure that all "
                             f"of your ops have a gradient defined. Variables without "
                             f"gradient: {missing}")
        grads = [_dense(g, p) for g, p in zip(grads, params, strict=True)]
        with get_default_graph().name_scope(self._name):
            self._make_variables()
            for slot in self._slot_names():  # one slot kind for every weight, then the next
                for param in params:
                    self._slot(param, slot)
            lr = self._variables["learning_rate"]
            if self._hyper["decay"]:  # lr / (1 + decay * iterations), as keras decays it
                one = constant(1.0, dtype=dtypes.float32)
                lr = lr / (one + self._variables["decay"] *
                           math_ops.cast(self.iterations, dtypes.float32))
            step = math_ops.cast(self.iterations + 1, dtypes.float32)
            updates = [_constrained(p, self._apply(p, g, lr, step))
                       for p, g in zip(params, grads, strict=True)]
            updates.append(assign_add(self.iterations, constant(1, dtype=dtypes.int64)))
        return updates

    def _slot_names(self) -> list:
        """The slots each weight gets, in the order keras makes them."""
        return []

    def get_config(self) -> dict:
        return {"name": self._name, **self._hyper}

    def variables(self) -> list:
        return ([self.iterations] if self.iterations is not None else []) + \
            list(self._variables.values()) + list(self._slots.values())

    weights = property(variables)


def _dense(grad, weight: Variable):
    """A sparse gradient (an embedding's rows) summed into a dense one of the weight's
    shape: keras's formulas update every row."""
    if not isinstance(grad, IndexedSlices):
        return grad
    return unsorted_segment_sum(grad.values, grad.indices, weight.shape.as_list()[0])


def _constrained(weight: Variable, updated):
    """The weight's ``constraint`` applied after its update, as keras does."""
    if weight.constraint is None:
        return updated
    return assign(weight, weight.constraint(updated))


class SGD(Optimizer):
    """``w -= lr * g``; with ``momentum`` m: ``v = m * v - lr * g; w += v`` (Nesterov:
    ``w += m * v - lr * g``)."""

    def __init__(self, learning_rate: float = 0.01, momentum: float = 0.0,
                 nesterov: bool = False, name: str = "SGD", **kwargs):
        super().__init__(name, learning_rate, **kwargs)
        if not 0 <= momentum <= 1:
            raise ValueError("`momentum` must be between [0, 1].")
        self._hyper["momentum"] = float(momentum)
        self.nesterov = bool(nesterov)

    def _slot_names(self) -> list:
        return ["momentum"] if self._hyper["momentum"] else []

    def _apply(self, weight, grad, lr, step):
        momentum = self._variables["momentum"]
        if not self._hyper["momentum"]:
            return assign_sub(weight, lr * grad)
        velocity = self._slot(weight, "momentum")
        new_velocity = assign(velocity, momentum * velocity - lr * grad)
        if self.nesterov:
            return assign_add(weight, momentum * new_velocity - lr * grad)
        return assign_add(weight, new_velocity)


class Adam(Optimizer):
    """Adam with bias correction folded into the step size:
    ``w -= lr * sqrt(1 - b2^t) / (1 - b1^t) * m / (sqrt(v) + epsilon)``."""

    def __init__(self, learning_rate: float = 0.001, beta_1: float = 0.9,
                 beta_2: float = 0.999, epsilon: float = 1e-7, amsgrad: bool = False,
                 name: str = "Adam", **kwargs):
        super().__init__(name, learning_rate, **kwargs)
        if amsgrad:
            raise ValueError("Adam: amsgrad=True is not supported")
        self._hyper.update(beta_1=float(beta_1), beta_2=float(beta_2))
        self.epsilon = float(epsilon)

    def _slot_names(self) -> list:
        return ["m", "v"]

    def _apply(self, weight, grad, lr, step):
        beta_1, beta_2 = self._variables["beta_1"], self._variables["beta_2"]
        one = constant(1.0, dtype=dtypes.float32)
        lr_t = lr * math_ops.sqrt(one - math_ops.pow(beta_2, step)) / \
            (one - math_ops.pow(beta_1, step))
        m, v = self._slot(weight, "m"), self._slot(weight, "v")
        m_t = assign(m, beta_1 * m + (one - beta_1) * grad)
        v_t = assign(v, beta_2 * v + (one - beta_2) * math_ops.square(grad))
        eps = constant(self.epsilon, dtype=dtypes.float32)
        return assign_sub(weight, lr_t * m_t / (math_ops.sqrt(v_t) + eps))


class RMSprop(Optimizer):
    """``ms = rho * ms + (1 - rho) * g^2; w -= lr * g / (sqrt(ms) + epsilon)`` (``ms``
    starts at zero); with ``momentum``, ``mom = momentum * mom + lr * g /
    sqrt(ms + epsilon); w -= mom``."""

    def __init__(self, learning_rate: float = 0.001, rho: float = 0.9, momentum: float = 0.0,
                 epsilon: float = 1e-7, centered: bool = False, name: str = "RMSprop",
                 **kwargs):
        super().__init__(name, learning_rate, **kwargs)
        if centered:
            raise ValueError("RMSprop: centered=True is not supported")
        self._hyper.update(rho=float(rho), momentum=float(momentum))
        self.epsilon = float(epsilon)

    def _slot_names(self) -> list:
        return ["rms", "momentum"] if self._hyper["momentum"] else ["rms"]

    def _apply(self, weight, grad, lr, step):
        rho = self._variables["rho"]
        one = constant(1.0, dtype=dtypes.float32)
        eps = constant(self.epsilon, dtype=dtypes.float32)
        ms = self._slot(weight, "rms")
        ms_t = assign(ms, rho * ms + (one - rho) * math_ops.square(grad))
        if not self._hyper["momentum"]:
            return assign_sub(weight, lr * grad / (math_ops.sqrt(ms_t) + eps))
        mom = self._slot(weight, "momentum")
        mom_t = assign(mom, self._variables["momentum"] * mom +
                       lr * grad / math_ops.sqrt(ms_t + eps))
        return assign_sub(weight, mom_t)


class Adagrad(Optimizer):
    """``acc += g^2; w -= lr * g / (sqrt(acc) + epsilon)`` (``acc`` starts at
    ``initial_accumulator_value``)."""

    def __init__(self, learning_rate: float = 0.001, initial_accumulator_value: float = 0.1,
                 epsilon: float = 1e-7, name: str = "Adagrad", **kwargs):
        super().__init__(name, learning_rate, **kwargs)
        self.initial_accumulator_value = float(initial_accumulator_value)
        self.epsilon = float(epsilon)

    def _slot_names(self) -> list:
        return []  # made in _apply: they start at initial_accumulator_value

    def _apply(self, weight, grad, lr, step):
        acc = self._slot(weight, "accumulator", self.initial_accumulator_value)
        acc_t = assign_add(acc, math_ops.square(grad))
        eps = constant(self.epsilon, dtype=dtypes.float32)
        return assign_sub(weight, lr * grad / (math_ops.sqrt(acc_t) + eps))


class TFOptimizer(Optimizer):
    """A TF1 ``tf.train.Optimizer`` used by ``compile``: its ``minimize`` is the update."""

    def __init__(self, optimizer: TFOptimizerBase):
        super().__init__(type(optimizer).__name__, 0.0)
        self.optimizer = optimizer

    @property
    def lr(self):
        return getattr(self.optimizer, "_learning_rate", None)

    learning_rate = lr

    def get_updates(self, loss, params: Sequence) -> list:
        graph = get_default_graph()
        with graph.name_scope(None), graph.control_dependencies(None):
            self.iterations = self.iterations or Variable(
                constant(0, dtype=dtypes.int64), name="iterations", trainable=False)
        return [self.optimizer.minimize(loss, var_list=list(params)),
                assign_add(self.iterations, constant(1, dtype=dtypes.int64))]


_BY_NAME = {"sgd": SGD, "adam": Adam, "rmsprop": RMSprop, "adagrad": Adagrad}


def get(identifier) -> Optimizer:
    """An optimizer from its name ('sgd', 'adam', 'rmsprop', 'adagrad'), a keras
    optimizer, or a TF1 ``tf.train.Optimizer``."""
    if isinstance(identifier, Optimizer):
        return identifier
    if isinstance(identifier, TFOptimizerBase):
        return TFOptimizer(identifier)
    if isinstance(identifier, str):
        if identifier.lower() not in _BY_NAME:
            raise ValueError(f"Unknown optimizer: {identifier}. Please ensure this object is "
                             "passed to the `custom_objects` argument.")
        return _BY_NAME[identifier.lower()]()
    raise ValueError(f"Could not interpret optimizer identifier: {identifier}")
