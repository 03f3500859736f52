"""``tf.contrib.compiler``."""
from gradflow.contrib.compiler import jit  # noqa: F401
