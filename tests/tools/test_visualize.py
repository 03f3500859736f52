"""to_dot and render: clusters, colours, edges, and the message without Graphviz."""
import re
import shutil

import numpy as np
import pytest

import gradflow as gf
from gradflow.tools import visualize


def small_training_graph():
    w = gf.Variable(np.ones((3, 2), np.float32), name="w")
    x = gf.placeholder(gf.float32, [None, 3], name="x")
    with gf.name_scope("layer"):
        h = gf.tanh(gf.matmul(x, w))
    loss = gf.reduce_mean(h, name="loss")
    train = gf.train.GradientDescentOptimizer(0.1).minimize(loss)
    return loss, train


def node_line(dot, name):
    (line,) = [ln for ln in dot.splitlines() if f'tooltip="{name} (' in ln]
    return line


def test_gradient_ops_are_clustered_and_coloured_apart():
    small_training_graph()
    dot = gf.to_dot(title="demo")
    assert dot.startswith("digraph gradflow {") and dot.rstrip().endswith("}")
    assert 'label="gradients/"' in dot and 'label="MatMul_grad/"' in dot
    grad_fill = visualize._GRADIENT["fillcolor"]
    assert grad_fill in node_line(dot, "gradients/layer/MatMul_grad/MatMul_1")
    assert grad_fill in node_line(dot, "gradients/grad_ys_0")  # the seed, in the same scope
    assert visualize._FORWARD["fillcolor"] in node_line(dot, "layer/MatMul")
    assert visualize._UPDATE["fillcolor"] in node_line(
        dot, "GradientDescent/update_w/ApplyGradientDescent")
    assert 'shape="cylinder"' in node_line(dot, "w")
    assert 'label="demo"' in dot


def test_clusters_nest_and_balance():
    small_training_graph()
    dot = gf.to_dot()
    opened = len(re.findall(r"subgraph cluster_\d+ \{", dot))
    closing = [line for line in dot.splitlines() if line.strip() == "}"]
    assert opened > 3 and len(closing) == opened + 1
    assert "    subgraph cluster_" in dot  # a nested cluster


def test_edges_carry_shapes_and_control_edges_are_dashed():
    small_training_graph()
    graph = gf.get_default_graph()
    dot = gf.to_dot(graph)
    matmul = graph.get_operation_by_name("layer/MatMul")
    tanh = graph.get_operation_by_name("layer/Tanh")
    assert re.search(rf'op{matmul.id} -> op{tanh.id} \[tooltip="layer/MatMul:0 float32 '
                     r'\(\?, 2\)", label="\?x2"\]', dot)
    assert "style=dashed" in dot
    assert 'label="?x2"' not in gf.to_dot(graph, show_shapes=False)


def test_a_list_of_ops_draws_only_their_edges():
    loss, _ = small_training_graph()
    dot = gf.to_dot([loss, loss.op.inputs[0]])
    assert dot.count(" -> ") == 1
    with pytest.raises(TypeError, match="a Graph or a list of ops and tensors"):
        gf.to_dot([3])


def test_scopes_can_be_flattened_except_gradients():
    small_training_graph()
    dot = gf.to_dot(group_scopes=False)
    assert 'label="layer/"' in dot  # gradients/layer/ still clusters
    assert 'label="w/"' not in dot


def test_names_are_escaped():
    gf.constant(1.0, name='odd\\name')
    assert 'label="odd\\\\name\\nConst"' in gf.to_dot()


def test_render_without_graphviz_gives_a_clear_message(monkeypatch, tmp_path):
    monkeypatch.setattr(visualize.shutil, "which", lambda name: None)
    assert not visualize.graphviz_available()
    with pytest.raises(visualize.GraphvizNotFoundError, match="apt-get install graphviz"):
        visualize.render("digraph { a -> b }", str(tmp_path / "g.svg"))
    with pytest.raises(ValueError, match="svg, png, pdf"):
        visualize.render("digraph { a -> b }", str(tmp_path / "g.gif"))


@pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz 'dot' not installed")
def test_render_svg_and_png(tmp_path):
    small_training_graph()
    dot = gf.to_dot()
    svg = visualize.render(dot, str(tmp_path / "g.svg"))
    assert "<svg" in open(svg, encoding="utf-8").read()
    png = visualize.render(dot, str(tmp_path / "g.out"), format="png")
    assert open(png, "rb").read(8) == b"\x89PNG\r\n\x1a\n"
