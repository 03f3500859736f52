"""``gf.initializers``: TF1's ``tf.initializers`` namespace (names handed on, nothing new)."""
from gradflow.ops.state import (global_variables_initializer as global_variables,
                                local_variables_initializer as local_variables,
                                variables_initializer as variables)
from gradflow.variables.init_ops import (
    Constant as constant, GlorotNormal as glorot_normal, GlorotUniform as glorot_uniform,
    Identity as identity, Ones as ones, Orthogonal as orthogonal,
    RandomNormal as random_normal, RandomUniform as random_uniform,
    TruncatedNormal as truncated_normal, UniformUnitScaling as uniform_unit_scaling,
    VarianceScaling as variance_scaling, Zeros as zeros, he_normal, he_uniform, lecun_normal,
    lecun_uniform)

__all__ = ["constant", "global_variables", "glorot_normal", "glorot_uniform", "he_normal",
           "he_uniform", "identity", "lecun_normal", "lecun_uniform", "local_variables",
           "ones", "orthogonal", "random_normal", "random_uniform", "truncated_normal",
           "uniform_unit_scaling", "variables", "variance_scaling", "zeros"]
