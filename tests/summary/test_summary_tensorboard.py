"""TensorBoard reads what gradflow writes: event files loaded with the tensorboard
package's own EventAccumulator show every scalar, histogram, image, text and the graph."""
import glob
import os

import numpy as np
import pytest
from google.protobuf import text_format
from tensorboard.backend.event_processing import event_file_loader
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
from tensorboard.compat.proto import event_pb2

import gradflow as gf


def _accumulator(logdir: str) -> EventAccumulator:
    acc = EventAccumulator(logdir, size_guidance={"images": 0, "histograms": 0, "scalars": 0,
                                                  "tensors": 0})
    acc.Reload()
    return acc


def _training_graph():
    x = gf.placeholder(gf.float32, [None, 2], name="x")
    with gf.variable_scope("model"):
        w = gf.get_variable("w", initializer=gf.constant([[0.5], [-0.5]]))
        y = gf.matmul(x, w)
    loss = gf.reduce_mean(gf.square(y - 1.0), name="mse")
    train = gf.train.GradientDescentOptimizer(0.1).minimize(loss)
    gf.summary.scalar("loss", loss)
    gf.summary.histogram("weights", w)
    gf.summary.image("picture", gf.reshape(gf.tile(w, [8, 1]), [1, 4, 4, 1]))
    gf.summary.text("note", gf.constant("gradflow"))
    return x, loss, train, gf.summary.merge_all()


def test_tensorboard_finds_every_summary_and_the_graph(tmp_path):
    x, loss, train, merged = _training_graph()
    logdir = str(tmp_path / "run")
    writer = gf.summary.FileWriter(logdir, gf.get_default_graph())
    losses = []
    with gf.Session() as sess:
        sess.run(gf.global_variables_initializer())
        for step in range(4):
            summary, value, _ = sess.run([merged, loss, train], {x: [[1.0, 2.0], [3.0, 1.0]]})
            writer.add_summary(summary, global_step=step)
            losses.append(float(value))
    writer.close()
    acc = _accumulator(logdir)
    tags = acc.Tags()
    assert tags["scalars"] == ["loss"]
    assert tags["histograms"] == ["weights"]
    assert tags["images"] == ["picture/image/0"]
    assert tags["tensors"] == ["note"]
    assert tags["graph"]
    scalars = acc.Scalars("loss")
    assert [e.step for e in scalars] == [0, 1, 2, 3]
    np.testing.assert_allclose([e.value for e in scalars], losses, rtol=1e-6)
    assert acc.Histograms("weights")[0].histogram_value.num == 2
    image = acc.Images("picture/image/0")[0]
    assert (image.width, image.height) == (4, 4)
    graph_def = acc.Graph()
    nodes = {n.name: n for n in graph_def.node}
    assert nodes["model/w"].op == "VariableV2"
    assert nodes["mse"].op == "Mean"
    assert any(name.startswith("gradients/") for name in nodes)
    assert nodes["model/MatMul"].input[:2] == ["x", "model/w/read"] or \
        nodes["model/MatMul"].input[0] == "x"
    assert "_output_shapes" in nodes["model/MatMul"].attr


def test_event_file_format_and_session_log(tmp_path):
    logdir = str(tmp_path)
    writer = gf.summary.FileWriter(logdir, filename_suffix=".gf")
    writer.add_session_log(gf.SessionLog(status=gf.SessionLog.START), global_step=1)
    writer.add_summary(gf.Summary(value=[gf.Summary.Value(tag="a", simple_value=2.0)]), 5)
    writer.flush()
    writer.close()
    files = glob.glob(os.path.join(logdir, "events.out.tfevents.*"))
    assert len(files) == 1 and files[0].endswith(".gf")
    events = [event_pb2.Event.FromString(record) for record in
              event_file_loader.RawEventFileLoader(files[0]).Load()]
    assert events[0].file_version == "brain.Event:2"
    assert events[1].session_log.status == event_pb2.SessionLog.START and events[1].step == 1
    assert events[2].summary.value[0].simple_value == 2.0 and events[2].step == 5


def test_reopen_writes_a_second_file_and_cache_shares_writers(tmp_path):
    logdir = str(tmp_path)
    writer = gf.summary.FileWriter(logdir)
    writer.close()
    with pytest.warns(UserWarning, match="closed FileWriter"):  # TF1's: a no-op
        writer.add_summary(gf.Summary(), 0)
    writer.reopen()
    writer.add_summary(gf.Summary(value=[gf.Summary.Value(tag="b", simple_value=1.0)]), 1)
    writer.close()
    assert writer.get_logdir() == logdir
    assert len(glob.glob(os.path.join(logdir, "events.out.tfevents.*"))) >= 1
    cached = gf.summary.FileWriterCache.get(str(tmp_path / "c"))
    assert gf.summary.FileWriterCache.get(str(tmp_path / "c")) is cached
    gf.summary.FileWriterCache.clear()
    assert gf.summary.FileWriterCache.get(str(tmp_path / "c")) is not cached
    gf.summary.FileWriterCache.clear()


def test_file_writer_rejects_what_it_cannot_honour(tmp_path):
    with pytest.raises(ValueError, match="session"):
        gf.summary.FileWriter(str(tmp_path), session=object())
    writer = gf.summary.FileWriter(str(tmp_path))
    with pytest.raises(TypeError, match="summary must be a Summary"):
        writer.add_summary(3.0)
    with pytest.raises(ValueError, match="only graph, or graph_def"):
        writer.add_graph(gf.get_default_graph(), graph_def=gf.GraphDef())
    writer.close()


def test_graph_def_attrs_are_encoded_by_kind():
    c = gf.constant([[1.0, 2.0]], name="c")
    gf.identity(c, name="i")
    graph_def = gf.get_default_graph().as_graph_def()
    nodes = {n.name: n for n in graph_def.node}
    assert nodes["c"].op == "Const"
    assert nodes["c"].attr["dtype"].type == 1  # DT_FLOAT
    tensor = nodes["c"].attr["value"].tensor
    assert [d.size for d in tensor.tensor_shape.dim] == [1, 2]
    np.testing.assert_array_equal(np.frombuffer(tensor.tensor_content, "<f4"), [1.0, 2.0])
    assert list(nodes["i"].input) == ["c"] and nodes["i"].attr["T"].type == 1


def test_summary_iterator_reads_events_back(tmp_path):
    writer = gf.summary.FileWriter(str(tmp_path))
    writer.add_summary(gf.Summary(value=[gf.Summary.Value(tag="z", simple_value=4.0)]), 9)
    writer.close()
    (path,) = glob.glob(os.path.join(str(tmp_path), "events.out.tfevents.*"))
    events = list(gf.train.summary_iterator(path))
    assert events[0].file_version == "brain.Event:2"
    assert (events[1].step, events[1].summary.value[0].tag) == (9, "z")
    with pytest.raises(gf.errors.NotFoundError):
        list(gf.train.summary_iterator(str(tmp_path / "missing")))


def test_write_graph_as_text_and_binary(tmp_path):
    gf.constant(1.0, name="k")
    text_path = gf.train.write_graph(gf.get_default_graph(), str(tmp_path), "g.pbtxt")
    binary_path = gf.io.write_graph(gf.get_default_graph().as_graph_def(), str(tmp_path),
                                    "g.pb", as_text=False)
    parsed = text_format.Parse(open(text_path).read(), gf.GraphDef())
    assert [n.name for n in parsed.node] == ["k"]
    assert gf.GraphDef.FromString(open(binary_path, "rb").read()) == parsed
    with pytest.raises(TypeError, match="graph_or_graph_def"):
        gf.train.write_graph("nope", str(tmp_path), "x")
