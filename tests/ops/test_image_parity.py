"""tf.image against TF 2.21: values, output names, static shapes and dtypes of every case
in ``tests/fixtures/tf/image_cases.py``, and the build-time errors."""
import pathlib
import sys

import numpy as np
import pytest

import gradflow as gf
from tf_fixtures import load_arrays, load_json

sys.path.insert(0, str(pathlib.Path(__file__).parents[1] / "fixtures" / "tf"))
from image_cases import CASES, ERRORS, GRADIENTS, inputs, tensors, weights  # noqa: E402

RECORD = load_json("image")
VALUES = load_arrays("image")
INPUTS = inputs()
# Cases whose result op TF names through internal steps gradflow builds differently
# (documented in docs/image.md; TF 2.21's non_max_suppression_padded is a graph
# function): only values, shapes and dtypes are compared.
NAMES_DIFFER = {"psnr", "psnr_double", "psnr_uint8", "ssim", "ssim_same", "ssim_multiscale",
                "ssim_multiscale_small", "rot90_1", "rot90_2", "rot90_3_batch", "rot90_negative",
                "rot90_tensor", "nms_padded_indices", "nms_padded_count"}
# rot90 makes its rotation statically where TF always builds a cond: gradflow's static
# shape is the exact one, TF's leaves height and width unknown.
SHAPES_FINER = {"rot90_1", "rot90_2", "rot90_3_batch", "rot90_negative"}
# JPEG round trips: Pillow's codec, not TF's libjpeg build (bytes differ, pixels nearly agree)
JPEG_LOSS = {"adjust_jpeg_quality": 2 / 255, "adjust_jpeg_quality_uint8": 2,
             "decode_and_crop_jpeg": 4, "decode_and_crop_jpeg_gray": 2}


def _build(build):
    graph = gf.Graph()
    with graph.as_default():
        y = build(gf, tensors(gf, INPUTS))
        with gf.Session(graph=graph) as session:
            return y, session.run(y)


@pytest.mark.parametrize("key", sorted(CASES))
def test_value_shape_dtype_and_name_match_tf(key):
    expected = RECORD["cases"][key]
    y, value = _build(CASES[key])
    want = VALUES[key]
    assert y.dtype.name == expected["dtype"]
    shape = y.shape.as_list() if y.shape.ndims is not None else None
    if key in SHAPES_FINER:
        assert y.shape.is_compatible_with(gf.TensorShape(expected["shape"]))
    else:
        assert shape == expected["shape"]
    assert value.shape == want.shape and value.dtype == want.dtype
    if key in JPEG_LOSS:
        assert np.abs(value.astype(float) - want.astype(float)).mean() <= JPEG_LOSS[key]
    elif np.issubdtype(want.dtype, np.floating):
        np.testing.assert_allclose(value, want, rtol=2e-5, atol=2e-5)
    else:
        np.testing.assert_array_equal(value, want)
    if key not in NAMES_DIFFER:
        assert y.name == expected["name"]


@pytest.mark.parametrize("key", sorted(ERRORS))
def test_build_errors_match_tf(key):
    expected = RECORD["errors"][key]
    with gf.Graph().as_default():
        with pytest.raises(Exception) as info:
            ERRORS[key](gf, tensors(gf, INPUTS))
    assert type(info.value).__name__ == expected["type"]
    # TF's message up to its node description ({{node ...}}), which gradflow words its way
    assert str(info.value).startswith(expected["message"].split(" for '{{")[0])


@pytest.mark.parametrize("key", sorted(GRADIENTS))
def test_gradients_match_tf(key):
    graph = gf.Graph()
    with graph.as_default():
        y, wrt = GRADIENTS[key](gf, tensors(gf, INPUTS))
        loss = gf.reduce_sum(y * weights(y.shape.as_list()))
        (grad,) = gf.gradients(loss, [wrt])
        with gf.Session(graph=graph) as session:
            value = session.run(grad)
    np.testing.assert_allclose(value, VALUES[key], rtol=1e-4, atol=1e-4)
