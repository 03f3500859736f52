"""``tf.contrib.compiler.jit``: the TF1 spelling of ``tf.xla.experimental.jit_scope``."""
from gradflow.backends.xla.api import jit_scope as experimental_jit_scope  # noqa: F401
