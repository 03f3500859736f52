"""tf.image beyond value parity: the namespace against TF's, atomic failure, dynamic
shapes, encoding round trips, and what gradflow refuses to fake."""
import inspect

import numpy as np
import pytest

import gradflow as gf
from tf_fixtures import load_json

# TF names gradflow leaves out (docs/image.md says why): JPEG XL (no decoder in Pillow) and
# the region proposals of Faster R-CNN (TF has only a GPU kernel for them).
NOT_PROVIDED = {"decode_jxl", "generate_bounding_box_proposals"}
IMAGE = np.random.default_rng(5).random((5, 6, 3)).astype(np.float32)


def test_namespace_matches_tf_but_the_documented_gaps():
    tf_names = set(load_json("image")["names"])
    ours = {n for n in dir(gf.image) if not n.startswith("_")}
    assert tf_names - ours == NOT_PROVIDED
    assert gf.image.ResizeMethod.BICUBIC == 2 and gf.image.resize is gf.image.resize_images


class Inputs:
    """The tensors the bad calls take, made before the snapshot."""

    def __init__(self):
        self.image = gf.constant(IMAGE, name="x")
        self.batch = gf.expand_dims(self.image, 0)
        self.ints = gf.cast(self.image, gf.int32)
        self.u8 = gf.cast(self.image, gf.uint8)


def test_signatures_match_tf():
    for name, params in load_json("image")["signatures"].items():
        if name in NOT_PROVIDED:
            continue
        assert list(inspect.signature(getattr(gf.image, name)).parameters) == params, name


BAD_CALLS = {
    "resize method": (ValueError, lambda x: gf.image.resize_images(x.image, [3, 3], method=7)),
    "resize v2 method": (ValueError, lambda x: gf.image.resize_images(x.image, [3, 3],
                                                                      method="lanczos3")),
    "crop too big": (ValueError, lambda x: gf.image.crop_to_bounding_box(x.image, 1, 1, 5, 5)),
    "pad too small": (ValueError, lambda x: gf.image.pad_to_bounding_box(x.image, 1, 1, 5, 5)),
    "crop or pad": (ValueError, lambda x: gf.image.resize_image_with_crop_or_pad(x.image, 4, 0)),
    "central fraction": (ValueError, lambda x: gf.image.central_crop(x.image, 0.0)),
    "contrast range": (ValueError, lambda x: gf.image.random_contrast(x.image, 2.0, 1.0)),
    "gamma": (ValueError, lambda x: gf.image.adjust_gamma(x.image, -2.0)),
    "convert dtype": (AttributeError, lambda x: gf.image.convert_image_dtype(x.image, gf.string)),
    "hsv of ints": (TypeError, lambda x: gf.image.rgb_to_hsv(x.ints)),
    "patches padding": (ValueError, lambda x: gf.image.extract_patches(
        x.batch, [1, 2, 2, 1], [1, 1, 1, 1], [1, 1, 1, 1], "FULL")),
    "patches too big": (ValueError, lambda x: gf.image.extract_patches(
        x.batch, [1, 9, 2, 1], [1, 1, 1, 1], [1, 1, 1, 1], "VALID")),
    "rot90 k": (TypeError, lambda x: gf.image.rot90(x.image, 1.5)),
    "soft nms": (ValueError, lambda x: gf.image.non_max_suppression_with_scores(
        [[0, 0, 1, 1.0]], [1.0], 1, soft_nms_sigma=0.5)),
    "jpeg density": (ValueError, lambda x: gf.image.encode_jpeg(
        x.u8, density_unit="cm")),
    "grayscale channels": (ValueError, lambda x: gf.image.grayscale_to_rgb(x.image)),
    "crop_and_resize method": (ValueError, lambda x: gf.image.crop_and_resize(
        x.batch, [[0, 0, 1, 1.0]], [0], [2, 2], method="bicubic")),
    "batched padded nms": (ValueError, lambda x: gf.image.non_max_suppression_padded(
        np.zeros((2, 3, 4), np.float32), np.zeros((2, 3), np.float32), 2)),
}


def _collections(graph) -> dict:
    return {key: list(graph.get_collection(key)) for key in graph.get_all_collection_keys()}


@pytest.mark.parametrize("key", sorted(BAD_CALLS))
def test_bad_calls_raise_and_leave_the_graph_untouched(key):
    error, call = BAD_CALLS[key]
    graph = gf.Graph()
    with graph.as_default():
        x = Inputs()
        gf.add_to_collection("things", x.image)
        before = [op.name for op in graph.get_operations()]
        collections = _collections(graph)
        with pytest.raises(error):
            call(x)
        assert [op.name for op in graph.get_operations()] == before
        assert _collections(graph) == collections
        # the names a retry would take are free again
        assert gf.image.flip_left_right(x.image).op.name == "flip_left_right/ReverseV2"


def test_crops_and_pads_of_images_of_unknown_size():
    with gf.Graph().as_default():
        x = gf.placeholder(gf.float32, [None, None, 3])
        outputs = [gf.image.resize_image_with_crop_or_pad(x, 4, 8),
                   gf.image.central_crop(x, 0.5),
                   gf.image.crop_to_bounding_box(x, 1, 2, 3, 3),
                   gf.image.pad_to_bounding_box(x, 1, 2, 9, 9),
                   gf.image.resize_images(x, [12, 8], preserve_aspect_ratio=True),
                   gf.image.resize_image_with_pad(x, 4, 9)]
        assert outputs[0].shape.as_list() == [4, 8, 3]
        with gf.Session() as session:
            got = session.run(outputs, {x: IMAGE})
    with gf.Graph().as_default():
        y = gf.constant(IMAGE)
        static = [gf.image.resize_image_with_crop_or_pad(y, 4, 8), gf.image.central_crop(y, 0.5),
                  gf.image.crop_to_bounding_box(y, 1, 2, 3, 3),
                  gf.image.pad_to_bounding_box(y, 1, 2, 9, 9),
                  gf.image.resize_images(y, [12, 8], preserve_aspect_ratio=True),
                  gf.image.resize_image_with_pad(y, 4, 9)]
        with gf.Session() as session:
            want = session.run(static)
    for a, b in zip(got, want, strict=True):
        np.testing.assert_allclose(a, b)


def test_sobel_edges_of_images_of_unknown_shape():
    batch = np.random.default_rng(4).random((2, 5, 6, 3)).astype(np.float32)
    with gf.Graph().as_default():
        x = gf.placeholder(gf.float32, [None, None, None, None])
        dynamic = gf.image.sobel_edges(x)
        static = gf.image.sobel_edges(gf.constant(batch))
        assert dynamic.shape.as_list() == [None] * 4 + [2]
        assert static.shape.as_list() == [2, 5, 6, 3, 2]
        with gf.Session() as session:
            got, want = session.run([dynamic, static], {x: batch})
    np.testing.assert_array_equal(got, want)


def test_ssim_of_images_of_unknown_shape():
    rng = np.random.default_rng(6)
    a, b = (rng.random((2, 12, 12, 3)).astype(np.float32) for _ in range(2))
    with gf.Graph().as_default():
        x = gf.placeholder(gf.float32, [None, None, None, None])
        y = gf.placeholder(gf.float32, [None, None, None, None])
        dynamic = [gf.image.ssim(x, y, 1.0), gf.image.ssim(x, y, 1.0, return_index_map=True)]
        static = [gf.image.ssim(a, b, 1.0), gf.image.ssim(a, b, 1.0, return_index_map=True)]
        assert static[1].shape.as_list() == [2, 2, 2]
        with gf.Session() as session:
            got = session.run(dynamic, {x: a, y: b})
            want = session.run(static)
    for value, expected in zip(got, want, strict=True):
        np.testing.assert_allclose(value, expected, rtol=1e-6)


def test_png_round_trip_is_exact_and_jpeg_is_close():
    rng = np.random.default_rng(1)
    pixels = (rng.random((6, 7, 3)) * 255).astype(np.uint8)
    wide = (rng.random((4, 5, 1)) * 65535).astype(np.uint16)
    smooth = np.tile(np.linspace(0, 250, 16, dtype=np.uint8)[None, :, None], (16, 1, 3))
    with gf.Graph().as_default():
        png = gf.image.encode_png(pixels, compression=9)
        wide_png = gf.image.encode_png(wide)
        jpeg = gf.image.encode_jpeg(smooth, quality=95)
        assert png.dtype == gf.string and png.shape.as_list() == []
        decoded = [gf.image.decode_png(png), gf.image.decode_png(wide_png, dtype=gf.uint16),
                   gf.image.decode_jpeg(jpeg)]
        with gf.Session() as session:
            back_png, back_wide, back_jpeg = session.run(decoded)
    np.testing.assert_array_equal(back_png, pixels)
    np.testing.assert_array_equal(back_wide, wide)
    assert np.abs(back_jpeg.astype(int) - smooth).max() <= 4


def test_encoders_refuse_what_they_cannot_encode():
    with gf.Graph().as_default():
        with pytest.raises(TypeError):
            gf.image.encode_png(np.zeros((2, 2, 3), np.float32))
        two = gf.image.encode_jpeg(np.zeros((2, 2, 2), np.uint8))
        with gf.Session() as session:
            with pytest.raises(gf.errors.InvalidArgumentError, match="1 or 3 channels"):
                session.run(two)


def test_resize_refuses_both_corner_conventions_when_run_as_tf():
    with gf.Graph().as_default():
        y = gf.image.resize_bilinear(IMAGE[None], [2, 2], align_corners=True,
                                     half_pixel_centers=True)
        with gf.Session() as session:
            with pytest.raises(gf.errors.InvalidArgumentError,
                               match="If half_pixel_centers is True, align_corners must be "
                                     "False."):
                session.run(y)


def test_hue_and_saturation_check_the_channels_when_run_as_tf():
    with gf.Graph().as_default():
        two = gf.constant(IMAGE[:, :, :2])
        with gf.Session() as session:
            for y in (gf.image.adjust_hue(two, 0.1), gf.image.adjust_saturation(two, 2.0)):
                assert y.shape.as_list() == [5, 6, 2]
                with pytest.raises(gf.errors.InvalidArgumentError,
                                   match="input must have 3 channels but instead has 2"):
                    session.run(y)


def test_resize_of_an_unknown_batch_makes_no_shape_op():
    with gf.Graph().as_default() as graph:
        x = gf.placeholder(gf.float32, [None, 3, 4, 2], name="x")
        y = gf.image.resize_images(x, (5, 7))
        assert [op.name for op in graph.get_operations()] == ["x", "resize/size",
                                                             "resize/ResizeBilinear"]
        assert y.shape.as_list() == [None, 5, 7, 2]
        strings = gf.placeholder(gf.string, [1, 2, 2, 1])
        with pytest.raises(TypeError, match="^Value passed to parameter 'images' has DataType "
                                            "string not in list of allowed values: int8, "):
            gf.image.resize_bilinear(strings, [2, 2])


def test_resize_methods_and_names():
    with gf.Graph().as_default():
        x = gf.placeholder(gf.uint8, [2, 5, 6, 3])
        assert gf.image.resize_images(x, [3, 3]).name == "resize/ResizeBilinear:0"
        near = gf.image.resize_images(x, [3, 3], method=gf.image.ResizeMethod.NEAREST_NEIGHBOR)
        assert near.dtype == gf.uint8 and near.op.type == "ResizeNearestNeighbor"
        assert gf.image.resize_images(x, [5, 6]) is x
        assert gf.image.resize_area(x, [2, 2]).dtype == gf.float32
        size = gf.placeholder(gf.int32, [2])
        dynamic = gf.image.resize_bilinear(x, size)
        assert dynamic.shape.as_list() == [2, None, None, 3]
        with gf.Session() as session:
            out = session.run(dynamic, {x: np.zeros((2, 5, 6, 3), np.uint8), size: [4, 2]})
        assert out.shape == (2, 4, 2, 3)


def test_nms_padded_and_scores():
    boxes = np.array([[0, 0, 1, 1], [0, 0.1, 1, 1.1], [0, 2, 1, 3], [0, 5, 1, 6]], np.float32)
    scores = np.array([0.9, 0.95, 0.5, 0.1], np.float32)
    with gf.Graph().as_default():
        indices, valid = gf.image.non_max_suppression_padded(
            boxes, scores, 5, iou_threshold=0.5, score_threshold=0.2,
            pad_to_max_output_size=True)
        kept, kept_scores = gf.image.non_max_suppression_with_scores(boxes, scores, 3)
        assert indices.shape.as_list() == [5]
        with gf.Session() as session:
            got = session.run([indices, valid, kept, kept_scores])
    assert list(got[0]) == [1, 2, 0, 0, 0] and got[1] == 2
    assert list(got[2]) == [1, 2, 3]
    np.testing.assert_allclose(got[3], [0.95, 0.5, 0.1])


def test_cifar10_distorted_inputs_program_runs_unchanged():
    # the CIFAR-10 tutorial's training distortions and evaluation crop, as TF1 wrote them
    tf = gf
    with tf.Graph().as_default():
        tf.set_random_seed(1)
        raw = tf.placeholder(tf.uint8, [32, 32, 3])
        reshaped_image = tf.cast(raw, tf.float32)
        distorted_image = tf.random_crop(reshaped_image, [24, 24, 3])
        distorted_image = tf.image.random_flip_left_right(distorted_image)
        distorted_image = tf.image.random_brightness(distorted_image, max_delta=63)
        distorted_image = tf.image.random_contrast(distorted_image, lower=0.2, upper=1.8)
        float_image = tf.image.per_image_standardization(distorted_image)
        float_image.set_shape([24, 24, 3])
        resized = tf.image.resize_image_with_crop_or_pad(reshaped_image, 24, 24)
        eval_image = tf.image.per_image_standardization(resized)
        assert (float_image.name, eval_image.name) == ("per_image_standardization:0",
                                                       "per_image_standardization_1:0")
        pixels = (np.random.default_rng(0).random((32, 32, 3)) * 255).astype(np.uint8)
        with tf.Session() as session:
            train, evaluate = session.run([float_image, eval_image], {raw: pixels})
    for image in (train, evaluate):
        assert image.shape == (24, 24, 3)
        assert abs(image.mean()) < 1e-5 and abs(image.std() - 1) < 1e-4
    centre = pixels[4:28, 4:28].astype(np.float32)
    np.testing.assert_allclose(evaluate, (centre - centre.mean()) / centre.std(), atol=1e-5)


# Arguments after the first, by parameter name, for calling every gf.image function.
ARGS = {"size": [2, 2], "boxes": [[0, 0, 1, 1.0]], "scores": [1.0], "max_output_size": 1,
        "box_ind": [0], "crop_size": [2, 2], "offset_height": 0, "offset_width": 0,
        "target_height": 2, "target_width": 2, "central_fraction": 0.5, "delta": 0.1,
        "contrast_factor": 1.5, "saturation_factor": 1.5, "max_delta": 0.1, "lower": 0.5,
        "upper": 1.5, "dtype": gf.float32, "max_val": 1.0, "ksizes": [1, 1, 1, 1],
        "sizes": [1, 1, 1, 1], "strides": [1, 1, 1, 1], "rates": [1, 1, 1, 1],
        "padding": "VALID", "bounding_boxes": [[[0, 0, 1, 1.0]]], "jpeg_quality": 50,
        "min_jpeg_quality": 10, "max_jpeg_quality": 20, "offsets": [[0, 0.0]],
        "max_output_size_per_class": 1, "max_total_size": 1}
SECOND_IMAGE = {"b", "img2"}  # a pair's second image: the same bad tensor
# shape-agnostic functions, which a float vector does not trouble when built (as in TF;
# the hue and saturation kernels check the channels when they run)
ANY_SHAPE = {"adjust_brightness", "adjust_gamma", "convert_image_dtype", "random_brightness",
             "adjust_hue", "adjust_saturation", "random_hue", "random_saturation"}
# is_jpeg takes strings of any shape, which is what these bad inputs are (TF's too)
FUNCTIONS = sorted(name for name in dir(gf.image) if not name.startswith(("_", "decode"))
                   and name != "is_jpeg" and callable(getattr(gf.image, name))
                   and not isinstance(getattr(gf.image, name), type))


@pytest.mark.parametrize("bad", ["strings", "vector"])
@pytest.mark.parametrize("name", FUNCTIONS)
def test_every_function_refuses_a_bad_first_input_atomically(name, bad):
    fn = getattr(gf.image, name)
    graph = gf.Graph()
    with graph.as_default():
        value = gf.constant(["a", "b"] if bad == "strings" else [1.0, 2.0], name="value")
        args = []
        for i, (param, spec) in enumerate(inspect.signature(fn).parameters.items()):
            if spec.default is not inspect.Parameter.empty:
                break
            args.append(value if i == 0 or param in SECOND_IMAGE else ARGS[param])
        before = [op.name for op in graph.get_operations()]
        if bad == "vector" and name in ANY_SHAPE:
            fn(*args)
            return
        with pytest.raises((TypeError, ValueError, AttributeError)):
            fn(*args)
        assert [op.name for op in graph.get_operations()] == before


def test_decoders_refuse_bad_data_and_requests_when_run():
    rng = np.random.default_rng(2)
    pixels = (rng.random((4, 5, 3)) * 255).astype(np.uint8)
    with gf.Graph().as_default():
        png = gf.image.encode_png(pixels)
        jpeg = gf.image.encode_jpeg(pixels)
        calls = {
            "Invalid BMP data": gf.image.decode_bmp(png),
            "channels attribute 1": gf.image.decode_bmp(png, channels=1),
            "Invalid GIF data": gf.image.decode_gif(jpeg),
            "Invalid JPEG data": gf.image.extract_jpeg_shape(png),
            "crop window": gf.image.decode_and_crop_jpeg(jpeg, [3, 3, 2, 2]),
        }
        crop = gf.image.decode_and_crop_jpeg(jpeg, [1, 1, 2, 3])
        assert crop.shape.as_list() == [2, 3, None]
        with gf.Session() as session:
            for message, tensor in calls.items():
                with pytest.raises(gf.errors.InvalidArgumentError, match=message):
                    session.run(tensor)
            whole, part = session.run([gf.image.decode_jpeg(jpeg), crop])
            assert list(session.run(gf.image.extract_jpeg_shape(jpeg))) == [4, 5, 3]
    np.testing.assert_array_equal(part, whole[1:3, 1:4])
    with gf.Graph().as_default():
        with pytest.raises(ValueError, match="ratio"):
            gf.image.decode_and_crop_jpeg(b"", [0, 0, 1, 1], ratio=2)
        with pytest.raises(TypeError, match="output_type"):
            gf.image.extract_jpeg_shape(b"", output_type=gf.float32)


def test_is_jpeg_is_tfs_substr_and_equal():
    with gf.Graph().as_default() as g:
        jpeg = gf.image.is_jpeg(gf.constant(b"\xff\xd8\xff\xe0rest"))
        png = gf.image.is_jpeg(gf.constant(b"\x89PNG"), name="png_check")
        assert [(op.name, op.type) for op in g.get_operations()][1:6] == [
            ("is_jpeg/Substr/pos", "Const"), ("is_jpeg/Substr/len", "Const"),
            ("is_jpeg/Substr", "Substr"), ("is_jpeg/Equal/y", "Const"),
            ("is_jpeg/Equal", "Equal")]
        assert png.name == "png_check/Equal:0" and jpeg.shape.as_list() == []
        with gf.Session() as sess:
            assert sess.run([jpeg, png]) == [True, False]
