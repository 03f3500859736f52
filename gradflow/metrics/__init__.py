"""``gf.metrics``: TF1's ``tf.metrics`` (a value and an update op over local variables)."""
__all__: list = []
