"""``decode_image`` of animated GIFs (``expand_animations``) and ``decode_jpeg``'s
arguments, as TF 2.21 treats them (TF's results for this GIF: frames of 10 then 200)."""
from __future__ import annotations

import io

import numpy as np
import pytest

import gradflow as gf

Image = pytest.importorskip("PIL.Image")


def _gif(levels) -> bytes:
    frames = [Image.fromarray(np.full((4, 5, 3), level, np.uint8)) for level in levels]
    buffer = io.BytesIO()
    frames[0].save(buffer, format="GIF", save_all=True, append_images=frames[1:])
    return buffer.getvalue()


def test_animated_gif_frames_are_expanded_unless_asked_not_to():
    gif = _gif([10, 200])
    with gf.Graph().as_default():
        every = gf.image.decode_image(gif)
        first = gf.image.decode_image(gif, expand_animations=False)
        assert every.shape.ndims is None and first.shape.as_list() == [None, None, None]
        with gf.Session() as sess:
            frames, still = sess.run([every, first])
    assert frames.shape == (2, 4, 5, 3) and still.shape == (4, 5, 3)
    np.testing.assert_array_equal(frames[:, 0, 0, 0], [10, 200])
    np.testing.assert_array_equal(still, frames[0])


def test_decode_jpeg_arguments_it_cannot_honour_are_refused():
    graph = gf.Graph()
    with graph.as_default():
        with pytest.raises(ValueError, match="fancy_upscaling"):
            gf.image.decode_jpeg(b"", fancy_upscaling=False)
        with pytest.raises(ValueError, match="dct_method"):
            gf.image.decode_jpeg(b"", dct_method="FASTEST")
        assert graph.get_operations() == []
        gf.image.decode_jpeg(b"", dct_method="INTEGER_FAST")  # a hint, as in TF
