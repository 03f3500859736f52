"""``gf.manip``: TF1's ``tf.manip`` namespace (``roll``)."""
from gradflow.ops.manip_ops import roll

__all__ = ["roll"]
