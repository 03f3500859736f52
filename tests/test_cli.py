"""The gradflow command: demo, graph, help and errors."""
import os
import shutil
import subprocess
import sys

import pytest

import gradflow as gf
from gradflow.cli import main
from gradflow.tools import demo


def test_demo_trains_and_writes_its_pictures(tmp_path, capsys):
    assert main(["demo", "--steps", "20", "--output", tmp_path, "--optimizer", "momentum"]) == 0
    out = capsys.readouterr().out
    assert "with momentum, learning rate 0.1, 20 steps" in out
    assert "[##############################] 20/20 loss " in out
    assert "Test accuracy: " in out
    for name in ("graph.dot", "graph.json", "graph.npz", "loss.svg",
                 os.path.join("checkpoints", "model-20.index")):
        assert (tmp_path / name).is_file(), name
    assert (tmp_path / "graph.dot").read_text().startswith("digraph gradflow {")
    assert "<polyline" in (tmp_path / "loss.svg").read_text()
    if shutil.which("dot"):
        assert (tmp_path / "graph.svg").is_file()
    else:
        assert "graph.dot only" in out


def test_demo_reaches_95_percent(tmp_path, capsys):
    result = demo.run_demo(demo.DemoConfig(steps=600, output=str(tmp_path)))
    assert result.test_accuracy >= 0.95
    assert result.final_loss < 0.5


def test_demo_without_graphviz_says_so(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(demo, "graphviz_available", lambda: False)
    assert main(["demo", "--steps", "3", "--output", tmp_path, "--optimizer", "sgd",
                 "--learning-rate", "0.1", "--seed", "3"]) == 0
    assert "install graphviz" in capsys.readouterr().out
    assert not (tmp_path / "graph.svg").exists()


def test_demo_help_lists_the_options(capsys):
    with pytest.raises(SystemExit) as info:
        main(["demo", "--help"])
    assert info.value.code == 0
    text = capsys.readouterr().out
    for option in ("--steps", "--learning-rate", "--optimizer", "--output DIR", "--seed",
                   "sgd,momentum,adagrad,rmsprop,adam"):
        assert option in text


def test_bad_arguments_exit_with_usage(capsys):
    with pytest.raises(SystemExit) as info:
        main(["demo", "--steps", "0"])
    assert info.value.code == 2
    assert "must be a positive integer" in capsys.readouterr().err
    assert main([]) == 2


def test_graph_command_renders_a_saved_graph(tmp_path, capsys):
    x = gf.placeholder(gf.float32, [2], name="x")
    gf.gradients(gf.reduce_sum(gf.tanh(x)), x)
    gf.tools.save_graph(gf.get_default_graph(), str(tmp_path / "g"))
    assert main(["graph", tmp_path / "g.json", "-o", tmp_path / "g.dot"]) == 0
    assert 'label="gradients/"' in (tmp_path / "g.dot").read_text()
    assert f"Wrote {tmp_path / 'g.dot'}" in capsys.readouterr().out
    if shutil.which("dot"):
        assert main(["graph", tmp_path / "g"]) == 0
        assert (tmp_path / "g.svg").read_text().lstrip().startswith("<?xml")


def test_graph_command_reports_bad_files(tmp_path, capsys):
    (tmp_path / "bad.json").write_text("[]")
    assert main(["graph", tmp_path / "bad.json"]) == 1
    assert "not a gradflow graph file" in capsys.readouterr().err
    assert main(["graph", tmp_path / "missing.json"]) == 1


def test_python_dash_m_gradflow():
    result = subprocess.run([sys.executable, "-m", "gradflow", "--help"], capture_output=True,
                            text=True, timeout=120, check=False)
    assert result.returncode == 0
    assert "demo" in result.stdout and "graph" in result.stdout
