"""MonitoredTrainingSession, SingularMonitoredSession and the standard hooks against
TF 2.21's recorded behaviour (steps run, checkpoints and events written, log lines).

One known difference shapes these tests: a gradflow run that fetches a variable and
updates it returns the value read before the update (TF usually returns the updated
one), so fetched global steps are compared through the losses and files they lead to.
"""
import glob
import logging
import os

import numpy as np
import pytest
from tensorboard.backend.event_processing import event_file_loader
from tensorboard.compat.proto import event_pb2

import gradflow as gf
from tf_fixtures import load_json

FIXTURE = load_json("plumbing_hooks")


def _model():
    step = gf.train.get_or_create_global_step()
    w = gf.Variable(2.0, name="w")
    loss = gf.square(w - 1.0, name="loss")
    train = gf.train.GradientDescentOptimizer(0.25).minimize(loss, global_step=step)
    gf.summary.scalar("loss", loss)
    return step, w, loss, train


def _events(directory):
    gf.summary.FileWriterCache.clear()
    found = []
    for path in sorted(glob.glob(os.path.join(directory, "events.out.tfevents.*"))):
        for record in event_file_loader.RawEventFileLoader(path).Load():
            event = event_pb2.Event.FromString(record)
            kind = event.WhichOneof("what")
            found.append({"step": event.step, "what": kind,
                          "tags": [v.tag for v in event.summary.value] if kind == "summary"
                          else [],
                          "status": event.session_log.status if kind == "session_log"
                          else None})
    return found


def test_stop_at_step_checkpoints_summaries_and_restore(tmp_path):
    recorded = FIXTURE["stop_at_step"]
    directory = str(tmp_path)
    step, _, loss, train = _model()
    losses = []
    with gf.train.MonitoredTrainingSession(
            checkpoint_dir=directory, hooks=[gf.train.StopAtStepHook(last_step=6)],
            save_checkpoint_steps=4, save_summaries_steps=2, log_step_count_steps=None) as s:
        while not s.should_stop():
            losses.append(float(s.run([loss, train])[0]))
    assert losses == [value for value, _ in recorded["seen"]]
    state = gf.train.get_checkpoint_state(directory)
    assert os.path.basename(state.model_checkpoint_path) == recorded["latest"]
    assert [os.path.basename(p) for p in state.all_model_checkpoint_paths] == recorded["all"]
    assert os.path.exists(os.path.join(directory, "graph.pbtxt"))
    mine = [e for e in _events(directory) if e["what"] in ("summary", "session_log")]
    theirs = [e for e in recorded["events"] if e["what"] in ("summary", "session_log")]
    assert mine == theirs
    # a new session restores the last checkpoint and trains on to step 8
    gf.reset_default_graph()
    step, _, loss, train = _model()
    restored = []
    with gf.train.MonitoredTrainingSession(
            checkpoint_dir=directory, hooks=[gf.train.StopAtStepHook(last_step=8)],
            save_checkpoint_steps=100, save_summaries_steps=None, save_summaries_secs=None,
            log_step_count_steps=None) as s:
        while not s.should_stop():
            restored.append(float(s.run([loss, train])[0]))
        assert int(s.run(step)) == 8
    assert restored == [value for value, _ in recorded["restored"]]


def test_num_steps_and_logging_tensor_hook(caplog):
    recorded = FIXTURE["logging"]
    step, _, loss, train = _model()
    hooks = [gf.train.StopAtStepHook(num_steps=3),
             gf.train.LoggingTensorHook({"loss": loss}, every_n_iter=2),
             gf.train.LoggingTensorHook([loss], every_n_iter=3,
                                        formatter=lambda v: "fmt %.3f" % v[loss])]
    runs = 0
    with caplog.at_level(logging.INFO, logger="gradflow"):
        with gf.train.SingularMonitoredSession(hooks=hooks) as s:
            while not s.should_stop():
                s.run(train)
                runs += 1
    assert runs == recorded["runs"]
    lines = [r.getMessage() for r in caplog.records if "loss" in r.getMessage() or
             r.getMessage().startswith("fmt")]
    # TF's lines also hold "step = N"; the loss values and the timing suffix must agree
    want = [line.replace(", step = 1", "").replace(", step = 3", "")
            for line in recorded["lines"]]
    assert lines[:2] == want[:2]
    assert lines[2].startswith("loss = 0.0625 (") and lines[2].endswith(" sec)")


def test_nan_tensor_hook():
    recorded = FIXTURE["nan"]
    step = gf.train.get_or_create_global_step()
    x = gf.placeholder(gf.float32, [])
    loss = gf.identity(x * 1.0, name="loss")
    inc = gf.assign_add(step, 1)
    with pytest.raises(gf.train.NanLossDuringTrainingError) as info:
        with gf.train.SingularMonitoredSession(hooks=[gf.train.NanTensorHook(loss)]) as s:
            s.run(inc, {x: 1.0})
            s.run(inc, {x: float("nan")})
    assert type(info.value).__name__ == recorded["type"]
    assert str(info.value) == recorded["message"]
    gf.reset_default_graph()
    step = gf.train.get_or_create_global_step()
    x = gf.placeholder(gf.float32, [])
    loss = gf.identity(x * 1.0, name="loss")
    inc = gf.assign_add(step, 1)
    with gf.train.SingularMonitoredSession(
            hooks=[gf.train.NanTensorHook(loss, fail_on_nan_loss=False)]) as s:
        s.run(inc, {x: float("nan")})
        assert s.should_stop() == recorded["stopped"]


def test_hook_protocol_order():
    calls = []

    class Recorder(gf.train.SessionRunHook):
        def begin(self):
            calls.append("begin")

        def after_create_session(self, session, coord):
            calls.append("after_create_session")

        def before_run(self, run_context):
            calls.append("before_run")
            return gf.train.SessionRunArgs({"s": gf.train.get_global_step()})

        def after_run(self, run_context, run_values):
            calls.append("after_run")
            assert isinstance(run_values, gf.train.SessionRunValues)
            if run_values.results["s"] >= 2:
                run_context.request_stop()

        def end(self, session):
            calls.append("end")

    _model()
    with gf.train.MonitoredSession(hooks=[Recorder()]) as s:
        while not s.should_stop():
            s.run(gf.get_default_graph().get_operation_by_name("GradientDescent"))
    recorded = [c.split(" ")[0] for c in FIXTURE["protocol"]["calls"]]
    assert calls[:4] == recorded[:4] and calls[-1] == recorded[-1] == "end"
    assert set(calls) == set(recorded)


def test_step_counter_writes_steps_per_second(tmp_path):
    directory = str(tmp_path)
    _, _, _, train = _model()
    with gf.train.MonitoredTrainingSession(
            checkpoint_dir=None, summary_dir=directory,
            hooks=[gf.train.StopAtStepHook(last_step=5),
                   gf.train.StepCounterHook(every_n_steps=2, output_dir=directory)],
            log_step_count_steps=None, save_summaries_steps=None) as s:
        while not s.should_stop():
            s.run(train)
    events = [e for e in _events(directory) if e["what"] == "summary"]
    assert events == FIXTURE["step_counter"]["events"]


def test_feed_fn_and_final_ops_hooks():
    x = gf.placeholder(gf.float32, [])
    y = x * 2.0
    final = gf.train.FinalOpsHook(gf.constant(5.0) + 1.0)
    with gf.train.SingularMonitoredSession(
            hooks=[gf.train.FeedFnHook(lambda: {x: 3.0}), final]) as s:
        assert float(s.run(y)) == FIXTURE["feed_fn"]["value"]
        with pytest.raises(RuntimeError, match="Same tensor is fed"):
            s.run(y, {x: 1.0})
        assert isinstance(s.raw_session(), gf.Session)
    assert float(final.final_ops_values) == 6.0


def test_out_of_range_ends_the_loop_quietly():
    x = gf.placeholder(gf.float32, [])
    failing = gf.py_func(lambda v: (_ for _ in ()).throw(
        gf.errors.OutOfRangeError(None, None, "End of sequence")), [x], gf.float32)
    with gf.train.MonitoredSession() as s:
        s.run(failing, {x: 1.0})
    assert s.should_stop()


def test_profiler_hook_writes_chrome_traces(tmp_path):
    _, _, _, train = _model()
    with gf.train.SingularMonitoredSession(hooks=[
            gf.train.StopAtStepHook(last_step=4),
            gf.train.ProfilerHook(save_steps=2, output_dir=str(tmp_path))]) as s:
        while not s.should_stop():
            s.run(train)
    traces = sorted(os.listdir(tmp_path))
    assert traces and all(name.startswith("timeline-") for name in traces)


@pytest.mark.parametrize("key", sorted(FIXTURE["errors"]))
def test_bad_hook_arguments_raise_tfs_errors(key):
    build = {
        "stop_both": lambda: gf.train.StopAtStepHook(num_steps=1, last_step=2),
        "logging_no_every": lambda: gf.train.LoggingTensorHook({"a": gf.constant(1)}),
        "checkpoint_both": lambda: gf.train.CheckpointSaverHook("/tmp/x", save_secs=1,
                                                                save_steps=1),
        "summary_none": lambda: gf.train.SummarySaverHook(save_steps=1, output_dir="/tmp/x"),
    }[key]
    recorded = FIXTURE["errors"][key]
    with pytest.raises(ValueError) as info:
        build()
    assert type(info.value).__name__ == recorded["type"]
    assert str(info.value) == recorded["message"]


def test_unsupported_arguments_say_so():
    # master and is_chief=False are supported now: tests/train/test_session_manager.py
    with pytest.raises(RuntimeError, match="Global step should be created"):
        gf.train.SingularMonitoredSession(hooks=[gf.train.StopAtStepHook(num_steps=1)])


def test_scaffold_defaults_and_uninitialized_check():
    gf.Variable(1.0, name="v")
    scaffold = gf.train.Scaffold(init_op=gf.no_op())
    with pytest.raises(RuntimeError, match="Init operations did not make model ready"):
        gf.train.SingularMonitoredSession(scaffold=scaffold)
    gf.reset_default_graph()
    v = gf.Variable(np.float32(2.0), name="v")
    summary = gf.summary.scalar("v", v)
    scaffold = gf.train.Scaffold().finalize()
    assert scaffold.summary_op is not None and scaffold.saver is not None
    assert gf.get_default_graph().finalized
    with gf.train.SingularMonitoredSession(scaffold=scaffold) as s:
        assert float(s.run(v)) == 2.0
        assert s.run(summary) is not None
