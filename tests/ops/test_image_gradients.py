"""Numeric gradient checks (float64 inputs) of the differentiable tf.image ops."""
import numpy as np
import pytest

import gradflow as gf
from gradcheck import gradient_error, second_order_error

RNG = np.random.default_rng(7)
BATCH = RNG.random((2, 4, 5, 2))
RESIZE_FLAGS = [{}, {"align_corners": True}, {"half_pixel_centers": True}]


@pytest.mark.parametrize("flags", RESIZE_FLAGS)
@pytest.mark.parametrize("fn", [gf.image.resize_bilinear, gf.image.resize_bicubic])
def test_linear_resize_gradients(fn, flags):
    # the forward op computes float32, so central differences are float32-accurate
    error = gradient_error(lambda x: fn(x, [6, 3], **flags), [BATCH], delta=1e-3)
    assert error < 2e-3


@pytest.mark.parametrize("flags", RESIZE_FLAGS)
def test_nearest_resize_gradient(flags):
    error = gradient_error(lambda x: gf.image.resize_nearest_neighbor(x, [7, 3], **flags),
                           [BATCH])
    assert error < 1e-6


def test_resize_gradients_second_order():
    assert second_order_error(lambda x: gf.image.resize_bilinear(x, [6, 7]), [BATCH],
                              delta=1e-3) < 2e-3
    assert second_order_error(lambda x: gf.image.resize_nearest_neighbor(x, [3, 7]),
                              [BATCH]) < 1e-6


def test_resize_images_gradient_through_3d_image():
    error = gradient_error(lambda x: gf.image.resize_images(x, [7, 3]), [BATCH[0]], delta=1e-3)
    assert error < 2e-3


def test_crop_and_resize_gradients_for_image_and_boxes():
    boxes = np.array([[0.1, 0.15, 0.7, 0.8], [0.3, 0.05, 0.9, 0.55]])

    def build_image(x):
        return gf.image.crop_and_resize(x, boxes.astype(np.float32), [0, 1], [3, 4])

    def build_boxes(b):
        return gf.image.crop_and_resize(gf.constant(BATCH, gf.float32), gf.cast(b, gf.float32),
                                        [0, 1], [3, 4])

    assert gradient_error(build_image, [BATCH], delta=1e-3) < 2e-3
    assert gradient_error(build_boxes, [boxes], delta=1e-4) < 5e-3


@pytest.mark.parametrize("padding,rates", [("VALID", [1, 1, 1, 1]), ("SAME", [1, 2, 1, 1])])
def test_extract_patches_gradient(padding, rates):
    def build(x):
        return gf.image.extract_patches(x, [1, 2, 3, 1], [1, 2, 1, 1], rates, padding)
    assert gradient_error(build, [BATCH]) < 1e-8
    assert second_order_error(build, [BATCH]) < 1e-8


def test_rgb_to_hsv_gradient():
    rgb = RNG.uniform(0.05, 0.95, (3, 4, 3))
    assert gradient_error(gf.image.rgb_to_hsv, [rgb]) < 1e-6


@pytest.mark.parametrize("build", [
    lambda x: gf.image.total_variation(x),
    lambda x: gf.image.flip_left_right(x),
    lambda x: gf.image.rot90(x, 3),
    lambda x: gf.image.transpose(x),
    lambda x: gf.image.resize_image_with_crop_or_pad(x, 3, 7),
    lambda x: gf.image.central_crop(x, 0.6),
    lambda x: gf.image.rgb_to_yiq(x),
    lambda x: gf.image.image_gradients(x)[1],
    lambda x: gf.image.sobel_edges(x),
], ids=["total_variation", "flip", "rot90", "transpose", "crop_or_pad", "central_crop",
        "yiq", "image_gradients", "sobel"])
def test_composed_ops_gradients(build):
    x = RNG.random((2, 4, 5, 3))
    assert gradient_error(build, [x]) < 1e-6


def test_per_image_standardization_gradient():
    # TF standardises in float32 whatever the input, so the differences are float32's
    x = RNG.random((2, 4, 5, 3))
    assert gradient_error(gf.image.per_image_standardization, [x], delta=1e-2) < 2e-4


@pytest.mark.parametrize("build,op_type", [
    (lambda x: gf.image.resize_area(x, [2, 2]), "ResizeArea"),
    (lambda x: gf.image.adjust_contrast(x, 1.5), "AdjustContrastv2"),
    (lambda x: gf.image.adjust_hue(x, 0.1), "AdjustHue"),
])
def test_ops_tf_does_not_differentiate_raise_lookup_error(build, op_type):
    with gf.Graph().as_default():
        x = gf.placeholder(gf.float32, [1, 4, 4, 3])
        with pytest.raises(LookupError, match=op_type):
            gf.gradients(build(x), x)


def test_hsv_to_rgb_is_not_differentiable_as_in_tf():
    with gf.Graph().as_default():
        x = gf.placeholder(gf.float32, [4, 3])
        assert gf.gradients(gf.image.hsv_to_rgb(x), x) == [None]
