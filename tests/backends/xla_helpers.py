"""Shared helpers of the XLA backend tests: sessions with and without global jit."""
from __future__ import annotations

import gradflow as gf
from gradflow.runtime.executor import compile_plan


def jit_config() -> gf.ConfigProto:
    """TF1's way of asking for whole-graph compilation."""
    return gf.ConfigProto(graph_options=gf.GraphOptions(optimizer_options=gf.OptimizerOptions(
        global_jit_level=gf.OptimizerOptions.ON_1)))


def clustered_op_types(graph: gf.Graph, fetches: list, feeds: list, targets: list = (),
                       global_jit: bool = True) -> set:
    """The op types a plan of ``fetches`` compiles, and the plan's cluster count."""
    plan = compile_plan(graph, fetches, feeds, list(targets), global_jit=global_jit)
    names = {name for cluster in plan.clusters for name in cluster}
    return {graph.get_operation_by_name(n).type for n in names}
