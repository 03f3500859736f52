"""``gf.image``: image decoding (Pillow, the optional ``image`` extra)."""
from gradflow.ops.parsing_ops import decode_image, decode_jpeg, decode_png  # noqa: F401
