"""Shared helpers of the tf.data tests: TF fixture cases and a JSON form of results."""
from __future__ import annotations

import pathlib
import sys

import numpy as np

import gradflow as gf

FIXTURE_DIR = pathlib.Path(__file__).resolve().parent.parent / "fixtures" / "tf"
sys.path.insert(0, str(FIXTURE_DIR))
from data_cases import CASES  # noqa: E402

__all__ = ["CASES", "FIXTURE_DIR", "jsonable", "drain"]


def jsonable(value):
    """A fetched value in the JSON form ``make_data.py`` records TF's values in."""
    if isinstance(value, dict):
        return {k: jsonable(v) for k, v in value.items()}
    if isinstance(value, gf.SparseTensorValue):
        return {"indices": np.asarray(value.indices).tolist(), "values": jsonable(value.values),
                "dense_shape": np.asarray(value.dense_shape).tolist()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if isinstance(value, bytes):
        return value.decode("latin-1")
    if isinstance(value, np.ndarray):
        if value.dtype == object:
            return jsonable(value.tolist())
        return {"dtype": value.dtype.name, "shape": list(value.shape), "value": value.tolist()}
    if isinstance(value, np.generic):
        return jsonable(np.asarray(value))
    return value


def drain(sess, element) -> list:
    """Runs ``element`` until OutOfRangeError; the values in order."""
    values = []
    while True:
        try:
            values.append(sess.run(element))
        except gf.errors.OutOfRangeError:
            return values
