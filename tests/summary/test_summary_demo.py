"""``gradflow demo`` writes TensorBoard events (loss, accuracy, histograms, graph) and
says how to open them."""
import io

from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from gradflow.tools.demo import DemoConfig, run_demo


def test_demo_writes_tensorboard_events(tmp_path):
    out = io.StringIO()
    result = run_demo(DemoConfig(steps=20, output=str(tmp_path)), out=out)
    logdir = str(tmp_path / "tensorboard")
    assert logdir in result.files
    assert f"tensorboard --logdir {logdir}" in out.getvalue()
    acc = EventAccumulator(logdir, size_guidance={"scalars": 0, "histograms": 0})
    acc.Reload()
    tags = acc.Tags()
    assert set(tags["scalars"]) == {"training_loss", "batch_accuracy", "test_accuracy"}
    assert set(tags["histograms"]) == {"hidden_activations", "output_activations"}
    assert [e.step for e in acc.Scalars("training_loss")] == [1, 10, 20]
    assert acc.Scalars("test_accuracy")[0].value == result.test_accuracy
    assert tags["graph"] and any(n.name.startswith("hidden/") for n in acc.Graph().node)
