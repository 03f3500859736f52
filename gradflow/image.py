"""``gf.image``: TF1's ``tf.image`` (``tf.compat.v1.image``): resizing, crops and pads,
flips and rotations, colour conversions and adjustments, random distortions, patches,
box ops, image metrics and PNG/JPEG encoding and decoding (Pillow, the optional
``image`` extra). See docs/image.md."""
from gradflow.ops.image_color import (  # noqa: F401
    adjust_brightness, adjust_contrast, adjust_gamma, adjust_hue, adjust_saturation,
    convert_image_dtype, grayscale_to_rgb, hsv_to_rgb, per_image_standardization,
    random_brightness, random_contrast, random_hue, random_saturation, rgb_to_grayscale,
    rgb_to_hsv, rgb_to_yiq, rgb_to_yuv, yiq_to_rgb, yuv_to_rgb)
from gradflow.ops.image_codecs import (  # noqa: F401
    adjust_jpeg_quality, decode_and_crop_jpeg, decode_bmp, decode_gif, decode_webp, encode_jpeg,
    encode_png, extract_jpeg_shape, is_jpeg, random_jpeg_quality)
from gradflow.ops.image_detection import (  # noqa: F401
    combined_non_max_suppression, non_max_suppression_overlaps)
from gradflow.ops.image_ops import (  # noqa: F401
    draw_bounding_boxes, extract_glimpse, extract_image_patches, extract_patches,
    flip_left_right, flip_up_down, image_gradients, non_max_suppression,
    non_max_suppression_padded, non_max_suppression_with_scores, psnr, random_crop,
    random_flip_left_right, random_flip_up_down, rot90, sample_distorted_bounding_box,
    sobel_edges, ssim, ssim_multiscale, total_variation)
from gradflow.ops.image_ops import transpose_image  # noqa: F401
from gradflow.ops.image_ops import transpose_image as transpose  # noqa: F401
from gradflow.ops.image_resize import (  # noqa: F401
    ResizeMethod, central_crop, crop_and_resize, crop_to_bounding_box, pad_to_bounding_box,
    resize, resize_area, resize_bicubic, resize_bilinear, resize_image_with_crop_or_pad,
    resize_image_with_pad, resize_images, resize_nearest_neighbor, resize_with_crop_or_pad)
from gradflow.ops.parsing_ops import decode_image, decode_jpeg, decode_png  # noqa: F401
