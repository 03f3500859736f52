"""``gf.image``: image decoding (Pillow, the optional ``image`` extra) and resizing."""
from gradflow.ops.image_ops import (ResizeMethod, resize_bilinear, resize_images,
                                    resize_nearest_neighbor)
from gradflow.ops.parsing_ops import decode_image, decode_jpeg, decode_png

__all__ = ["ResizeMethod", "decode_image", "decode_jpeg", "decode_png", "resize",
           "resize_bilinear", "resize_images", "resize_nearest_neighbor"]

resize = resize_images
