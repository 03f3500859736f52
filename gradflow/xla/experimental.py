"""``tf.xla.experimental``: ``jit_scope`` and ``compile``."""
from gradflow.backends.xla.api import compile, jit_scope  # noqa: F401
