"""``gradflow cluster`` runs a between-graph program (a process per task) whose training
equals one process's."""
import os
import subprocess
import sys

import numpy as np
import pytest

pytest.importorskip("ray")

from cluster_models import data, single_process  # noqa: E402
from gradflow.cli import main  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))


@pytest.mark.slow
def test_between_graph_program_equals_one_process(tmp_path):
    out = tmp_path / "params.npz"
    env = dict(os.environ, GRADFLOW_RAY_NUM_CPUS="2")
    env.pop("RAY_ADDRESS", None)
    done = subprocess.run(
        [sys.executable, "-m", "gradflow", "cluster", "--ps", "1", "--workers", "2",
         os.path.join(HERE, "cluster_program.py"), "--steps", "6", "--out", str(out)],
        env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    with np.load(out) as saved:
        got = [saved[f"arr_{i}"] for i in range(3)]
    expected = single_process(6, data(6, 1), workers=1)
    for g, e in zip(got, expected, strict=True):
        np.testing.assert_allclose(g, e, rtol=1e-6, atol=1e-7)


def test_cluster_command_checks_its_arguments(tmp_path, capsys):
    assert main(["cluster", "--ps", "1", "--workers", "1", str(tmp_path / "none.py")]) == 1
    assert "is not a file" in capsys.readouterr().err
