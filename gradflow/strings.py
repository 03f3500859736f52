"""``gf.strings``: TF1's ``tf.strings`` names (string tensors hold ``bytes``).

``split``, ``bytes_split``, ``unicode_decode``/``unicode_split`` and ``unicode_encode``
give plain tensors where TF does; where TF's result would be a ``RaggedTensor`` they raise
a ValueError (gradflow has none). ``unicode_script`` is not provided (it needs ICU's
script tables).
"""
from gradflow.ops.parsing_ops import strings_split as split  # noqa: F401
from gradflow.ops.string_ops import (  # noqa: F401
    as_string, reduce_join, regex_full_match, regex_replace, substr,
    unsorted_segment_join)
from gradflow.ops.string_ops import string_format as format  # noqa: F401
from gradflow.ops.string_ops import string_join as join  # noqa: F401
from gradflow.ops.string_ops import string_length as length  # noqa: F401
from gradflow.ops.string_ops import string_lower as lower  # noqa: F401
from gradflow.ops.string_ops import string_strip as strip  # noqa: F401
from gradflow.ops.string_ops import string_to_hash_bucket as to_hash_bucket  # noqa: F401
from gradflow.ops.string_ops import (  # noqa: F401
    string_to_hash_bucket_fast as to_hash_bucket_fast)
from gradflow.ops.string_ops import (  # noqa: F401
    string_to_hash_bucket_strong as to_hash_bucket_strong)
from gradflow.ops.string_ops import string_to_number as to_number  # noqa: F401
from gradflow.ops.string_ops import string_upper as upper  # noqa: F401
from gradflow.ops.unicode_ops import (  # noqa: F401
    bytes_split, ngrams, unicode_decode, unicode_decode_with_offsets, unicode_encode,
    unicode_split, unicode_split_with_offsets, unicode_transcode)
