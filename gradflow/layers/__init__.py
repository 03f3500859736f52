"""``gf.layers``: TF1's ``tf.layers`` (function and class forms), on the variable store."""
__all__: list = []
