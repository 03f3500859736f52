"""Tracing: FULL_TRACE fills RunMetadata.step_stats, Timeline makes a Chrome trace,
add_run_metadata shows it to TensorBoard; ConfigProto and RunOptions checks."""
import json

import numpy as np
import pytest
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

import gradflow as gf


def _traced_run():
    x = gf.placeholder(gf.float32, [4], name="x")
    y = gf.reduce_sum(gf.square(x, name="sq"), name="total")
    metadata = gf.RunMetadata()
    options = gf.RunOptions(trace_level=gf.RunOptions.FULL_TRACE)
    with gf.Session() as sess:
        value = sess.run(y, {x: [1.0, 2.0, 3.0, 4.0]}, options=options, run_metadata=metadata)
    return value, metadata


def test_full_trace_records_each_op_with_times_and_output_sizes():
    value, metadata = _traced_run()
    assert value == 30.0
    (device,) = metadata.step_stats.dev_stats
    assert device.device.endswith("device:CPU:0")
    stats = {s.node_name: s for s in device.node_stats}
    assert {"sq", "total"} <= set(stats)
    square = stats["sq"]
    assert square.all_start_micros > 1e15 and square.op_end_rel_micros >= 0
    assert square.timeline_label == "sq = Square(x)"
    description = square.output[0].tensor_description
    assert [d.size for d in description.shape.dim] == [4]
    assert description.allocation_description.requested_bytes == 16
    assert stats["total"].all_start_micros >= square.all_start_micros


def test_untraced_runs_leave_metadata_empty_and_results_equal():
    x = gf.constant(np.arange(3.0))
    y = x * 2.0
    metadata = gf.RunMetadata()
    with gf.Session() as sess:
        plain = sess.run(y, options=gf.RunOptions(), run_metadata=metadata)
        traced = sess.run(y, options=gf.RunOptions(trace_level=gf.RunOptions.FULL_TRACE),
                          run_metadata=metadata)
    np.testing.assert_array_equal(plain, traced)
    assert len(metadata.step_stats.dev_stats) == 1


def test_timeline_is_chrome_trace_json():
    _, metadata = _traced_run()
    timeline = gf.client.timeline.Timeline(metadata.step_stats)
    trace = json.loads(timeline.generate_chrome_trace_format(show_memory=True))
    ops = [e for e in trace["traceEvents"] if e["ph"] == "X"]
    assert {e["args"]["name"] for e in ops} >= {"sq", "total"}
    assert {e["name"] for e in ops} >= {"Square", "Sum"}
    assert any(e["ph"] == "s" for e in trace["traceEvents"])  # sq -> total data flow
    assert any(e["ph"] == "C" for e in trace["traceEvents"])
    with pytest.raises(TypeError, match="StepStats"):
        gf.client.timeline.Timeline(3)


def test_add_run_metadata_reaches_tensorboard(tmp_path):
    _, metadata = _traced_run()
    writer = gf.summary.FileWriter(str(tmp_path), gf.get_default_graph())
    writer.add_run_metadata(metadata, "step1", global_step=1)
    writer.close()
    acc = EventAccumulator(str(tmp_path))
    acc.Reload()
    assert acc.Tags()["run_metadata"] == ["step1"]
    assert acc.RunMetadata("step1").step_stats == metadata.step_stats


def test_config_and_options_are_checked():
    with pytest.raises(TypeError, match="ConfigProto"):
        gf.Session(config={"log_device_placement": True})
    config = gf.ConfigProto(intra_op_parallelism_threads=2, allow_soft_placement=True,
                            gpu_options=gf.GPUOptions(allow_growth=True))
    y = gf.constant(1.0) + 1.0
    with gf.Session(config=config) as sess:
        assert sess.run(y) == 2.0
        with pytest.raises(ValueError, match="timeout_in_ms is not supported"):
            sess.run(y, options=gf.RunOptions(timeout_in_ms=10))
        with pytest.raises(TypeError, match="RunOptions"):
            sess.run(y, options="fast")
    interactive = gf.InteractiveSession(config=config)
    try:
        assert y.eval() == 2.0
    finally:
        interactive.close()


def test_log_device_placement(capfd):
    y = gf.add(gf.constant(1.0, name="a"), 2.0, name="plus")
    with gf.Session(config=gf.ConfigProto(log_device_placement=True)) as sess:
        sess.run(y)
    err = capfd.readouterr().err
    assert "plus: (AddV2): /job:localhost/replica:0/task:0/device:CPU:0" in err or \
        "plus: (Add): /job:localhost/replica:0/task:0/device:CPU:0" in err


def test_output_partition_graphs():
    y = gf.constant(1.0, name="one") * 2.0
    metadata = gf.RunMetadata()
    with gf.Session() as sess:
        sess.run(y, options=gf.RunOptions(output_partition_graphs=True), run_metadata=metadata)
    assert "one" in {n.name for n in metadata.partition_graphs[0].node}
