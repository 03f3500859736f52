"""A TF1 between-graph program (one process per task) for ``gradflow cluster``.

Each worker builds its own graph: variables on the ps, its tower on itself. Workers take
turns (worker k runs the steps with global_step % workers == k) so the run is the same
sequence of SGD steps as one process; the chief writes the final variables to --out.
"""
import sys
import time

import numpy as np

import gradflow as tf

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from cluster_models import FEATURES, data, loss_of, parameters  # noqa: E402

flags = tf.app.flags
flags.DEFINE_string("job_name", "", "ps or worker")
flags.DEFINE_integer("task_index", 0, "the task's index in its job")
flags.DEFINE_string("ps_hosts", "", "comma-separated ps addresses")
flags.DEFINE_string("worker_hosts", "", "comma-separated worker addresses")
flags.DEFINE_integer("steps", 6, "training steps, over all workers")
flags.DEFINE_string("out", "", "where the chief writes the final variables (.npz)")
FLAGS = flags.FLAGS


def main(_):
    cluster = tf.train.ClusterSpec({"ps": FLAGS.ps_hosts.split(","),
                                    "worker": FLAGS.worker_hosts.split(",")})
    server = tf.train.Server(cluster, job_name=FLAGS.job_name, task_index=FLAGS.task_index)
    if FLAGS.job_name == "ps":
        server.join()
        return
    workers = cluster.num_tasks("worker")
    with tf.device("/job:ps/task:0"):
        params = parameters()
        global_step = tf.train.get_or_create_global_step()
    with tf.device(f"/job:worker/task:{FLAGS.task_index}"):
        x = tf.placeholder(tf.float32, [None, FEATURES])
        y = tf.placeholder(tf.float32, [None, 1])
        grads = tf.gradients(loss_of(params, x, y), params)
    with tf.device("/job:ps/task:0"):
        train = tf.train.GradientDescentOptimizer(0.1).apply_gradients(
            list(zip(grads, params)), global_step=global_step)
    uninitialized = tf.report_uninitialized_variables()
    batches = data(FLAGS.steps, 1)
    with tf.Session(server.target) as sess:
        if FLAGS.task_index == 0:
            sess.run(tf.global_variables_initializer())
        while sess.run(uninitialized).size:
            time.sleep(0.05)
        while True:
            step = int(sess.run(global_step))
            if step >= FLAGS.steps:
                break
            if step % workers == FLAGS.task_index:
                bx, by = batches[step][0]
                sess.run(train, {x: bx, y: by})
            else:
                time.sleep(0.01)
        if FLAGS.task_index == 0 and FLAGS.out:
            np.savez(FLAGS.out, *sess.run(params))


if __name__ == "__main__":
    tf.app.run(main)
