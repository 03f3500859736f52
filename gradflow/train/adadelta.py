"""``AdadeltaOptimizer``: steps scaled by the ratio of two running RMS values."""
from __future__ import annotations

from gradflow.train.optimizer import Optimizer

__all__ = ["AdadeltaOptimizer"]


class AdadeltaOptimizer(Optimizer):
    """TF1's ``tf.train.AdadeltaOptimizer`` (Zeiler, 2012, with TF1's learning rate).

    ``accum = rho * accum + (1 - rho) * grad**2``;
    ``update = sqrt(accum_update + epsilon) / sqrt(accum + epsilon) * grad``;
    ``accum_update = rho * accum_update + (1 - rho) * update**2``; ``var -= lr * update``.
    Slots ``"accum"`` and ``"accum_update"``.
    """

    _rule = "Adadelta"

    def __init__(self, learning_rate=0.001, rho=0.95, epsilon=1e-08, use_locking: bool = False,
                 name: str = "Adadelta"):
        super().__init__(use_locking, name)
        self._hyper = {"lr": learning_rate, "rho": rho, "epsilon": epsilon}
