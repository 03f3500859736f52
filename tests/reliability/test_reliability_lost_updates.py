"""No update is lost when several threads run updates on one session (issue 20, item 1).

Every run that writes variables reads, modifies and writes them as one step with
respect to the other threads, so N threads x K updates end at exactly N x K, and a
training step run concurrently leaves exactly the state the same number of steps
leaves when run one after another (the gradients below are constant, so the order in
which threads take their turns cannot change the result).
"""
import inspect
import sys
import threading

import numpy as np
import pytest

import gradflow as gf
from gradflow.runtime.executor import required_ops, state_writes
from gradflow.runtime.state_locks import StateLocks, release

THREADS = 4
UPDATES = 150


def run_concurrently(sess: gf.Session, fetch, threads: int = THREADS,
                     updates: int = UPDATES) -> None:
    """``threads`` threads each run ``fetch`` ``updates`` times, switching very often."""
    failures = []
    barrier = threading.Barrier(threads)

    def work():
        try:
            barrier.wait()
            for _ in range(updates):
                sess.run(fetch)
        except BaseException as err:  # noqa: BLE001 - re-raised below
            failures.append(err)

    previous = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        workers = [threading.Thread(target=work) for _ in range(threads)]
        for w in workers:
            w.start()
        for w in workers:
            w.join(timeout=120)
    finally:
        sys.setswitchinterval(previous)
    assert not any(w.is_alive() for w in workers), "a thread hangs"
    if failures:
        raise failures[0]


@pytest.mark.parametrize("use_locking", [True, False])
def test_assign_add_from_threads_loses_nothing(use_locking):
    with gf.Graph().as_default():
        v = gf.Variable(0.0, dtype=gf.float64)
        w = gf.Variable(np.zeros(3))
        step = gf.group(gf.assign_add(v, 1.0, use_locking=use_locking),
                        gf.assign_sub(w, np.ones(3), use_locking=use_locking))
        with gf.Session() as sess:
            sess.run(gf.global_variables_initializer())
            run_concurrently(sess, step)
            assert sess.run(v) == THREADS * UPDATES
            np.testing.assert_array_equal(sess.run(w), -THREADS * UPDATES * np.ones(3))


def test_scatter_add_from_threads_loses_nothing():
    with gf.Graph().as_default():
        v = gf.Variable(np.zeros(5))
        delta = gf.IndexedSlices(gf.constant([1.0, 2.0, 1.0], gf.float64), gf.constant([0, 3, 0]))
        with gf.Session() as sess:
            sess.run(gf.global_variables_initializer())
            run_concurrently(sess, v.scatter_add(delta))
            n = THREADS * UPDATES
            np.testing.assert_array_equal(sess.run(v), [2.0 * n, 0, 0, 2.0 * n, 0])


def _optimizers() -> list:
    """Every optimizer class that ``gf.train`` exports, but wrappers of another
    (``SyncReplicasOptimizer(opt, ...)``, tested in tests/train/test_sync_replicas.py)."""
    return sorted((c for c in vars(gf.train).values() if isinstance(c, type)
                   and issubclass(c, gf.train.Optimizer) and c is not gf.train.Optimizer
                   and "opt" not in inspect.signature(c.__init__).parameters),
                  key=lambda c: c.__name__)


def _make(optimizer_class, global_step):
    """An instance with learning_rate 0.01 and TF's usual value for other required
    arguments (momentum 0.9; AdagradDA's ``global_step``)."""
    required = {"learning_rate": 0.01, "momentum": 0.9, "global_step": global_step}
    params = inspect.signature(optimizer_class.__init__).parameters
    missing = [n for n, p in params.items() if n != "self" and p.default is p.empty
               and n not in required]
    assert not missing, f"{optimizer_class.__name__}: give the test a value for {missing}"
    return optimizer_class(**{n: v for n, v in required.items() if n in params})


def _train_state(optimizer_class, sparse: bool, concurrent: bool) -> list:
    """Variables, slots and global step after THREADS * UPDATES steps on a constant
    gradient, run from THREADS threads or from one."""
    with gf.Graph().as_default() as graph:
        w = gf.Variable(np.linspace(-1.0, 1.0, 6).reshape(3, 2), name="w")
        b = gf.Variable(np.array([0.5, -0.5]), name="b")
        step = gf.train.get_or_create_global_step()
        coefficients = gf.constant(np.arange(6.0).reshape(3, 2) - 2.5)
        rows = gf.gather(w, [0, 2, 2]) if sparse else w
        loss = gf.reduce_sum(rows * coefficients[:rows.shape[0]]) + gf.reduce_sum(b * 3.0)
        train = _make(optimizer_class, step).minimize(loss, global_step=step)
        with gf.Session() as sess:
            sess.run(gf.global_variables_initializer())
            if concurrent:
                run_concurrently(sess, train)
            else:
                for _ in range(THREADS * UPDATES):
                    sess.run(train)
            return sess.run(graph.get_collection(gf.GraphKeys.GLOBAL_VARIABLES))


@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "sparse"])
@pytest.mark.parametrize("optimizer_class", _optimizers(), ids=lambda c: c.__name__)
def test_concurrent_training_steps_are_exact(optimizer_class, sparse):
    together = _train_state(optimizer_class, sparse, concurrent=True)
    one_by_one = _train_state(optimizer_class, sparse, concurrent=False)
    assert len(together) == len(one_by_one) > 2
    for got, want in zip(together, one_by_one, strict=True):
        np.testing.assert_array_equal(got, want)
    assert THREADS * UPDATES in [int(v) for v in together if np.ndim(v) == 0
                                 and np.asarray(v).dtype.kind == "i"]


def _add_inside(variable: gf.Variable, delta):
    """An AssignAdd made in the graph function being traced (the public assign_add puts
    its op in the variable's graph), writing ``variable`` through a capture."""
    graph = gf.get_default_graph()
    ref = graph.capture(variable.op.outputs[0])
    return graph.create_op("AssignAdd", (ref, gf.convert_to_tensor(delta, variable.dtype)),
                           {"use_locking": False}).outputs[0]


def test_updates_inside_graph_functions_lose_nothing():
    with gf.Graph().as_default():
        v = gf.Variable(0.0, dtype=gf.float64)
        counter = gf.Variable(0, dtype=gf.int32)
        add_one = gf.Defun(gf.float64, func_name="add_one")(lambda x: _add_inside(v, x))
        loop = gf.while_loop(lambda i: i < 2,
                             lambda i: i + 1 + 0 * _add_inside(counter, 1), [gf.constant(0)])
        with gf.Session() as sess:
            sess.run(gf.global_variables_initializer())
            run_concurrently(sess, [add_one(gf.constant(1.0, gf.float64)), loop], updates=60)
            assert sess.run(v) == THREADS * 60
            assert sess.run(counter) == THREADS * 60 * 2


def test_reading_runs_take_no_lock_and_writers_name_their_variables():
    with gf.Graph().as_default():
        a = gf.Variable(1.0, name="a")
        b = gf.Variable(2.0, name="b")
        total = a + b
        update = gf.group(gf.assign_add(b, 1.0), gf.assign(a, 3.0))
        noise = gf.random_normal([2])
        inside = gf.cond(gf.constant(True), lambda: _add_inside(a, 1.0), lambda: a + 0.0)

        def writes(fetch):
            op = fetch if isinstance(fetch, gf.Operation) else fetch.op
            return state_writes(required_ops([], [op], set()))
        assert writes(total) == ()
        assert writes(update) == ("a", "b")
        assert writes(inside) == ("a",)
        assert len(writes(noise)) == 1 and writes(noise)[0][0] == "random_stream"


def test_a_failed_concurrent_run_changes_nothing():
    with gf.Graph().as_default():
        v = gf.Variable(0.0, dtype=gf.float64)
        x = gf.placeholder(gf.float64, [])
        checked = gf.assign_add(v, gf.check_numerics(x, "bad delta"))
        with gf.Session() as sess:
            sess.run(gf.global_variables_initializer())
            with pytest.raises(gf.errors.InvalidArgumentError):
                sess.run(checked, {x: np.nan})
            sess.run(checked, {x: 1.0})
            assert sess.run(v) == 1.0


def test_a_run_locking_everything_excludes_key_holders():
    locks = StateLocks()
    log = []
    inside = threading.Event()
    held = locks.acquire(("a", "b"))

    def everything():
        taken = locks.acquire(None)
        log.append("all")
        release(taken)

    def keyed():
        inside.wait()
        taken = locks.acquire(("b",))
        log.append("b")
        release(taken)
    workers = [threading.Thread(target=everything), threading.Thread(target=keyed)]
    for w in workers:
        w.start()
    while not locks._all.locked():  # the whole-store run has taken its gate
        threading.Event().wait(0.001)
    inside.set()
    threading.Event().wait(0.05)
    assert log == []  # neither ran while "a" and "b" are held
    log.append("ab")
    release(held)
    for w in workers:
        w.join(timeout=10)
    assert log == ["ab", "all", "b"]
