"""``tf.contrib``: the parts old TF1 programs still reach for."""
from gradflow.contrib import compiler  # noqa: F401
