"""``gf.dtypes``: the dtypes and their casts under their ``tf.dtypes`` names."""
from gradflow.framework.dtypes import (  # noqa: F401
    QUANTIZED_DTYPES, DType, as_dtype, bfloat16, bool, complex64, complex128, double, float16,
    float32, float64, half, int8, int16, int32, int64, qint8, qint16, qint32, quint8, quint16,
    resource, string, uint8, uint16, uint32, uint64, variant)
from gradflow.ops.casts import saturate_cast  # noqa: F401
from gradflow.ops.math import cast, complex  # noqa: F401
