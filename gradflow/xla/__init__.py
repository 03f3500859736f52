"""``tf.xla``: XLA compilation through JAX (see docs/xla.md)."""
from gradflow.xla import experimental  # noqa: F401
