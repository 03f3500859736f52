"""``gf.debugging``: run-time checks under their ``tf.debugging`` names."""
from gradflow.ops.logging_ops import (  # noqa: F401
    Assert, assert_equal, assert_greater, assert_greater_equal, assert_integer, assert_less,
    assert_less_equal, assert_negative, assert_non_negative, assert_non_positive,
    assert_none_equal, assert_positive, assert_proper_iterable, assert_rank,
    assert_rank_at_least, assert_scalar, assert_type, is_numeric_tensor)
from gradflow.ops.numerics import add_check_numerics_ops, check_numerics  # noqa: F401
from gradflow.ops.checks import (  # noqa: F401
    assert_all_finite, assert_near, assert_rank_in, assert_same_float_dtype, assert_shapes)
from gradflow.ops.math import (  # noqa: F401
    is_finite, is_inf, is_nan, is_non_decreasing, is_strictly_increasing)

__all__ = ["Assert", "assert_equal", "assert_greater", "assert_greater_equal",
           "assert_integer", "assert_less", "assert_less_equal", "assert_negative",
           "assert_non_negative", "assert_non_positive", "assert_none_equal",
           "assert_positive", "assert_proper_iterable", "assert_rank", "assert_rank_at_least",
           "assert_scalar", "assert_type", "is_numeric_tensor", "add_check_numerics_ops",
           "check_numerics", "assert_all_finite", "assert_near", "assert_rank_in",
           "assert_same_float_dtype", "is_finite", "is_inf", "is_nan", "is_non_decreasing",
           "is_strictly_increasing", "assert_shapes"]
