"""``gf.strings``: TF1's ``tf.strings`` names that gradflow has (``split``)."""
from gradflow.ops.parsing_ops import strings_split as split  # noqa: F401
