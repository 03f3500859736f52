"""Plans of small products run on one BLAS thread (runtime/blas_threads.py)."""
import pytest

import gradflow as gf
from gradflow.runtime import blas_threads, executor


def threads_of(fetch, *feeds):
    return executor.compile_plan(gf.get_default_graph(), [fetch], list(feeds)).blas_threads


def test_small_products_take_one_thread():
    a = gf.placeholder(gf.float32, [32, 256])
    w = gf.placeholder(gf.float32, [256, 512])
    assert threads_of(gf.tanh(gf.matmul(a, w)), a, w) == 1
    x = gf.placeholder(gf.float32, [4, 32, 16])
    y = gf.placeholder(gf.float32, [4, 8, 16])
    assert threads_of(gf.matmul(x, y, adjoint_b=True), x, y) == 1


def test_large_unknown_or_other_blas_work_adapts_to_the_load():
    a = gf.placeholder(gf.float32, [128, 784])
    w = gf.placeholder(gf.float32, [784, 512])
    assert threads_of(gf.matmul(a, w), a, w) is None
    x = gf.placeholder(gf.float32, [None, 256])
    v = gf.placeholder(gf.float32, [256, 8])
    assert threads_of(gf.matmul(x, v), x, v) is None
    image = gf.placeholder(gf.float32, [1, 8, 8, 3])
    conv = gf.nn.conv2d(image, gf.ones([3, 3, 3, 4]), [1, 1, 1, 1], "SAME")
    m = gf.placeholder(gf.float32, [2, 2])
    assert threads_of(gf.reduce_sum(conv) + gf.reduce_sum(gf.matmul(m, m)), image, m) is None
    assert threads_of(gf.tanh(m), m) is None  # no product: whatever the caller set


@pytest.mark.skipif(blas_threads._openblas is None, reason="NumPy's OpenBLAS not found")
def test_enter_sets_and_leave_restores_the_count():
    openblas = blas_threads._openblas
    before = openblas.get()
    previous = blas_threads.enter(1)
    try:
        assert openblas.get() == 1
    finally:
        blas_threads.leave(previous)
    assert openblas.get() == before
