"""A TF1 training program, written as TF1 programs are (compat.v1 import, flags,
app.run, logging, summaries, MonitoredTrainingSession, asserts), runs unchanged."""
import glob
import os
import subprocess
import sys
import textwrap

import pytest
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

PROGRAM = textwrap.dedent('''
    import numpy as np
    import gradflow.compat.v1 as tf

    flags = tf.app.flags
    flags.DEFINE_string("logdir", "/tmp/run", "where checkpoints and events go")
    flags.DEFINE_integer("steps", 30, "training steps")
    flags.DEFINE_float("learning_rate", 0.1, "SGD step size")
    FLAGS = flags.FLAGS


    def main(argv):
        tf.logging.set_verbosity(tf.logging.INFO)
        rng = np.random.RandomState(0)
        data_x = rng.randn(64, 3).astype(np.float32)
        data_y = data_x.dot(np.array([[1.0], [-2.0], [0.5]], np.float32))
        x = tf.placeholder(tf.float32, [None, 3], name="x")
        y = tf.placeholder(tf.float32, [None, 1], name="y")
        with tf.name_scope("model"):
            w = tf.get_variable("w", [3, 1], initializer=tf.zeros_initializer())
            pred = tf.matmul(x, w)
        with tf.control_dependencies([tf.assert_rank(x, 2)]):
            loss = tf.reduce_mean(tf.square(pred - y), name="mse")
        step = tf.train.get_or_create_global_step()
        train = tf.train.GradientDescentOptimizer(FLAGS.learning_rate).minimize(
            loss, global_step=step)
        tf.summary.scalar("mse", loss)
        tf.summary.histogram("w", w)
        hooks = [tf.train.StopAtStepHook(last_step=FLAGS.steps),
                 tf.train.NanTensorHook(loss),
                 tf.train.LoggingTensorHook({"mse": loss}, every_n_iter=10)]
        with tf.train.MonitoredTrainingSession(checkpoint_dir=FLAGS.logdir, hooks=hooks,
                                               save_summaries_steps=5,
                                               log_step_count_steps=10) as sess:
            while not sess.should_stop():
                value, _ = sess.run([loss, train], {x: data_x, y: data_y})
        tf.logging.info("final mse %.4f", value)
        print("FINAL", float(value), argv[1:])


    if __name__ == "__main__":
        tf.app.run()
''')


@pytest.mark.slow
def test_tf1_program_runs_unchanged(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(PROGRAM)
    logdir = tmp_path / "logs"
    done = subprocess.run([sys.executable, str(script), f"--logdir={logdir}", "--steps=30",
                           "extra"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    final = [line for line in done.stdout.splitlines() if line.startswith("FINAL")]
    assert final and float(final[0].split()[1]) < 0.5 and final[0].endswith("['extra']")
    assert "mse = " in done.stderr and "Saving checkpoints for 30" in done.stderr
    assert os.path.exists(logdir / "model.ckpt-30.index")
    assert glob.glob(str(logdir / "events.out.tfevents.*"))
    acc = EventAccumulator(str(logdir))
    acc.Reload()
    assert "mse_1" in acc.Tags()["scalars"] and "global_step/sec" in acc.Tags()["scalars"]
    assert acc.Tags()["histograms"] == ["w_1"]  # "w" is the variable's scope, as in TF1
    assert acc.Tags()["graph"]
