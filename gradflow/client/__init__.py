"""``gf.client``: TF1's ``tensorflow.python.client`` pieces (``timeline``)."""
from gradflow.summary import timeline  # noqa: F401
