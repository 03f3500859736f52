"""Gathers, scatters, segments, scans, linalg and special functions under the XLA backend
give the NumPy kernels' values and gradients, and keep the kernels' errors."""
from __future__ import annotations

import numpy as np
import pytest

import gradflow as gf
from xla_helpers import assert_lowered_like_numpy, jit_config

pytest.importorskip("jax")

RNG = np.random.default_rng(11)


def _x(*shape):
    return RNG.standard_normal(shape)


def _spd(n):
    a = RNG.standard_normal((n, n))
    return a @ a.T + n * np.eye(n)


IDS = np.array([0, 2, 2, 1], np.int32)
SORTED = np.array([0, 0, 1, 3], np.int32)

# (id, build(*placeholders) -> tensor, inputs, op types that must be compiled)
CASES = [
    ("gather_nd", lambda x: gf.gather_nd(x * 2.0, [[1, 0], [2, 3]]), [_x(3, 4)], {"GatherNd"}),
    ("scatter_nd", lambda u: gf.scatter_nd([[1], [3], [1]], u * 1.0, [5, 2]), [_x(3, 2)],
     {"ScatterNd"}),
    ("unsorted_segments", lambda x: gf.unsorted_segment_sum(x * 1.0, IDS, 4)
     + gf.unsorted_segment_max(x * 1.0, IDS, 4) * 0.5
     + gf.unsorted_segment_prod(x * 1.0, IDS, 4), [_x(4, 3)],
     {"UnsortedSegmentSum", "UnsortedSegmentMax", "UnsortedSegmentProd"}),
    ("sorted_segments", lambda x: gf.segment_sum(x * 1.0, SORTED)
     + gf.segment_mean(x * 1.0, SORTED) + gf.segment_min(x * 1.0, SORTED), [_x(4, 3)],
     {"SegmentSum", "SegmentMean", "SegmentMin"}),
    ("sparse_segments", lambda x: gf.sparse_segment_sum(x * 1.0, [0, 2, 1], [0, 0, 1])
     + gf.sparse_segment_sqrt_n(x * 1.0, [3, 2, 1], [0, 1, 1]), [_x(4, 3)],
     {"SparseSegmentSum", "SparseSegmentSqrtN"}),
    ("cumulative", lambda x: gf.cumsum(x * 1.0, axis=1, exclusive=True)
     + gf.cumprod(x * 1.0, axis=0, reverse=True), [_x(3, 4)], {"Cumsum", "Cumprod"}),
    ("split_pad", lambda x: gf.add_n(gf.split(x * 1.0, [1, 2, 1], axis=1)[:1] * 2)
     + gf.pad(x, [[0, 0], [0, 0]], constant_values=1.5)[:, :1], [_x(3, 4)], {"SplitV"}),
    ("inverse_det", lambda a: gf.linalg.inv(a * 1.0) * gf.linalg.det(a * 1.0),
     [_spd(3)], {"MatrixInverse", "MatrixDeterminant"}),
    ("cholesky_solve", lambda a, b: gf.linalg.solve(a * 1.0, b * 1.0)
     + gf.linalg.cholesky(a * 1.0)[:, :2], [_spd(3), _x(3, 2)], {"MatrixSolve", "Cholesky"}),
    ("triangular_solve", lambda a, b: gf.linalg.triangular_solve(a + 3.0, b * 1.0,
                                                                 lower=False, adjoint=True),
     [_spd(3), _x(3, 2)], {"MatrixTriangularSolve"}),
    ("slogdet_band", lambda a: gf.linalg.slogdet(a * 1.0)[1] * gf.linalg.band_part(a, 1, 0),
     [_spd(3)], {"LogMatrixDeterminant", "MatrixBandPart"}),
    ("eigvalsh", lambda a: gf.linalg.eigvalsh(a * 1.0), [_spd(4)], {"SelfAdjointEigV2"}),
    ("special", lambda x: gf.math.erf(x) + gf.math.lgamma(gf.abs(x) + 1.0)
     + gf.math.xlogy(x, gf.abs(x) + 1.0) + gf.math.divide_no_nan(x, x - x[0:1, 0:1]),
     [_x(3, 4)], {"Erf", "Lgamma", "Xlogy", "DivNoNan"}),
    ("sigmoid_xent", lambda a, b: gf.nn.sigmoid_cross_entropy_with_logits(
        labels=gf.sigmoid(b), logits=a * 1.0), [_x(3, 4), _x(3, 4)],
     {"SigmoidCrossEntropyWithLogits"}),
]


@pytest.mark.parametrize("build,inputs,lowered", [c[1:] for c in CASES],
                         ids=[c[0] for c in CASES])
def test_more_lowerings_match_numpy(build, inputs, lowered):
    assert_lowered_like_numpy(build, inputs, lowered, tolerance=1e-9)


@pytest.mark.parametrize("build,feed,message", [
    (lambda i: gf.gather_nd(gf.constant(np.ones((3, 2))) * 2.0, i + 0), [[5, 0]], "5"),
    (lambda i: gf.unsorted_segment_sum(gf.constant(np.ones((2, 2))) * 2.0, i + 0, 3), [0, 7],
     "out of range"),
], ids=["gather_nd", "unsorted_segment"])
def test_bad_indices_raise_the_kernels_error(build, feed, message):
    graph = gf.Graph()
    with graph.as_default():
        i = gf.placeholder(gf.int32, np.shape(feed))
        y = build(i)
        with gf.Session(graph=graph, config=jit_config()) as sess:
            with pytest.raises(gf.errors.InvalidArgumentError, match=message):
                sess.run(y, {i: feed})


def test_singular_inverse_raises_as_on_numpy():
    graph = gf.Graph()
    with graph.as_default():
        a = gf.placeholder(gf.float64, [2, 2])
        y = gf.linalg.inv(a * 1.0)
        for config in (None, jit_config()):
            with gf.Session(graph=graph, config=config) as sess:
                with pytest.raises(gf.errors.InvalidArgumentError, match="not invertible"):
                    sess.run(y, {a: np.ones((2, 2))})
