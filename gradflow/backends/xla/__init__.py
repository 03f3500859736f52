"""The XLA backend: compiles clusters of a plan's ops with XLA, through JAX.

Importing this package registers its cluster compiler with the runtime
(``runtime/clusters.py``); JAX itself is imported only when a plan first asks for
compilation (``ConfigProto``'s ``global_jit_level``, ``jit_scope``, ``compile``).
See docs/xla.md.
"""
from gradflow.backends.xla.cluster import cluster_program
from gradflow.backends.xla.runtime import jax_module
from gradflow.runtime.clusters import register_cluster_compiler

__all__ = ["cluster_program", "jax_module"]

register_cluster_compiler(cluster_program)
