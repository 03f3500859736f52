"""``AdagradDAOptimizer``: Adagrad dual averaging, for sparse models trained on-line."""
from __future__ import annotations

from gradflow.framework.graph import get_default_graph
from gradflow.ops.array import identity
from gradflow.train.optimizer import Optimizer
from gradflow.train.proximal_gradient_descent import PROXIMAL_HYPER_NAMES

__all__ = ["AdagradDAOptimizer"]


class AdagradDAOptimizer(Optimizer):
    """TF1's ``tf.train.AdagradDAOptimizer`` (Duchi, Hazan & Singer, 2011).

    With ``t = global_step + 1`` (read before the step's increment):
    ``g_acc += grad``; ``gg_acc += grad**2``;
    ``var = -lr * sign(g_acc) * max(|g_acc| - l1 * t, 0) / (l2 * t * lr + sqrt(gg_acc))``
    (no shrinking when ``l1`` is 0). Slots ``"gradient_accumulator"`` (zeros) and
    ``"gradient_squared_accumulator"`` (from its initial value). ``global_step`` is
    required: the update depends on it.
    """

    _rule = "AdagradDA"

    def __init__(self, learning_rate, global_step,
                 initial_gradient_squared_accumulator_value: float = 0.1,
                 l1_regularization_strength=0.0, l2_regularization_strength=0.0,
                 use_locking: bool = False, name: str = "AdagradDA"):
        if initial_gradient_squared_accumulator_value <= 0.0:
            raise ValueError(f"initial_gradient_squared_accumulator_value must be positive: "
                             f"{initial_gradient_squared_accumulator_value}")
        if global_step is None:
            raise ValueError("global_step is required for AdagradDAOptimizer: pass the "
                             "global step variable (e.g. tf.train.get_or_create_global_step())")
        super().__init__(use_locking, name)
        self._global_step = global_step
        self._hyper = {"learning_rate": learning_rate, "l1": l1_regularization_strength,
                       "l2": l2_regularization_strength}
        self._hyper_names = PROXIMAL_HYPER_NAMES
        self._slot_fill = {"gradient_squared_accumulator":
                           initial_gradient_squared_accumulator_value}

    def _prepare(self) -> None:
        super()._prepare()
        graph = get_default_graph()
        step = self._global_step
        with graph.colocate_with(step.op):
            self._hyper_tensors["global_step"] = identity(step) + 1
