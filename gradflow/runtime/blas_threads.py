"""Fewer BLAS threads while other processes keep the CPUs busy.

OpenBLAS splits every large product over all cores and waits for the slowest thread.
When another process holds a core, that thread gets a slice of it now and then and a
product takes many times longer than on one thread (measured: 1.4 ms on one thread,
24 ms on two, for a 128x784x512 float32 product with one core busy elsewhere). While
plans run, gradflow therefore asks OpenBLAS for as many threads as there are cores
the rest of the machine leaves idle, measured from ``/proc/stat`` at most every
``SAMPLE_S`` seconds, and gives the previous setting back afterwards.

Small products gain little from a second thread and lose much when it waits for a
core (a 32x256x512 product: 0.1 ms on one thread, 3.7 ms on two under load), and a
loop body runs its plan thousands of times: a plan whose products are all small
(``plan_threads``, below ``SMALL_PRODUCT`` multiply-adds, as in an RNN cell) runs
on one thread whatever the load.

Only NumPy's own OpenBLAS on Linux is steered; elsewhere this module does nothing.
OpenBLAS may round a product differently with another thread count, so results can
differ in the last bits from one run to the next under changing load; set
``GRADFLOW_BLAS_THREADS=fixed`` for runs that must repeat bit for bit, or call
``set_adaptive(False)``.
"""
from __future__ import annotations

import ctypes
import os
import re
import threading
import time
from typing import Optional

import numpy as np

__all__ = ["enter", "leave", "set_adaptive", "plan_threads", "SAMPLE_S", "SMALL_PRODUCT"]

SAMPLE_S = 0.2
# Products of fewer multiply-adds than this run on one thread (a 128x784x512 one,
# 51M, still gains from two on an idle machine; a 32x256x512 one, 4M, does not).
SMALL_PRODUCT = 1 << 24
_PRODUCTS = frozenset({"MatMul", "BatchMatMul", "BatchMatMulV2", "BatchMatMulV3"})
# Other ops that may call BLAS on sizes not told here: their plans keep the adaptive count.
_OTHER_BLAS_PREFIXES = ("Conv", "DepthwiseConv", "Einsum", "Matrix", "Cholesky", "Qr",
                        "Svd", "SelfAdjointEig", "Lu", "Fused")
_OPENBLAS_FILES = re.compile(r"(/\S*openblas\S*\.so[\w.]*)")
_SETTERS = ("scipy_openblas_set_num_threads64_", "scipy_openblas_set_num_threads",
            "openblas_set_num_threads64_", "openblas_set_num_threads")


class _OpenBlas:
    """``openblas_{get,set}_num_threads`` of the OpenBLAS that NumPy loaded."""

    def __init__(self, library: ctypes.CDLL, setter: str):
        self._set = getattr(library, setter)
        self._set.argtypes = [ctypes.c_int]
        self._get = getattr(library, setter.replace("set_num", "get_num"))
        self._get.restype = ctypes.c_int
        self.default = self._get()

    def get(self) -> int:
        return self._get()

    def set(self, threads: int) -> None:
        self._set(threads)


def _find_openblas() -> Optional[_OpenBlas]:
    """The OpenBLAS NumPy loaded (its wheels bundle one in ``numpy.libs``), if any."""
    try:
        with open("/proc/self/maps") as maps:
            paths = set(_OPENBLAS_FILES.findall(maps.read()))
    except OSError:
        return None
    numpy_dir = os.path.dirname(np.__file__)
    paths = sorted(paths, key=lambda path: (not path.startswith(numpy_dir), path))
    for path in paths:
        try:
            library = ctypes.CDLL(path)
        except OSError:
            continue
        for setter in _SETTERS:
            if hasattr(library, setter) and hasattr(library, setter.replace("set_num", "get_num")):
                return _OpenBlas(library, setter)
    return None


class _Advisor:
    """How many cores other processes leave idle, from CPU time counters."""

    def __init__(self, cores: int):
        self.cores = cores
        self.threads = cores
        self._lock = threading.Lock()
        self._last = self._sample()

    @staticmethod
    def _sample() -> Optional[tuple]:
        """(wall clock, seconds of CPU the machine was busy, seconds this process used)."""
        try:
            with open("/proc/stat") as stat:
                fields = [int(v) for v in stat.readline().split()[1:]]
        except (OSError, ValueError):
            return None
        idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle + iowait
        busy = (sum(fields[:8]) - idle) / _CLOCK_TICKS  # steal counts: not ours to use
        return time.monotonic(), busy, time.process_time()

    def advise(self) -> int:
        last = self._last
        if last is None or time.monotonic() - last[0] < SAMPLE_S or \
                not self._lock.acquire(blocking=False):
            return self.threads
        try:
            now = self._sample()
            if now is not None:
                elapsed = now[0] - last[0]
                others = max(0.0, (now[1] - last[1]) - (now[2] - last[2])) / elapsed
                self.threads = max(1, min(self.cores, round(self.cores - others)))
                self._last = now
        finally:
            self._lock.release()
        return self.threads


_CLOCK_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
# GRADFLOW_BLAS_THREADS=fixed leaves NumPy's setting alone; so does differential
# testing (GRADFLOW_VERIFY_PLANS), which compares plans whose products must not differ
# by a thread count in between.
_ADAPTIVE = os.environ.get("GRADFLOW_BLAS_THREADS", "auto") == "auto" and \
    os.environ.get("GRADFLOW_VERIFY_PLANS", "") in ("", "0")
_openblas = _find_openblas() if _ADAPTIVE else None
_advisor = _Advisor(_openblas.default) if _openblas is not None and _openblas.default > 1 \
    else None


def set_adaptive(enabled: bool) -> None:
    """Turns the adaptation on or off (off: NumPy's thread setting is left alone)."""
    global _enabled
    _enabled = bool(enabled)


_enabled = True


def plan_threads(ops) -> Optional[int]:
    """1 for ops whose products are all small (by their static shapes), else None (the
    count adapts to the load). Ops without a product keep whatever their caller set."""
    small = None
    for op in ops:
        kind = op._type
        if kind.startswith(_OTHER_BLAS_PREFIXES):
            return None
        if kind not in _PRODUCTS:
            continue
        macs = _multiply_adds(op)
        if macs is None or macs >= SMALL_PRODUCT:
            return None
        small = 1
    return small


def _multiply_adds(op) -> Optional[int]:
    """The multiply-adds of a (batched) matrix product with static shapes, else None."""
    a, out = op._inputs[0].shape.as_tuple(), op._outputs[0].shape.as_tuple()
    if a is None or out is None or len(a) < 2 or None in a or None in out:
        return None
    if op._type == "MatMul":
        inner = a[0] if op._attrs.get("transpose_a") else a[1]
    else:
        inner = a[-2] if op._attrs.get("adj_x") else a[-1]
    return int(np.prod(out, dtype=np.int64)) * inner


def enter(threads: Optional[int] = None) -> int:
    """Sets the BLAS threads for a plan run (``threads``: the plan's own choice, else as
    the load allows); returns what ``leave`` must restore (0: none)."""
    if _openblas is None or not _enabled:
        return 0
    if threads is None:
        if _advisor is None:
            return 0
        threads = _advisor.advise()
    current = _openblas.get()
    if threads == current:
        return 0
    _openblas.set(threads)
    return current


def leave(previous: int) -> None:
    if previous:
        _openblas.set(previous)
