"""``gf.losses``: TF1's ``tf.losses`` (weighted, reduced losses and the loss collections)."""
__all__: list = []
