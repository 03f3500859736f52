"""Whole test suites rerun with every graph compiled by the XLA backend.

``GRADFLOW_XLA=1`` makes every session compile its graphs as ``global_jit_level=ON_1``
would (``runtime/clusters.py``), so a suite written for the NumPy backend checks the
compiled one against the same expectations: op values and gradients, TF parity
fixtures, training programs. Each suite runs in a fresh interpreter. Slow: run them
with ``python -m pytest -m xla tests/backends/test_xla_suites.py`` (needs JAX).
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("jax")

ROOT = Path(__file__).resolve().parents[2]
# the suites known to pass compiled (docs/xla.md lists them)
SUITES = ["tests/ops", "tests/autodiff", "tests/nn", "tests/layers", "tests/train",
          "tests/programs", "tests/variables", "tests/losses"]


@pytest.mark.xla
@pytest.mark.slow
@pytest.mark.parametrize("suite", SUITES)
def test_suite_passes_with_every_graph_compiled(suite):
    env = dict(os.environ, GRADFLOW_XLA="1")
    done = subprocess.run([sys.executable, "-m", "pytest", suite, "-x", "-q",
                           "-p", "no:cacheprovider"], cwd=ROOT, env=env,
                          capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
