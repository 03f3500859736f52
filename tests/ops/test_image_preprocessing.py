"""TF1's image preprocessing and ``nn.lrn`` against TF 2.21 (fixture
``make_image_preprocessing.py``): values, dtypes, static shapes, the result's top scope,
LRN's gradient (and numerically), the random functions' shapes, seeds and ranges, and
messages."""
import pathlib
import sys

import numpy as np
import pytest

import gradflow as gf
import gradflow.compat.v1 as tf
from gradcheck import gradient_error
from tf_fixtures import load_json

sys.path.insert(0, str(pathlib.Path(__file__).parents[1] / "fixtures" / "tf"))
from image_preprocessing_cases import BATCH, IMAGE, build  # noqa: E402

RECORDED = load_json("image_preprocessing")


def test_deterministic_functions_match_tensorflow():
    with gf.Graph().as_default() as g:
        outs = build(tf)
        batch = [op for op in g.get_operations() if op.type == "Const"][1]
        lrn_grad = gf.gradients(outs["lrn"], batch.outputs[0],
                                grad_ys=gf.constant(np.sin(np.arange(96)).reshape(2, 4, 4, 3),
                                                    gf.float32))[0]
        with gf.Session() as sess:
            values, grad = sess.run([outs, lrn_grad])
    for key, tensor in outs.items():
        want = RECORDED["outputs"][key]
        got = np.asarray(values[key]).ravel()
        if want["dtype"] in ("uint8", "int16"):
            np.testing.assert_array_equal(got, want["value"], err_msg=key)
        else:
            np.testing.assert_allclose(got, want["value"], rtol=1e-5, atol=1e-5, err_msg=key)
        assert (tensor.dtype.name, tensor.shape.as_list()) == (want["dtype"], want["shape"]), key
        assert tensor.name.split("/")[0] == want["name"].split("/")[0], key
    np.testing.assert_allclose(grad.ravel(), RECORDED["lrn_grad"], rtol=1e-4, atol=1e-6)


def test_lrn_gradient_numerically():
    # LRN takes float16/bfloat16/float32 only (as TF's): float32 with a coarse step.
    value = (np.sin(np.arange(2 * 2 * 2 * 5)) * 1.5).reshape(2, 2, 2, 5).astype(np.float32)
    error = gradient_error(lambda x: gf.nn.lrn(x, depth_radius=2, bias=0.5, alpha=0.3,
                                               beta=0.75), [value], delta=1e-3)
    assert error < 2e-3


def test_random_functions_shapes_seeds_and_ranges():
    with gf.Graph().as_default():
        img = gf.constant(IMAGE)
        random = {"rflip": gf.image.random_flip_left_right(img, seed=1),
                  "rflip_ud": gf.image.random_flip_up_down(gf.constant(BATCH), seed=1),
                  "rcrop": gf.random_crop(img, [4, 4, 3], seed=2),
                  "rbright": gf.image.random_brightness(img, max_delta=63, seed=3),
                  "rcontrast": gf.image.random_contrast(img, lower=0.2, upper=1.8, seed=4)}
        assert {k: [t.dtype.name, t.shape.as_list()] for k, t in random.items()} == \
            RECORDED["random"]
        with gf.Session() as sess:
            runs = [sess.run(random) for _ in range(12)]
        with gf.Session() as sess:
            again = sess.run(random)
    for key in random:
        np.testing.assert_array_equal(again[key], runs[0][key])
    flips = {"same" if np.array_equal(r["rflip"], IMAGE) else
             "mirrored" if np.array_equal(r["rflip"], IMAGE[:, ::-1]) else "other" for r in runs}
    assert flips == {"same", "mirrored"}
    for r in runs:
        crop = r["rcrop"]
        assert any(np.array_equal(crop, IMAGE[i:i + 4, j:j + 4]) for i in range(3)
                   for j in range(2))
        delta = r["rbright"] - IMAGE
        assert np.allclose(delta, delta.flat[0], atol=1e-4) and abs(delta.flat[0]) <= 63


def test_errors_match_tensorflow_and_leave_the_graph():
    with gf.Graph().as_default() as g:
        zeros3, zeros2 = gf.zeros([4, 4, 3]), gf.zeros([4, 4])
        small, flat = gf.zeros([2, 2, 3]), gf.zeros([2, 3])
        before = [op.name for op in g.get_operations()]
        got = []
        for make in (lambda: gf.image.crop_to_bounding_box(zeros3, 2, 0, 3, 2),
                     lambda: gf.image.pad_to_bounding_box(zeros3, 0, 0, 3, 5),
                     lambda: gf.image.central_crop(zeros3, 1.5),
                     lambda: gf.image.per_image_standardization(zeros2),
                     lambda: gf.image.resize_image_with_crop_or_pad(zeros3, 0, 2),
                     lambda: gf.nn.lrn(flat),
                     lambda: gf.image.random_brightness(small, -1.0),
                     lambda: gf.image.random_contrast(small, 0.5, 0.5)):
            with pytest.raises((TypeError, ValueError)) as info:
                make()
            got.append([type(info.value).__name__, str(info.value).split(" for ")[0]])
        assert got == RECORDED["errors"]
        assert [op.name for op in g.get_operations()] == before
