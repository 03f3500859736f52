"""The XLA backend: compiles clusters of a plan's ops with XLA, through JAX.

Importing this package registers its cluster compiler with the runtime
(``runtime/clusters.py``); JAX itself is imported only when a plan first asks for
compilation (``ConfigProto``'s ``global_jit_level``, ``jit_scope``, ``compile``).
See docs/xla.md.
"""
from gradflow.backends.xla.cluster import cluster_program
from gradflow.backends.xla.control_flow import lower_function
from gradflow.backends.xla.lowerings_indexing import SEGMENT_REDUCTIONS
from gradflow.backends.xla.lowerings_linalg import SPECIAL_FUNCTIONS
from gradflow.backends.xla.lowerings_tensor_array import element_shape
from gradflow.backends.xla.lowerings_training import RULES as UPDATE_RULES
from gradflow.backends.xla.runtime import jax_module
from gradflow.runtime.clusters import register_cluster_compiler

# the lowering modules register their op types when imported; their tables are public
__all__ = ["cluster_program", "jax_module", "lower_function", "SEGMENT_REDUCTIONS",
           "SPECIAL_FUNCTIONS", "UPDATE_RULES", "element_shape"]

register_cluster_compiler(cluster_program)
