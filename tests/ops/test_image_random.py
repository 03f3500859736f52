"""Random tf.image ops: same-seed determinism (TF1's seed rules), fresh draws per run,
and the distribution of what they draw (TF's streams differ, so statistics, not values)."""
import pathlib
import sys

import numpy as np
import pytest

import gradflow as gf
from tf_fixtures import load_json

sys.path.insert(0, str(pathlib.Path(__file__).parents[1] / "fixtures" / "tf"))
from image_cases import RANDOM, SAMPLER_DRAWS, SAMPLERS, inputs, tensors  # noqa: E402

IMAGE = np.random.default_rng(3).random((5, 6, 3)).astype(np.float32)
BATCH = np.random.default_rng(4).random((64, 3, 4, 1)).astype(np.float32)

RANDOM_OPS = {
    "flip_left_right": lambda x, seed: gf.image.random_flip_left_right(x, seed=seed),
    "flip_up_down": lambda x, seed: gf.image.random_flip_up_down(x, seed=seed),
    "brightness": lambda x, seed: gf.image.random_brightness(x, 0.3, seed=seed),
    "contrast": lambda x, seed: gf.image.random_contrast(x, 0.2, 1.8, seed=seed),
    "saturation": lambda x, seed: gf.image.random_saturation(x, 0.2, 1.8, seed=seed),
    "hue": lambda x, seed: gf.image.random_hue(x, 0.4, seed=seed),
    "crop": lambda x, seed: gf.image.random_crop(x, [3, 4, 3], seed=seed),
}


def _runs(build, graph_seed, op_seed, count=8):
    graph = gf.Graph()
    with graph.as_default():
        if graph_seed is not None:
            gf.set_random_seed(graph_seed)
        y = build(gf.constant(IMAGE), op_seed)
        with gf.Session(graph=graph) as session:
            return [session.run(y) for _ in range(count)]


@pytest.mark.parametrize("key", sorted(RANDOM_OPS))
def test_same_seeds_replay_and_runs_draw_afresh(key):
    first = _runs(RANDOM_OPS[key], 1, 7)
    again = _runs(RANDOM_OPS[key], 1, 7)
    for a, b in zip(first, again, strict=True):
        np.testing.assert_array_equal(a, b)
    assert any(not np.array_equal(first[0], later) for later in first[1:])
    # the graph seed alone decides the stream too (the op seed comes from the graph)
    graph_only = _runs(RANDOM_OPS[key], 5, None)
    np.testing.assert_array_equal(graph_only[0], _runs(RANDOM_OPS[key], 5, None)[0])


def test_random_flip_flips_half_the_batch_images_independently():
    with gf.Graph().as_default():
        gf.set_random_seed(11)
        y = gf.image.random_flip_left_right(gf.constant(BATCH))
        with gf.Session() as session:
            out = session.run(y)
    flipped = np.all(out == BATCH[:, :, ::-1], axis=(1, 2, 3))
    kept = np.all(out == BATCH, axis=(1, 2, 3))
    assert np.all(flipped | kept)
    assert 16 < flipped.sum() < 48


def test_random_brightness_deltas_are_uniform_in_range():
    with gf.Graph().as_default():
        gf.set_random_seed(2)
        y = gf.image.random_brightness(gf.constant(IMAGE), 0.25)
        with gf.Session() as session:
            deltas = np.array([(session.run(y) - IMAGE).mean() for _ in range(400)])
    assert deltas.min() >= -0.25 - 1e-6 and deltas.max() <= 0.25 + 1e-6
    assert abs(deltas.mean()) < 0.03
    assert abs(deltas.std() - 0.5 / np.sqrt(12)) < 0.02


def test_random_crop_offsets_cover_every_position():
    with gf.Graph().as_default():
        gf.set_random_seed(9)
        y = gf.image.random_crop(gf.constant(IMAGE), [4, 4, 3])
        with gf.Session() as session:
            corners = {tuple(np.argwhere(IMAGE == session.run(y)[0, 0, 0])[0][:2])
                       for _ in range(200)}
    assert corners == {(r, c) for r in range(2) for c in range(3)}


def test_sample_distorted_bounding_box_respects_its_constraints():
    boxes = np.array([[[0.2, 0.3, 0.6, 0.8]]], np.float32)
    with gf.Graph().as_default():
        begin, size, box = gf.image.sample_distorted_bounding_box(
            [40, 50, 3], boxes, seed=3, min_object_covered=0.5, area_range=(0.1, 0.9),
            aspect_ratio_range=(0.5, 2.0))
        assert begin.shape.as_list() == [3] and box.shape.as_list() == [1, 1, 4]
        with gf.Session() as session:
            draws = [session.run([begin, size, box]) for _ in range(60)]
    for (y, x, _), (h, w, depth), crop in draws:
        assert depth == -1 and 0 <= y and 0 <= x and y + h <= 40 and x + w <= 50
        assert 0.1 * 2000 <= h * w <= 0.9 * 2000
        np.testing.assert_allclose(crop[0, 0], [y / 40, x / 50, (y + h) / 40, (x + w) / 50],
                                   rtol=1e-6)
        inter = max(min(24, y + h) - max(8, y), 0) * max(min(40, x + w) - max(15, x), 0)
        assert inter / (16 * 25) >= 0.5
    assert len({tuple(d[0]) for d in draws}) > 10


def test_sample_distorted_bounding_box_needs_boxes_unless_told():
    with gf.Graph().as_default():
        empty = np.zeros((1, 0, 4), np.float32)
        begin, _, _ = gf.image.sample_distorted_bounding_box([8, 8, 3], empty, seed=1)
        whole, size, _ = gf.image.sample_distorted_bounding_box(
            [8, 8, 3], empty, seed=1, use_image_if_no_bounding_boxes=True, area_range=(1, 1),
            aspect_ratio_range=(1, 1))
        with gf.Session() as session:
            with pytest.raises(gf.errors.InvalidArgumentError, match="No bounding boxes"):
                session.run(begin)
            assert list(session.run(whole)) == [0, 0, 0]
            assert list(session.run(size)) == [8, 8, -1]


@pytest.mark.parametrize("uniform", [True, False])
def test_extract_glimpse_fills_outside_pixels_with_the_channels_noise(uniform):
    images = (np.random.default_rng(8).random((1, 6, 6, 2)) * [1, 4] + [0, 2]).astype(np.float32)
    with gf.Graph().as_default():
        y = gf.image.extract_glimpse(images, [40, 40], [[0.0, 0.0]], uniform_noise=uniform)
        assert y.shape.as_list() == [1, 40, 40, 2]
        with gf.Session() as session:
            first, second = session.run(y), session.run(y)
    assert not np.array_equal(first, second)  # fresh noise on every run
    np.testing.assert_array_equal(first[0, 17:23, 17:23], images[0])
    outside = np.delete(first[0].reshape(-1, 2), [r * 40 + c for r in range(17, 23)
                                                   for c in range(17, 23)], axis=0)
    for channel in range(2):
        pixels, noise = images[0, :, :, channel], outside[:, channel]
        if uniform:
            assert pixels.min() <= noise.min() and noise.max() <= pixels.max()
            assert abs(noise.mean() - (pixels.min() + pixels.max()) / 2) < 0.1 * np.ptp(pixels)
        else:
            assert abs(noise.mean() - pixels.mean()) < 0.1 * pixels.std()
            assert abs(noise.std() - pixels.std()) < 0.1 * pixels.std()


def test_random_crop_larger_than_the_value_fails_when_run_as_in_tf():
    with gf.Graph().as_default():
        y = gf.random_crop(gf.constant(IMAGE), [6, 6, 3], seed=1)
        assert y.op.name == "random_crop" and y.shape.as_list() == [6, 6, 3]
        with gf.Session() as session:
            with pytest.raises(gf.errors.InvalidArgumentError,
                               match=r"Need value.shape >= size, got \] \[5 6 3\] \[6 6 3\]"):
                session.run(y)


@pytest.mark.parametrize("key", sorted(SAMPLERS))
def test_sample_distorted_bounding_box_draws_like_tf(key):
    # offsets and sizes of the crops over many runs: mean within 4 standard errors of
    # TF's recorded draws, spread within 10%
    recorded = load_json("image")["samplers"][key]
    with gf.Graph().as_default():
        begin, size, _ = SAMPLERS[key](gf)
        with gf.Session() as session:
            draws = np.array([np.concatenate(session.run([begin, size]))[[0, 1, 3, 4]]
                              for _ in range(1000)], np.float64)
    mean, std = draws.mean(0), draws.std(0)
    tf_mean, tf_std = np.array(recorded["mean"]), np.array(recorded["std"])
    error = np.sqrt(std ** 2 / len(draws) + tf_std ** 2 / SAMPLER_DRAWS)
    assert np.all(np.abs(mean - tf_mean) <= 4 * error), (mean, tf_mean)
    np.testing.assert_allclose(std, tf_std, rtol=0.1)


# gradflow's cond names its result <scope>/cond/If where TF1's makes <scope>/Merge
COND_RESULT = {"random_flip_left_right", "random_flip_up_down"}


@pytest.mark.parametrize("key", sorted(RANDOM))
def test_random_ops_names_shapes_and_dtypes_match_tf(key):
    recorded = load_json("image")["random"][key]
    with gf.Graph().as_default():
        y = RANDOM[key](gf, tensors(gf, inputs()))
    assert y.dtype.name == recorded["dtype"]
    assert (y.shape.as_list() if y.shape.ndims is not None else None) == recorded["shape"]
    if key in COND_RESULT:
        assert y.name == recorded["name"].replace("/Merge:0", "/cond/If:0")
    else:
        assert y.name == recorded["name"]
