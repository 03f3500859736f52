"""Real TF1 programs run unchanged under gradflow give TF 2.21's numbers and names.

The programs live in ``tests/fixtures/tf/tf1_program_cases.py`` and take the ``tf``
module as an argument; ``make_programs.py`` recorded what TensorFlow (``tf.compat.v1``,
graph mode) returned for each. Here the same code runs with ``gradflow.compat.v1`` as
``tf`` and the results must match: floats to float32 training tolerance, everything else
(names, shapes, file listings, collection contents) exactly.

File listings are compared with each checkpoint's files (``.index``, ``.data-*``,
``.meta``) folded into its prefix, so a listing says which checkpoints exist.
"""
import math
import pathlib
import sys

import pytest

import gradflow
import gradflow.compat.v1 as tf
from tf_fixtures import load_json

sys.path.insert(0, str(pathlib.Path(__file__).parents[1] / "fixtures" / "tf"))
import tf1_program_cases  # noqa: E402

RECORDED = load_json("programs")
_CHECKPOINT_SUFFIXES = (".npz", ".data-00000-of-00001", ".index", ".meta")


def checkpoint_prefixes(listing: list) -> list:
    """A directory listing with each checkpoint's files folded into its prefix."""
    folded = set()
    for name in listing:
        for suffix in _CHECKPOINT_SUFFIXES:
            if name.endswith(suffix):
                name = name[:-len(suffix)]
                break
        folded.add(name)
    return sorted(folded)


def assert_matches(got, want, where: str = "") -> None:
    """``got`` equals the recorded ``want``: floats within float32 training tolerance."""
    if isinstance(want, float) and isinstance(got, (int, float)) and not isinstance(got, bool):
        assert math.isclose(got, want, rel_tol=2e-3, abs_tol=2e-5), f"{where}: {got} != {want}"
    elif isinstance(want, list):
        assert isinstance(got, (list, tuple)), f"{where}: {got!r} is not a list"
        assert len(got) == len(want), f"{where}: {got!r} != {want!r}"
        for i, (g, w) in enumerate(zip(got, want, strict=True)):
            assert_matches(g, w, f"{where}[{i}]")
    elif isinstance(want, dict):
        assert sorted(got) == sorted(want), f"{where}: keys {sorted(got)} != {sorted(want)}"
        for key in want:
            assert_matches(got[key], want[key], f"{where}.{key}")
    else:
        assert got == want and type(got) is type(want), f"{where}: {got!r} != {want!r}"


@pytest.mark.parametrize("name", sorted(tf1_program_cases.PROGRAMS))
def test_program_matches_tensorflow(name, tmp_path):
    with gradflow.Graph().as_default():
        got = tf1_program_cases.PROGRAMS[name](tf, str(tmp_path))
    want = dict(RECORDED[name])
    if "files" in want:
        got["files"] = checkpoint_prefixes(got["files"])
        want["files"] = checkpoint_prefixes(want["files"])
    assert_matches(got, want, name)
