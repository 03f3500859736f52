"""``gf.image``: image decoding (Pillow, the optional ``image`` extra), resizing and the
TF1 preprocessing functions."""
from gradflow.ops.image_adjust import (adjust_brightness, adjust_contrast, central_crop,
                                       convert_image_dtype, crop_to_bounding_box,
                                       flip_left_right, flip_up_down, grayscale_to_rgb,
                                       pad_to_bounding_box, per_image_standardization,
                                       random_brightness, random_contrast, random_crop,
                                       random_flip_left_right, random_flip_up_down,
                                       resize_image_with_crop_or_pad, rgb_to_grayscale)
from gradflow.ops.image_ops import (ResizeMethod, resize_area, resize_bicubic,
                                    resize_bilinear, resize_images, resize_nearest_neighbor)
from gradflow.ops.parsing_ops import decode_image, decode_jpeg, decode_png

__all__ = ["ResizeMethod", "adjust_brightness", "adjust_contrast", "central_crop",
           "convert_image_dtype", "crop_to_bounding_box", "decode_image", "decode_jpeg",
           "decode_png", "flip_left_right", "flip_up_down", "grayscale_to_rgb",
           "pad_to_bounding_box", "per_image_standardization", "random_brightness",
           "random_contrast", "random_crop", "random_flip_left_right", "random_flip_up_down",
           "resize", "resize_area", "resize_bicubic", "resize_bilinear",
           "resize_image_with_crop_or_pad", "resize_images", "resize_nearest_neighbor",
           "rgb_to_grayscale"]

resize = resize_images
