"""``ProximalGradientDescentOptimizer``: a gradient step, then the l1/l2 proximal map."""
from __future__ import annotations

from gradflow.train.optimizer import Optimizer

__all__ = ["ProximalGradientDescentOptimizer"]

# Op names of the hyperparameter constants, keyed by the update rule's names (as TF1).
PROXIMAL_HYPER_NAMES = {"learning_rate": "learning_rate", "l1": "l1_regularization_strength",
                        "l2": "l2_regularization_strength"}


class ProximalGradientDescentOptimizer(Optimizer):
    """TF1's ``tf.train.ProximalGradientDescentOptimizer`` (FOBOS, Duchi & Singer 2009).

    ``prox = var - learning_rate * grad``; then
    ``var = sign(prox) * max(|prox| - learning_rate * l1, 0) / (1 + learning_rate * l2)``
    (no shrinking when ``l1`` is 0). No slots.
    """

    _rule = "ProximalGradientDescent"

    def __init__(self, learning_rate, l1_regularization_strength=0.0,
                 l2_regularization_strength=0.0, use_locking: bool = False,
                 name: str = "ProximalGradientDescent"):
        super().__init__(use_locking, name)
        self._hyper = {"learning_rate": learning_rate, "l1": l1_regularization_strength,
                       "l2": l2_regularization_strength}
        self._hyper_names = PROXIMAL_HYPER_NAMES
