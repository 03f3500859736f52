"""``gf.app``: TF1's ``tf.app``: ``run(main, argv)`` and the ``flags`` module."""
from __future__ import annotations

import sys
from typing import Callable, Optional

from absl import app as _absl_app

import gradflow.flags as flags

__all__ = ["run", "flags"]


def _parse_known_flags(argv: list) -> list:
    """Parses the defined flags; the rest (unknown flags too) go on to ``main``, as in TF1."""
    return flags.FLAGS(argv, known_only=True)


def run(main: Optional[Callable] = None, argv: Optional[list] = None) -> None:
    """Parses the flags in ``argv`` (default ``sys.argv``) and exits with ``main(argv)``.

    ``main`` defaults to the ``main`` of the program's ``__main__`` module, as in TF1;
    it gets the arguments that are not defined flags (the program name first).
    """
    main = main or sys.modules["__main__"].main
    _absl_app.run(main=main, argv=argv, flags_parser=_parse_known_flags)
