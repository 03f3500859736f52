"""Shared benchmark plumbing: loading the peer libraries, interleaved timing, tables.

Every benchmark measures gradflow and, when they are importable in the same
interpreter, TensorFlow 2.x in TF1 graph mode, JAX and PyTorch on the same work. Peers
are optional: a missing one shows as "-" in the tables.
"""
from __future__ import annotations

import gc
import importlib
import os
import statistics
import sys
import time
import warnings
from pathlib import Path
from typing import Callable, Optional, Sequence

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")  # TensorFlow: no start-up chatter
os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")  # tf.compat.v1.layers and rnn_cell (tf-keras)
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # gradflow from this tree

PEERS = ("tensorflow", "jax", "torch")
LIBRARIES = ("gradflow",) + PEERS

_loaded: dict = {}


def load(library: str):
    """The module of ``library`` ready for benchmarking, or None when it is not installed.

    TensorFlow comes back as ``tf.compat.v1`` with v2 behaviour off (TF1 graph mode).
    The peers are imported together on first use, PyTorch's compiler stack first: it
    bundles an LLVM that aborts the process when loaded after TensorFlow's or JAX's.
    """
    if library not in _loaded:
        for name in ("gradflow",) if library == "gradflow" else ("torch", "tensorflow", "jax"):
            _loaded[name] = _import(name)
    return _loaded[library]


def _import(library: str):
    if library == "gradflow":
        return importlib.import_module("gradflow")
    try:
        if library == "tensorflow":
            tf = importlib.import_module("tensorflow.compat.v1")
            tf.get_logger().setLevel("ERROR")
            tf.disable_v2_behavior()
            return tf
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # deprecation notices printed at import
            module = importlib.import_module(library)
        if library == "torch":
            importlib.import_module("torch._dynamo")  # see load()
            module.set_num_threads(os.cpu_count() or 1)
    except ImportError:
        return None
    return module


def available(libraries: Sequence[str] = LIBRARIES) -> list[str]:
    return [name for name in libraries if load(name) is not None]


SETTLE_S = 0.05


def time_interleaved(candidates: dict[str, Callable[[], object]], repeats: int,
                     min_sample_s: float = 0.005, settle_s: float = SETTLE_S) -> dict[str, float]:
    """Median seconds per call of each candidate, measured in the same rounds.

    Each round times every candidate once (a sample loops a call enough times to last
    ``min_sample_s``), so load from other processes hits all candidates alike. Before
    each sample the process idles ``settle_s`` and makes one untimed call: the thread
    pools of the library timed before (which spin a while after their work) must not
    be charged to the next one.
    """
    loops = {name: _calibrate(fn, min_sample_s) for name, fn in candidates.items()}
    samples: dict[str, list[float]] = {name: [] for name in candidates}
    for _ in range(repeats):
        for name, fn in candidates.items():
            time.sleep(settle_s)
            fn()
            samples[name].append(_sample(fn, loops[name]))
    return {name: statistics.median(values) for name, values in samples.items()}


def _calibrate(fn: Callable[[], object], min_sample_s: float) -> int:
    fn()  # warm up: compile plans, jit, fill caches
    elapsed = _sample(fn, 1)
    return max(1, int(min_sample_s / max(elapsed, 1e-9)))


def _sample(fn: Callable[[], object], loops: int) -> float:
    gc_was_enabled = gc.isenabled()
    gc.disable()  # a collection triggered by one library would be charged to another
    try:
        start = time.perf_counter()
        for _ in range(loops):
            fn()
        return (time.perf_counter() - start) / loops
    finally:
        if gc_was_enabled:
            gc.enable()


def timed(fn: Callable[[], object]) -> tuple[float, object]:
    """(seconds, result) of one call."""
    start = time.perf_counter()
    result = fn()
    return time.perf_counter() - start, result


def best_peer(times: dict[str, Optional[float]]) -> tuple[Optional[str], Optional[float]]:
    """The fastest peer that was measured, and its time."""
    measured = [(t, name) for name, t in times.items() if name in PEERS and t is not None]
    if not measured:
        return None, None
    t, name = min(measured)
    return name, t


def peer_cells(times: dict) -> list:
    """gradflow's and each peer's time in ms, the best peer, and gradflow's ratio to it."""
    peer, peer_s = best_peer(times)
    gf_s = times["gradflow"]
    return [ms(gf_s), *(ms(times.get(p)) for p in PEERS), peer, ratio_text(gf_s, peer_s),
            verdict(None if peer_s is None else gf_s <= peer_s)]


PEER_COLUMNS = ["gradflow", *PEERS, "best peer", "gf/best", "<=1x"]


def ratio_text(value: Optional[float], reference: Optional[float]) -> str:
    if value is None or not reference:
        return "-"
    return f"{value / reference:.2f}x"


def verdict(met: Optional[bool]) -> str:
    return "-" if met is None else ("met" if met else "NOT met")


class Table:
    """A titled table printed as text, or as Markdown for benchmarks/README.md."""

    def __init__(self, title: str, columns: Sequence[str], note: str = ""):
        self.title = title
        self.columns = list(columns)
        self.rows: list[list[str]] = []
        self.note = note

    def add(self, *cells) -> None:
        self.rows.append([_cell(c) for c in cells])

    def text(self) -> str:
        widths = [max(len(str(r[i])) for r in [self.columns] + self.rows)
                  for i in range(len(self.columns))]
        lines = [self.title]
        for row in [self.columns] + self.rows:
            lines.append("  ".join(str(c).rjust(w) for c, w in zip(row, widths)))
        if self.note:
            lines.append(self.note)
        return "\n".join(lines)

    def markdown(self) -> str:
        lines = [f"#### {self.title}", "", "| " + " | ".join(self.columns) + " |",
                 "|" + "---|" * len(self.columns)]
        lines += ["| " + " | ".join(row) + " |" for row in self.rows]
        if self.note:
            lines += ["", self.note]
        return "\n".join(lines)


def _cell(value) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.3g}" if abs(value) < 1000 else f"{value:.0f}"
    return str(value)


def ms(seconds: Optional[float]) -> Optional[float]:
    return None if seconds is None else seconds * 1e3


def print_tables(tables: Sequence[Table]) -> None:
    for table in tables:
        print(table.text(), end="\n\n", flush=True)


def machine_summary() -> str:
    """CPU count, library versions and load: the context a results table needs."""
    versions = []
    for name in LIBRARIES:
        module = load(name)
        if module is not None:
            version = getattr(module, "__version__", None) or getattr(module, "VERSION", "?")
            versions.append(f"{name} {version}")
    import numpy
    versions.append(f"numpy {numpy.__version__}")
    load_avg = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    return (f"{os.cpu_count()} CPUs, Python {sys.version.split()[0]}, "
            f"{', '.join(versions)}; load average {load_avg:.1f} at start")
