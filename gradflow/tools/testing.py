"""TF1's ``tf.test`` helpers for a program's own tests: ``TestCase`` (sessions on a
fresh graph per test, ``evaluate``, numpy-aware assertions), ``main``, ``get_temp_dir``
and the build queries (gradflow runs on NumPy: no GPU, no CUDA).
"""
from __future__ import annotations

import contextlib
import os
import re
import sys
import tempfile
from typing import Callable, Iterator, Optional

import numpy as np
from absl.testing import absltest

from gradflow.framework import errors
from gradflow.framework.graph import get_default_graph, reset_default_graph
from gradflow.framework.indexed_slices import IndexedSlicesValue
from gradflow.framework.sparse_tensor import SparseTensorValue
from gradflow.runtime.session import Session, get_default_session

__all__ = ["TestCase", "main", "get_temp_dir", "is_gpu_available", "gpu_device_name",
           "is_built_with_cuda", "is_built_with_gpu_support", "is_built_with_rocm"]

_TEMP_DIR: list = []


def get_temp_dir() -> str:
    """A temporary directory for this test process (made once, on first use)."""
    if not _TEMP_DIR:
        base = os.path.basename(sys.argv[0] or "") or "gradflow_test"
        _TEMP_DIR.append(tempfile.mkdtemp(prefix=base))
    return _TEMP_DIR[0]


def main(argv: Optional[list] = None) -> None:
    """Runs the test cases of the ``__main__`` module (absltest's runner, as TF's)."""
    absltest.main(argv=argv)


def is_gpu_available(cuda_only: bool = False, min_cuda_compute_capability=None) -> bool:
    """False: gradflow's kernels run on the CPU (NumPy)."""
    return False


def gpu_device_name() -> str:
    """The GPU device name: empty, as in a TF build without a GPU."""
    return ""


def is_built_with_cuda() -> bool:
    return False


def is_built_with_rocm() -> bool:
    return False


def is_built_with_gpu_support() -> bool:
    return False


def _as_array(value) -> np.ndarray:
    """A fetched value (or a nest leaf) as an array; text as bytes, as TF compares."""
    if isinstance(value, str):
        return np.asarray(value.encode())
    array = np.asarray(value)
    if array.dtype.kind == "U":
        return np.vectorize(lambda s: s.encode(), otypes=[object])(array)
    return array


class TestCase(absltest.TestCase):
    """A test case whose tests each start on a fresh default graph, with TF1's session
    helpers and array assertions."""

    def setUp(self) -> None:
        super().setUp()
        self._cached_session: Optional[Session] = None
        self._cached_graph = None
        reset_default_graph()
        np.random.seed(87654321)

    def tearDown(self) -> None:
        if self._cached_session is not None:
            self._cached_session.close()
            self._cached_session = None
        super().tearDown()

    # ----------------------------------------------------------------- sessions
    def get_temp_dir(self) -> str:
        """A fresh temporary directory for this test."""
        return tempfile.mkdtemp(dir=get_temp_dir())

    @contextlib.contextmanager
    def session(self, graph=None, config=None, use_gpu: bool = True,
                force_gpu: bool = False) -> Iterator[Session]:
        """A new session on ``graph`` (the default graph), the default session inside."""
        self._check_gpu(force_gpu)
        with Session(graph=graph or get_default_graph(), config=config) as sess:
            with sess.as_default():
                yield sess

    @contextlib.contextmanager
    def cached_session(self, graph=None, config=None, use_gpu: bool = True,
                       force_gpu: bool = False) -> Iterator[Session]:
        """One session kept for the whole test (closed in ``tearDown``); a different
        graph makes a new one."""
        self._check_gpu(force_gpu)
        graph = graph or get_default_graph()
        if self._cached_session is None or self._cached_graph is not graph:
            if self._cached_session is not None:
                self._cached_session.close()
            self._cached_session = Session(graph=graph, config=config)
            self._cached_graph = graph
        with self._cached_session.as_default():
            yield self._cached_session

    @contextlib.contextmanager
    def test_session(self, graph=None, config=None, use_gpu: bool = True,
                     force_gpu: bool = False) -> Iterator[Session]:
        """TF1's deprecated name: the cached session for the default graph, else a new
        session on ``graph``."""
        context = self.cached_session if graph is None else self.session
        with context(graph=graph, config=config, use_gpu=use_gpu,
                     force_gpu=force_gpu) as sess:
            yield sess

    def _check_gpu(self, force_gpu: bool) -> None:
        if force_gpu:
            raise ValueError("force_gpu=True: gradflow has no GPU device (ops run on NumPy)")

    def evaluate(self, tensors):
        """The values of ``tensors`` (any nest), run in the default session or the cached
        one."""
        sess = get_default_session()
        if sess is not None:
            return sess.run(tensors)
        with self.cached_session() as cached:
            return cached.run(tensors)

    # --------------------------------------------------------------- assertions
    def _compare(self, a, b, check: Callable, path: str, msg: Optional[str]) -> None:
        if isinstance(a, dict) or isinstance(b, dict):
            self.assertIsInstance(a, dict, f"{path}: {a!r} is not a dict ({msg})")
            self.assertIsInstance(b, dict, f"{path}: {b!r} is not a dict ({msg})")
            self.assertEqual(set(a), set(b), f"{path}: the keys differ ({msg})")
            for key in a:
                self._compare(a[key], b[key], check, f"{path}[{key!r}]", msg)
            return
        if isinstance(a, (SparseTensorValue, IndexedSlicesValue)):
            a = tuple(a)
        if isinstance(b, (SparseTensorValue, IndexedSlicesValue)):
            b = tuple(b)
        nested = (list, tuple)
        if isinstance(a, nested) and isinstance(b, nested) and (
                _is_nest(a) or _is_nest(b)):
            self.assertEqual(len(a), len(b), f"{path}: lengths differ ({msg})")
            for i, (x, y) in enumerate(zip(a, b, strict=True)):
                self._compare(x, y, check, f"{path}[{i}]", msg)
            return
        check(_as_array(a), _as_array(b), path)

    def assertAllClose(self, a, b, rtol: float = 1e-6, atol: float = 1e-6,
                       msg: Optional[str] = None) -> None:
        """``a`` and ``b`` (arrays or nests of them) equal within ``atol + rtol * |b|``."""
        def check(x, y, path):
            self.assertEqual(x.shape, y.shape, f"{path}: shape mismatch {x.shape} vs "
                                               f"{y.shape} ({msg})")
            if x.dtype == object or y.dtype == object:
                np.testing.assert_array_equal(x, y, err_msg=f"{path} {msg or ''}")
                return
            np.testing.assert_allclose(x, y, rtol=rtol, atol=atol, equal_nan=True,
                                       err_msg=f"{path} {msg or ''}")
        self._compare(a, b, check, "", msg)

    def assertAllCloseAccordingToType(self, a, b, rtol: float = 1e-6,
                                      atol: float = 1e-6, float_rtol: float = 1e-6,
                                      float_atol: float = 1e-6, half_rtol: float = 1e-3,
                                      half_atol: float = 1e-3, bfloat16_rtol: float = 1e-2,
                                      bfloat16_atol: float = 1e-2,
                                      msg: Optional[str] = None) -> None:
        """``assertAllClose`` with looser tolerances for float32, float16, bfloat16."""
        kinds = {_as_array(a).dtype, _as_array(b).dtype}
        if np.dtype(np.float32) in kinds:
            rtol, atol = max(rtol, float_rtol), max(atol, float_atol)
        if np.dtype(np.float16) in kinds:
            rtol, atol = max(rtol, half_rtol), max(atol, half_atol)
        if any(kind.name == "bfloat16" for kind in kinds):
            rtol, atol = max(rtol, bfloat16_rtol), max(atol, bfloat16_atol)
        self.assertAllClose(a, b, rtol=rtol, atol=atol, msg=msg)

    def assertAllEqual(self, a, b, msg: Optional[str] = None) -> None:
        """``a`` and ``b`` (arrays or nests of them) of one shape and equal."""
        def check(x, y, path):
            self.assertEqual(x.shape, y.shape, f"{path}: shape mismatch {x.shape} vs "
                                               f"{y.shape} ({msg})")
            np.testing.assert_array_equal(x, y, err_msg=f"{path} {msg or ''}")
        self._compare(a, b, check, "", msg)

    def assertNotAllClose(self, a, b, rtol: float = 1e-6, atol: float = 1e-6,
                          msg: Optional[str] = None) -> None:
        try:
            self.assertAllClose(a, b, rtol=rtol, atol=atol, msg=msg)
        except AssertionError:
            return
        raise AssertionError(msg or "The two values are close at all elements")

    def assertNear(self, f1: float, f2: float, err: float,
                   msg: Optional[str] = None) -> None:
        """``|f1 - f2| <= err``."""
        self.assertTrue(f1 == f2 or abs(f1 - f2) <= err,
                        f"{f1} != {f2} +/- {err}{' (' + msg + ')' if msg else ''}")

    def assertArrayNear(self, farray1, farray2, err: float,
                        msg: Optional[str] = None) -> None:
        """Equal lengths, and each pair within ``err``."""
        self.assertEqual(len(farray1), len(farray2), msg=msg)
        for f1, f2 in zip(farray1, farray2, strict=True):
            self.assertNear(float(f1), float(f2), err, msg=msg)

    def assertAllInRange(self, target, lower_bound, upper_bound,
                         open_lower_bound: bool = False,
                         open_upper_bound: bool = False) -> None:
        values = _as_array(target)
        below = values <= lower_bound if open_lower_bound else values < lower_bound
        above = values >= upper_bound if open_upper_bound else values > upper_bound
        bad = np.flatnonzero(below | above)
        if bad.size:
            raise AssertionError(f"{bad.size} of the {values.size} element(s) are outside "
                                 f"the range [{lower_bound}, {upper_bound}]: "
                                 f"{values.reshape(-1)[bad][:10]}")

    def assertAllGreater(self, a, comparison_target) -> None:
        self.assertGreater(np.min(_as_array(a)), comparison_target)

    def assertAllGreaterEqual(self, a, comparison_target) -> None:
        self.assertGreaterEqual(np.min(_as_array(a)), comparison_target)

    def assertAllLess(self, a, comparison_target) -> None:
        self.assertLess(np.max(_as_array(a)), comparison_target)

    def assertAllLessEqual(self, a, comparison_target) -> None:
        self.assertLessEqual(np.max(_as_array(a)), comparison_target)

    def assertShapeEqual(self, np_array, tf_tensor, msg: Optional[str] = None) -> None:
        """A NumPy array's shape equals a tensor's static shape."""
        self.assertEqual(list(np.shape(np_array)), tf_tensor.shape.as_list(), msg=msg)

    def assertDTypeEqual(self, target, expected_dtype) -> None:
        self.assertEqual(_as_array(target).dtype, np.dtype(expected_dtype))

    @contextlib.contextmanager
    def assertRaisesWithPredicateMatch(self, exception_type,
                                       expected_err_re_or_predicate) -> Iterator[None]:
        """Expects ``exception_type`` whose message matches the regex (or that satisfies
        the predicate)."""
        if callable(expected_err_re_or_predicate):
            predicate = expected_err_re_or_predicate
        else:
            def predicate(error):
                return re.search(expected_err_re_or_predicate, str(error)) is not None
        try:
            yield
        except exception_type as error:
            if not predicate(error):
                raise AssertionError(f"Exception of type {type(error).__name__}: "
                                     f"{error}") from error
            return
        raise AssertionError(f"{exception_type.__name__} not raised")

    def assertRaisesOpError(self, expected_err_re_or_predicate):
        """Expects an ``errors.OpError`` matching the regex (or predicate)."""
        return self.assertRaisesWithPredicateMatch(errors.OpError,
                                                   expected_err_re_or_predicate)


def _is_nest(value) -> bool:
    """Whether a list or tuple holds arrays or nests rather than being one array-like."""
    return any(isinstance(v, (list, tuple, dict, np.ndarray)) and not np.isscalar(v)
               for v in value) and not _rectangular(value)


def _rectangular(value) -> bool:
    try:
        return np.asarray(value).dtype != object
    except ValueError:
        return False
