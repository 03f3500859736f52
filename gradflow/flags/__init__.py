"""``gf.flags`` / ``gf.app.flags``: TF1's command-line flags, which are absl's.

``DEFINE_string``, ``DEFINE_integer``, ``DEFINE_float``, ``DEFINE_boolean``/``DEFINE_bool``,
``DEFINE_enum``, ``DEFINE_list``, ``DEFINE_multi_*``, ``FLAGS``, ``mark_flag_as_required``
and the validators are ``absl.flags``' own objects, so flags defined through gradflow
and through absl share one registry, as they do in TF1.
"""
from absl.flags import *  # noqa: F401,F403
from absl.flags import FLAGS  # noqa: F401
