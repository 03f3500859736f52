"""The TF1 variable store: ``variable_scope``, ``get_variable`` and initializers.

Part of the TF1 API floor: built on the engine's public names, never imported by it.
"""
from gradflow.variables import initializers
from gradflow.variables.init_ops import (
    constant_initializer, glorot_normal_initializer, glorot_uniform_initializer,
    ones_initializer, orthogonal_initializer, random_normal_initializer,
    random_uniform_initializer, truncated_normal_initializer,
    uniform_unit_scaling_initializer, variance_scaling_initializer, zeros_initializer)
from gradflow.variables.scope import (
    AUTO_REUSE, VariableAggregation, VariableScope, VariableSynchronization, get_local_variable,
    get_variable, get_variable_scope, no_regularizer, variable_op_scope, variable_scope)
from gradflow.variables.template import make_template

__all__ = ["initializers", "constant_initializer", "glorot_normal_initializer",
           "glorot_uniform_initializer", "ones_initializer", "orthogonal_initializer",
           "random_normal_initializer", "random_uniform_initializer",
           "truncated_normal_initializer", "uniform_unit_scaling_initializer",
           "variance_scaling_initializer", "zeros_initializer", "AUTO_REUSE",
           "VariableAggregation", "VariableScope", "VariableSynchronization",
           "get_local_variable", "get_variable", "get_variable_scope", "no_regularizer",
           "variable_op_scope", "variable_scope", "make_template"]
