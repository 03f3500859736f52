"""Parity fixtures recorded from TensorFlow 2.21 (``tf.compat.v1``, graph mode).

Each ``tests/fixtures/tf/make_<area>.py`` script runs under TensorFlow and writes
``tests/fixtures/tf/<area>.json`` (names, shapes, messages, small values) and, where
arrays are large, ``<area>.npz``. The tests read them without TensorFlow. Regenerate
with ``TF_USE_LEGACY_KERAS=1 python tests/fixtures/tf/make_<area>.py`` in an
environment that has ``tensorflow-cpu`` and ``tf-keras``.
"""
from __future__ import annotations

import json
import pathlib

import numpy as np

FIXTURES = pathlib.Path(__file__).parent / "fixtures" / "tf"


def load_json(area: str) -> dict:
    """The recorded JSON fixture of ``area``."""
    return json.loads((FIXTURES / f"{area}.json").read_text())


def load_arrays(area: str) -> dict[str, np.ndarray]:
    """The recorded arrays of ``area``, by key."""
    with np.load(FIXTURES / f"{area}.npz", allow_pickle=False) as data:
        return {key: data[key] for key in data.files}
