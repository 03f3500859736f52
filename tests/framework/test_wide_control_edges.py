"""``group`` and ``control_dependencies`` over many ops (issue 20, item 5): each edge made
once, in order, and undone with a failed build. How their time grows with the number of
ops is measured by ``benchmarks/wide_control.py`` beside TensorFlow, not timed here.
"""
import numpy as np

import gradflow as gf


def test_wide_edges_are_each_made_once_in_order():
    with gf.Graph().as_default():
        ops = [gf.no_op(name="n") for _ in range(50)]
        grouped = gf.group(ops, ops[::-1], ops[3])
        assert grouped.control_inputs == ops
        with gf.control_dependencies(ops + ops[:10]), gf.control_dependencies(ops[5:]):
            after = gf.no_op(name="after")
        assert after.control_inputs == ops
        after.add_control_inputs(ops[:7])  # already there: nothing added
        assert after.control_inputs == ops
        assert all(after in op.control_outputs for op in ops)


def test_a_failed_wide_build_leaves_no_edge_behind():
    with gf.Graph().as_default() as graph:
        ops = [gf.no_op(name="n") for _ in range(1000)]
        before = [op.name for op in graph.get_operations()]
        try:
            with graph.atomic():
                gf.group(*ops)
                with gf.control_dependencies(ops):
                    gf.identity(np.ones(2))
                raise RuntimeError("fails after building")
        except RuntimeError:
            pass
        assert [op.name for op in graph.get_operations()] == before
        assert all(op.control_outputs == [] for op in ops)
