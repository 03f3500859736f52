"""``gf.sets``: TF1's ``tf.sets`` (set operations over the last dimension)."""
from gradflow.ops.set_ops import set_difference, set_intersection, set_size, set_union

__all__ = ["difference", "intersection", "set_difference", "set_intersection", "set_size",
           "set_union", "size", "union"]

difference = set_difference
intersection = set_intersection
size = set_size
union = set_union
