"""Data-parallel MLP training on a local cluster: gradflow on Ray vs TF 2.21's own
``tf.train.Server`` cluster, with the same in-graph program, in the same run.

The program (``build``, written once against the TF1 API and run by both): variables on
``/job:ps/task:0``, one tower per worker (``/job:worker/task:k``) fed its own batch by
the client, gradients averaged and applied by SGD on the ps. For 1 and 2 workers it
reports steps per second (median of alternating rounds), gradflow's per-step
communication volume (bytes crossing tasks, from the session's partitioning), the Ray
object-transfer rate measured between two actors, and from those an estimate for 8 and
64 machines.

    python benchmarks/distributed_mlp.py [--tf-python /opt/tfenv/bin/python]
        [--sizes 784-512-512-10] [--batch 128] [--steps 30] [--rounds 3]
"""
from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))


def build(tf, sizes: list[int], workers: int):
    """The in-graph program; returns (init, train, placeholders per worker)."""
    rng = np.random.RandomState(0)
    params = []
    with tf.device("/job:ps/task:0"):
        for i, (n_in, n_out) in enumerate(zip(sizes[:-1], sizes[1:], strict=True)):
            w = rng.randn(n_in, n_out).astype(np.float32) * np.float32(1 / np.sqrt(n_in))
            params.append(tf.Variable(w, name=f"w{i}"))
            params.append(tf.Variable(np.zeros(n_out, np.float32), name=f"b{i}"))
    towers, feeds = [], []
    for k in range(workers):
        with tf.device(f"/job:worker/task:{k}"):
            x = tf.placeholder(tf.float32, [None, sizes[0]], name=f"x{k}")
            y = tf.placeholder(tf.int32, [None], name=f"y{k}")
            h = x
            for i in range(0, len(params), 2):
                h = tf.matmul(h, params[i]) + params[i + 1]
                if i + 2 < len(params):
                    h = tf.nn.relu(h)
            loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(
                labels=y, logits=h))
            towers.append(tf.gradients(loss, params))
            feeds.append((x, y))
    with tf.device("/job:ps/task:0"):
        mean = [tf.add_n([t[i] for t in towers]) / float(workers) for i in range(len(params))]
        train = tf.train.GradientDescentOptimizer(0.01).apply_gradients(
            list(zip(mean, params)))
    return tf.global_variables_initializer(), train, feeds


def _batches(sizes: list[int], batch: int, workers: int) -> list:
    rng = np.random.RandomState(1)
    return [(rng.randn(batch, sizes[0]).astype(np.float32),
             rng.randint(0, sizes[-1], batch).astype(np.int32)) for _ in range(workers)]


def _ports(count: int) -> list[str]:
    probes = []
    for _ in range(count):
        probe = socket.socket()
        probe.bind(("localhost", 0))
        probes.append(probe)
    names = [f"localhost:{p.getsockname()[1]}" for p in probes]
    for probe in probes:
        probe.close()
    return names


def time_steps(tf, sizes, batch, workers, steps, servers_for) -> dict:
    """Builds the program on a fresh 1-ps cluster, runs ``steps`` timed steps."""
    addresses = _ports(1 + workers)
    spec = tf.train.ClusterSpec({"ps": addresses[:1], "worker": addresses[1:]})
    servers = servers_for(spec)
    graph = tf.Graph()
    with graph.as_default():
        init, train, feeds = build(tf, sizes, workers)
        data = _batches(sizes, batch, workers)
        feed = {}
        for (x, y), (bx, by) in zip(feeds, data, strict=True):
            feed[x], feed[y] = bx, by
        sess = tf.Session(servers[1].target)
        sess.run(init)
        for _ in range(3):
            sess.run(train, feed)
        cpu, start = time.process_time(), time.perf_counter()
        for _ in range(steps):
            sess.run(train, feed)
        wall = time.perf_counter() - start
        cpu = time.process_time() - cpu
        result = {"steps_per_s": steps / wall, "client_cpu_ms": 1e3 * cpu / steps}
        sess.close()
    return result, servers


def _tf_child(args) -> None:
    """Runs inside TensorFlow's interpreter: one configuration, printed as JSON."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    import tensorflow as tf_root  # the peer: only in this child process
    tf = tf_root.compat.v1
    tf.disable_v2_behavior()
    sizes = [int(s) for s in args.sizes.split("-")]

    def servers_for(spec):
        return [tf.train.Server(spec, job, index) for job, index in
                [("ps", 0)] + [("worker", k) for k in range(spec.num_tasks("worker"))]]

    result, _ = time_steps(tf, sizes, args.batch, args.workers, args.steps, servers_for)
    print(json.dumps(result))


def _tf_run(args, workers: int) -> dict:
    command = [args.tf_python, os.path.abspath(__file__), "--tf-child", "--workers",
               str(workers), "--sizes", args.sizes, "--batch", str(args.batch), "--steps",
               str(args.steps)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=600,
                          env=dict(os.environ, CUDA_VISIBLE_DEVICES=""))
    if done.returncode != 0:
        raise RuntimeError(f"TensorFlow run failed: {done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def communication_bytes(tf, sizes, workers) -> dict:
    """Bytes crossing tasks per step, by the partitioning a cluster session uses."""
    from gradflow.distribute.partition import partition  # the benchmark's own probe
    graph = tf.Graph()
    with graph.as_default():
        init, train, feeds = build(tf, sizes, workers)
        fed = [t for pair in feeds for t in pair]
        known = {("ps", 0)} | {("worker", k) for k in range(workers)}
        part = partition(graph, [], [train], fed, ("worker", 0), known)
    between = 0
    for stage in part.stages:
        for t, source in zip(stage.inputs, stage.input_sources, strict=True):
            if source[0] == "stage" and part.stages[source[1]].task != stage.task:
                between += int(np.prod(t.shape.as_list())) * t.dtype.size
    params = sum(a * b + b for a, b in zip(sizes[:-1], sizes[1:], strict=True)) * 4
    return {"between_tasks": between, "params": params, "stages": len(part.stages)}


def ray_transfer_rate(ray, megabytes: int = 64) -> dict:
    """Actor-to-actor transfer of one large array (MB/s) and a small call's round trip."""
    @ray.remote(num_cpus=0)
    class Holder:
        def make(self, n):
            return np.ones(n, np.uint8)

        def size(self, array):
            return array.nbytes

        def ping(self):
            return 0

    a, b = Holder.remote(), Holder.remote()
    ray.get([a.ping.remote(), b.ping.remote()])
    rates = []
    for _ in range(3):
        ref = a.make.remote(megabytes << 20)
        ray.wait([ref])
        start = time.perf_counter()
        ray.get(b.size.remote(ref))
        rates.append(megabytes / (time.perf_counter() - start))
    start = time.perf_counter()
    for _ in range(50):
        ray.get(a.ping.remote())
    latency = (time.perf_counter() - start) / 50
    ray.kill(a)
    ray.kill(b)
    return {"mb_per_s": statistics.median(rates), "round_trip_ms": latency * 1e3}


def ray_floor(ray, sizes: list[int], steps: int) -> float:
    """ms per step of the run's three hops done by bare actors passing the same arrays
    (ps reads -> worker -> ps), without gradflow: what Ray's transport costs here."""
    shapes = [s for a, b in zip(sizes[:-1], sizes[1:], strict=True) for s in ((a, b), (b,))]

    @ray.remote(num_cpus=0)
    class Hop:
        def read(self):
            return True, [np.ones(shape, np.float32) for shape in shapes]

        def grad(self, params):
            return True, [p * 1 for p in params]

        def apply(self, grads):
            return True

    ps, worker = Hop.remote(), Hop.remote()
    times = []
    for _ in range(steps + 3):
        start = time.perf_counter()
        _, params = ps.read.options(num_returns=2).remote()
        _, grads = worker.grad.options(num_returns=2).remote(params)
        ray.get(ps.apply.remote(grads))
        times.append(time.perf_counter() - start)
    ray.kill(ps)
    ray.kill(worker)
    return 1e3 * statistics.median(times[3:])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tf-python", default="/opt/tfenv/bin/python")
    parser.add_argument("--sizes", default="784-512-512-10")
    parser.add_argument("--batch", type=int, default=128, help="examples per worker")
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--workers", type=int, default=1, help=argparse.SUPPRESS)
    parser.add_argument("--tf-child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.tf_child:
        _tf_child(args)
        return
    sys.path.insert(0, os.path.dirname(HERE))
    import gradflow as tf
    from gradflow.distribute import ray_tasks
    ray = ray_tasks.connect()
    sizes = [int(s) for s in args.sizes.split("-")]
    have_tf = os.path.exists(args.tf_python)

    def servers_for(spec):
        return [tf.train.Server(spec, job, index) for job, index, _ in spec.tasks()]

    results: dict = {}
    for _ in range(args.rounds):
        for workers in (1, 2):
            result, servers = time_steps(tf, sizes, args.batch, workers, args.steps,
                                         servers_for)
            for server in servers:
                server.stop()
            results.setdefault(("gradflow", workers), []).append(result)
            if have_tf:
                results.setdefault(("tf", workers), []).append(_tf_run(args, workers))
    print(f"MLP {args.sizes}, batch {args.batch} per worker, 1 ps, {args.steps} steps x "
          f"{args.rounds} alternating rounds (median)")
    for workers in (1, 2):
        line = f"  {workers} worker(s): "
        for engine in ("gradflow", "tf"):
            runs = results.get((engine, workers))
            if runs:
                rate = statistics.median(r["steps_per_s"] for r in runs)
                cpu = statistics.median(r["client_cpu_ms"] for r in runs)
                line += f"{engine} {rate:7.1f} steps/s (client CPU {cpu:5.1f} ms/step)   "
        if results.get(("tf", workers)):
            ratio = statistics.median(r["steps_per_s"] for r in results["gradflow", workers]) \
                / statistics.median(r["steps_per_s"] for r in results["tf", workers])
            line += f"gradflow/TF {ratio:.2f}x"
        print(line)
    rate = ray_transfer_rate(ray)
    print(f"Ray actor-to-actor transfer: {rate['mb_per_s']:.0f} MB/s (64 MB array, this "
          f"machine), small call round trip {rate['round_trip_ms']:.2f} ms; the 1-worker "
          f"step's three hops with bare actors: {ray_floor(ray, sizes, args.steps):.1f} ms")
    for workers in (1, 2):
        comm = communication_bytes(tf, sizes, workers)
        feed = args.batch * (sizes[0] * 4 + 4) * workers
        print(f"  {workers} worker(s): {comm['between_tasks'] / 1e6:.2f} MB between tasks "
              f"per step + {feed / 1e6:.2f} MB of feeds, {comm['stages']} stages "
              f"(parameters: {comm['params'] / 1e6:.2f} MB)")
    _estimate(sizes, args.batch, results, rate)


def _estimate(sizes, batch, results, rate) -> None:
    """Scaling estimate: each worker reads the parameters and sends its gradients
    through the one ps, so the ps's link carries 2 x params x workers per step; the rest
    of a step is the 1-worker step less its own ps traffic at the measured rate."""
    params = sum(a * b + b for a, b in zip(sizes[:-1], sizes[1:], strict=True)) * 4
    one = statistics.median(r["steps_per_s"] for r in results["gradflow", 1])
    rest = max(1 / one - 2 * params / (rate["mb_per_s"] * 1e6), 1e-4)
    print(f"Estimate (rest of a step {rest * 1e3:.1f} ms, from the 1-worker run; "
          "synchronous steps; one ps):")
    for link, bandwidth in (("this machine's Ray transfer", rate["mb_per_s"] * 1e6),
                            ("10 Gb/s network", 1.25e9)):
        for machines in (8, 64):
            comm = 2 * params * machines / bandwidth
            step = rest + comm
            print(f"  {machines:2d} machines over {link}: {comm * 1e3:7.1f} ms of ps traffic "
                  f"per step -> {1 / step:6.1f} steps/s, {machines * batch / step:8.0f} "
                  "examples/s")


if __name__ == "__main__":
    main()
