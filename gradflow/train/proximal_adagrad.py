"""``ProximalAdagradOptimizer``: an Adagrad step, then the l1/l2 proximal map."""
from __future__ import annotations

from gradflow.train.optimizer import Optimizer
from gradflow.train.proximal_gradient_descent import PROXIMAL_HYPER_NAMES

__all__ = ["ProximalAdagradOptimizer"]


class ProximalAdagradOptimizer(Optimizer):
    """TF1's ``tf.train.ProximalAdagradOptimizer``.

    ``accum += grad**2``; ``step = learning_rate / sqrt(accum)``;
    ``prox = var - step * grad``; then
    ``var = sign(prox) * max(|prox| - step * l1, 0) / (1 + step * l2)``.
    Slot ``"accumulator"``, starting at ``initial_accumulator_value``.
    """

    _rule = "ProximalAdagrad"

    def __init__(self, learning_rate, initial_accumulator_value: float = 0.1,
                 l1_regularization_strength=0.0, l2_regularization_strength=0.0,
                 use_locking: bool = False, name: str = "ProximalAdagrad"):
        if initial_accumulator_value <= 0.0:
            raise ValueError(f"initial_accumulator_value must be positive: "
                             f"{initial_accumulator_value}")
        super().__init__(use_locking, name)
        self._hyper = {"learning_rate": learning_rate, "l1": l1_regularization_strength,
                       "l2": l2_regularization_strength}
        self._hyper_names = PROXIMAL_HYPER_NAMES
        self._slot_fill = {"accumulator": initial_accumulator_value}
