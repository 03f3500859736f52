"""``tf.image`` resizing against TF 2.21: ResizeBilinear/ResizeNearestNeighbor values,
gradients, attrs, ``resize_images``' names, shapes, dtypes and messages.

The fixture comes from ``tests/fixtures/tf/make_image_resize.py``.
"""
import numpy as np
import pytest

import gradflow as gf
from gradcheck import gradient_error, second_order_error
from tf_fixtures import load_json

RECORDED = load_json("image_resize")
IMAGE = np.asarray(RECORDED["image"], np.float32).reshape(2, 3, 4, 2)


@pytest.mark.parametrize("key", sorted(RECORDED["cases"]))
def test_resize_values_and_gradients_match_tensorflow(key):
    case = RECORDED["cases"][key]
    size = case["size"]
    with gf.Graph().as_default():
        x = gf.constant(IMAGE)
        fn = {"bilinear": gf.image.resize_bilinear, "bicubic": gf.image.resize_bicubic,
              "nearest": gf.image.resize_nearest_neighbor,
              "area": gf.image.resize_area}[case["method"]]
        y = fn(x, size, **case["attrs"])
        weights = np.cos(np.arange(2 * size[0] * size[1] * 2)).reshape(2, size[0], size[1], 2)
        grad = None if case["method"] == "area" else \
            gf.gradients(gf.reduce_sum(y * weights.astype(np.float32)), x)[0]
        if grad is None:  # ResizeArea has no gradient, as in TF
            assert gf.gradients(gf.reduce_sum(y), x) == [None]
        with gf.Session() as sess:
            values, grads = sess.run([y, grad if grad is not None else gf.constant(0.0)])
            grads = np.zeros(0) if grad is None else grads
    np.testing.assert_allclose(values.ravel(), case["values"], rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(grads.ravel(), case["grad"], rtol=1e-5, atol=1e-5)
    assert y.name == case["name"]
    assert (grad.op.type if grad is not None else None) == case["grad_type"]
    assert y.shape.as_list() == case["shape"]


@pytest.mark.parametrize("method", ["bilinear", "bicubic", "nearest"])
@pytest.mark.parametrize("attrs", [{}, {"align_corners": True}, {"half_pixel_centers": True}])
def test_resize_numeric_gradient(method, attrs):
    # ResizeBilinear and ResizeBicubic give float32 even for float64 images (as TF's): the
    # map is linear, so a large step keeps central differences exact up to float32 rounding.
    fn = {"bilinear": gf.image.resize_bilinear, "bicubic": gf.image.resize_bicubic,
          "nearest": gf.image.resize_nearest_neighbor}[method]
    image = np.sin(np.arange(1 * 3 * 4 * 2) * 0.7).reshape(1, 3, 4, 2)
    for size in ([5, 7], [2, 3]):
        assert gradient_error(lambda x, s=size: gf.cast(fn(x, s, **attrs), gf.float64),
                              [image], delta=0.1) < 1e-5


@pytest.mark.parametrize("method", ["bilinear", "bicubic"])
def test_resize_second_order(method):
    image = np.sin(np.arange(1 * 3 * 4 * 1) * 0.7).reshape(1, 3, 4, 1)
    fn = gf.image.resize_bilinear if method == "bilinear" else gf.image.resize_bicubic

    def build(x):
        y = gf.cast(fn(x, [5, 6]), gf.float64)
        return y * y
    assert second_order_error(build, [image], delta=0.1) < 1e-4


def test_resize_images_names_dtypes_shapes_and_values():
    with gf.Graph().as_default() as g:
        batch = gf.placeholder(gf.float32, [None, 3, 4, 2], name="x")
        single = gf.placeholder(gf.float32, [3, 4, 2], name="single")
        u8 = gf.placeholder(gf.uint8, [1, 3, 4, 1], name="u8")
        size = gf.placeholder(gf.int32, [2], name="size")
        results = [
            gf.image.resize_images(batch, (5, 7)),
            gf.image.resize_images(batch, [6, 8],
                                   method=gf.image.ResizeMethod.NEAREST_NEIGHBOR),
            gf.image.resize_images(single, [6, 6]),
            gf.image.resize_images(u8, [6, 6]),
            gf.image.resize_images(u8, [6, 6], method=1),
            gf.image.resize_images(batch, [3, 4]),
            gf.image.resize_images(batch, size),
            gf.image.resize_images(batch, [6, 6], preserve_aspect_ratio=True),
            gf.image.resize_images(single, [2, 2], align_corners=True, name="shrink"),
            gf.image.resize_images(batch, [7, 5], method=gf.image.ResizeMethod.BICUBIC),
            gf.image.resize_images(batch, [2, 3], method=gf.image.ResizeMethod.AREA),
        ]
        assert [[t.name, t.dtype.name, t.shape.as_list()] for t in results] == \
            RECORDED["resize_images"]
        # TF computes the aspect-preserving size with graph ops (resize_7/...); gradflow,
        # needing a static size for it, computes it while building.
        names = [op.name for op in g.get_operations()]
        assert [n for n in names if not n.startswith("resize_7/")] == \
            [n for n in RECORDED["resize_images_ops"] if not n.startswith("resize_7/")]
        with gf.Session() as sess:
            np.testing.assert_allclose(sess.run(results[2], {single: IMAGE[0]}).ravel(),
                                       RECORDED["single_values"], rtol=1e-5, atol=1e-5)
            np.testing.assert_allclose(sess.run(results[7], {batch: IMAGE}).ravel(),
                                       RECORDED["aspect_values"], rtol=1e-5, atol=1e-5)
            np.testing.assert_allclose(
                sess.run(results[6], {batch: IMAGE, size: [4, 5]}).ravel(),
                RECORDED["dynamic_values"], rtol=1e-5, atol=1e-5)
            np.testing.assert_allclose(sess.run(results[9], {batch: IMAGE}).ravel(),
                                       RECORDED["bicubic_values"], rtol=1e-5, atol=1e-5)
            np.testing.assert_allclose(sess.run(results[10], {batch: IMAGE}).ravel(),
                                       RECORDED["area_values"], rtol=1e-5, atol=1e-5)
            u8_image = (IMAGE[:1, :, :, :1] * 20 + 120).astype(np.uint8)
            bilinear, nearest = sess.run(results[3:5], {u8: u8_image})
            np.testing.assert_allclose(bilinear.ravel(), RECORDED["u8_values"][0], rtol=1e-5)
            assert nearest.ravel().tolist() == RECORDED["u8_values"][1]


def test_resize_images_errors_match_tensorflow_and_leave_the_graph():
    with gf.Graph().as_default() as g:
        batch = gf.placeholder(gf.float32, [None, 3, 4, 2], name="x")
        rank2 = gf.placeholder(gf.float32, [3, 4])
        unknown = gf.placeholder(gf.float32)
        strings = gf.placeholder(gf.string, [1, 2, 2, 1])
        before = [op.name for op in g.get_operations()]
        messages = []
        for args in ({"images": batch, "size": [2]}, {"images": batch, "size": 5},
                     {"images": batch, "size": [2, 3], "method": 7},
                     {"images": rank2, "size": [2, 2]}, {"images": unknown, "size": [2, 2]}):
            with pytest.raises(ValueError) as info:
                gf.image.resize_images(**args)
            messages.append(str(info.value))
        with pytest.raises(TypeError) as info:
            gf.image.resize_bilinear(strings, [2, 2])
        messages.append(str(info.value))
        assert messages == RECORDED["errors"]
        with pytest.raises(ValueError, match="preserve_aspect_ratio"):
            gf.image.resize_images(batch, gf.placeholder_with_default([5, 5], [2]),
                                   preserve_aspect_ratio=True)
        assert [op.name for op in g.get_operations()] == before + ["PlaceholderWithDefault/input",
                                                                   "PlaceholderWithDefault"]
        with gf.Session() as sess, pytest.raises(gf.errors.InvalidArgumentError) as info:
            sess.run(gf.image.resize_bilinear(IMAGE, [2, 2], align_corners=True,
                                              half_pixel_centers=True))
        assert info.value.message.splitlines()[0] in RECORDED["run_error"].splitlines()
