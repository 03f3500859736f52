"""TF1 training plumbing real TF1 programs depend on: EMA steps, restarted checkpoints,
collection getters (found running real TF1 programs; values checked against TF 2.21)."""
import numpy as np

import gradflow as gf
import gradflow.compat.v1 as tf


def test_moving_average_and_model_variables_read_their_collections():
    with gf.Graph().as_default():
        w = tf.Variable(1.0, name="w")
        tf.add_to_collection(tf.GraphKeys.MODEL_VARIABLES, w)
        assert tf.moving_average_variables() == []
        tf.train.ExponentialMovingAverage(0.9).apply([w])
        assert tf.moving_average_variables() == [w]
        assert tf.model_variables() == [w]

def test_ema_num_updates_is_the_step_the_train_op_just_incremented():
    # TF 2.21 gives 1 - 2/11 = 0.8181818: decay min(0.9, (1 + 1) / (10 + 1)) at step 1.
    with gf.Graph().as_default():
        w = tf.Variable(0.0, name="w")
        step = tf.Variable(0, trainable=False, name="step")
        train = tf.group(tf.assign_add(w, 1.0), tf.assign_add(step, 1))
        ema = tf.train.ExponentialMovingAverage(0.9, num_updates=step)
        with tf.control_dependencies([train]):
            update = ema.apply([w])
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            sess.run(update)
            shadow = sess.run(ema.average(w))
    decay = 2.0 / 11.0
    np.testing.assert_allclose(shadow, decay * 0.0 + (1 - decay) * 1.0, rtol=1e-6)

def test_restarted_monitored_session_keeps_counting_old_checkpoints(tmp_path):
    def train(last_step):
        with gf.Graph().as_default():
            step = tf.train.get_or_create_global_step()
            train_op = tf.assign_add(step, 1)
            hooks = [tf.train.StopAtStepHook(last_step=last_step)]
            saver = tf.train.Saver(max_to_keep=3)
            scaffold = tf.train.Scaffold(saver=saver)
            with tf.train.MonitoredTrainingSession(
                    checkpoint_dir=str(tmp_path), hooks=hooks, scaffold=scaffold,
                    save_checkpoint_steps=2, save_summaries_steps=None) as sess:
                while not sess.should_stop():
                    sess.run(train_op)
            return saver

    train(4)
    saver = train(8)
    state = tf.train.get_checkpoint_state(str(tmp_path))
    kept = [p.rsplit("-", 1)[1] for p in state.all_model_checkpoint_paths]
    assert kept == ["4", "6", "8"]  # max_to_keep counts the first run's checkpoints too
    assert [p.rsplit("-", 1)[1] for p in saver.last_checkpoints] == kept
    assert not (tmp_path / "model.ckpt-0.npz").exists()

def test_recover_last_checkpoints_skips_missing_files(tmp_path):
    with gf.Graph().as_default():
        tf.Variable(1.0)
        saver = tf.train.Saver()
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            first = saver.save(sess, str(tmp_path / "m"), global_step=1)
        fresh = tf.train.Saver()
        fresh.recover_last_checkpoints([first, str(tmp_path / "m-7")])
        assert fresh.last_checkpoints == [first]
