"""``FtrlOptimizer``: FTRL-Proximal, the online learner of large sparse linear models."""
from __future__ import annotations

from typing import Optional

from gradflow.framework.constant import constant
from gradflow.ops import math
from gradflow.ops.math import maximum
from gradflow.train.optimizer import Optimizer

__all__ = ["FtrlOptimizer"]


class FtrlOptimizer(Optimizer):
    """TF1's ``tf.train.FtrlOptimizer`` (McMahan et al., "Ad Click Prediction", 2013).

    Per coordinate, with ``p = -learning_rate_power``:
    ``new_accum = accum + grad**2``;
    ``linear += grad + 2 * l2_shrinkage * var - (new_accum**p - accum**p) / lr * var``;
    ``var = (sign(linear) * l1 - linear) / (new_accum**p / lr + 2 * l2)`` where
    ``|linear| > l1``, else 0. ``beta`` adds ``beta / (2 * lr)`` to ``l2``. Slots
    ``"accum"`` (from ``initial_accumulator_value``) and ``"linear"``; their variables
    are named after ``accum_name``/``linear_name`` (default: the optimizer's name). Uses
    ``ApplyFtrlV2`` when ``l2_shrinkage_regularization_strength`` > 0, else ``ApplyFtrl``.
    """

    def __init__(self, learning_rate, learning_rate_power=-0.5, initial_accumulator_value=0.1,
                 l1_regularization_strength=0.0, l2_regularization_strength=0.0,
                 use_locking: bool = False, name: str = "Ftrl",
                 accum_name: Optional[str] = None, linear_name: Optional[str] = None,
                 l2_shrinkage_regularization_strength=0.0, beta=None):
        for key, value, sign in (
                ("initial_accumulator_value", initial_accumulator_value, "positive"),
                ("l1_regularization_strength", l1_regularization_strength, "positive"),
                ("l2_regularization_strength", l2_regularization_strength, "positive"),
                ("learning_rate_power", learning_rate_power, "negative"),
                ("l2_shrinkage_regularization_strength", l2_shrinkage_regularization_strength,
                 "positive")):
            if value < 0.0 if sign == "positive" else value > 0.0:
                raise ValueError(f"{key} {value:f} needs to be {sign} or zero")
        super().__init__(use_locking, name)
        shrinkage = l2_shrinkage_regularization_strength
        self._rule = "FtrlV2" if shrinkage > 0.0 else "Ftrl"
        self._hyper = {"learning_rate": learning_rate, "l1": l1_regularization_strength,
                       "beta": 0.0 if beta is None else beta,
                       "l2_shrinkage": shrinkage, "learning_rate_power": learning_rate_power}
        self._l2 = l2_regularization_strength
        self._hyper_names = {"l1": "l1_regularization_strength",
                             "l2_shrinkage": "l2_shrinkage_regularization_strength"}
        self._slot_fill = {"accum": initial_accumulator_value}
        self._slot_op_names = {"accum": accum_name or name, "linear": linear_name or name}

    def _prepare(self) -> None:
        """Converts the hyperparameters; the l2 strength used gains ``beta / (2 * lr)``."""
        super()._prepare()
        lr = self._hyper_tensors["learning_rate"]
        beta = math.cast(self._hyper_tensors["beta"], lr.dtype)
        floor = constant(1e-36, dtype=lr.dtype)
        adjusted = beta / (2.0 * maximum(lr, floor))
        self._hyper_tensors["l2"] = math.cast(self._l2, adjusted.dtype) + adjusted
