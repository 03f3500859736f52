"""``gf.logging``: TF1's ``tf.logging`` (levels, ``set_verbosity``, ``info``, ``vlog``...).

Messages go to Python's ``logging`` logger named ``"gradflow"`` (the logger the rest
of gradflow logs to); its default handler prints them as TF1 does
(``INFO:tensorflow:...``), and as absl formats them when absl's handler is in place.
As in TF1, the default verbosity is WARN.
"""
from __future__ import annotations

import logging as _logging
import sys
import threading
from typing import Any

__all__ = ["DEBUG", "INFO", "WARN", "ERROR", "FATAL", "set_verbosity", "get_verbosity",
           "debug", "info", "warn", "warning", "error", "fatal", "log", "log_if",
           "log_every_n", "log_first_n", "vlog", "flush", "TaskLevelStatusMessage",
           "get_logger"]

DEBUG = _logging.DEBUG
INFO = _logging.INFO
WARN = _logging.WARN
ERROR = _logging.ERROR
FATAL = _logging.FATAL

_logger = _logging.getLogger("gradflow")
_lock = threading.Lock()
_counts: dict = {}


def get_logger() -> _logging.Logger:
    """The Python logger every ``gf.logging`` call writes to; it gets a stderr handler
    (and TF1's default WARN level) the first time it is asked for here."""
    if not _logger.handlers and not _logging.getLogger().handlers:
        handler = _logging.StreamHandler(sys.stderr)
        # the lines TF1 prints (``INFO:tensorflow:step 3``), which programs' logs show
        handler.setFormatter(_logging.Formatter("%(levelname)s:tensorflow:%(message)s"))
        _logger.addHandler(handler)
        if _logger.level == _logging.NOTSET:
            _logger.setLevel(WARN)
    return _logger


def set_verbosity(v: int) -> None:
    """Sets the threshold: messages below level ``v`` are dropped."""
    get_logger().setLevel(v)


def get_verbosity() -> int:
    """The current threshold (``gf.logging.WARN`` unless ``set_verbosity`` changed it)."""
    return get_logger().getEffectiveLevel()


def log(level: int, msg: Any, *args, **kwargs) -> None:
    get_logger().log(level, msg, *args, **kwargs)


def debug(msg: Any, *args, **kwargs) -> None:
    get_logger().debug(msg, *args, **kwargs)


def info(msg: Any, *args, **kwargs) -> None:
    get_logger().info(msg, *args, **kwargs)


def warning(msg: Any, *args, **kwargs) -> None:
    get_logger().warning(msg, *args, **kwargs)


warn = warning


def error(msg: Any, *args, **kwargs) -> None:
    get_logger().error(msg, *args, **kwargs)


def fatal(msg: Any, *args, **kwargs) -> None:
    get_logger().fatal(msg, *args, **kwargs)


def flush() -> None:
    for handler in get_logger().handlers:
        handler.flush()


def vlog(level: int, msg: Any, *args, **kwargs) -> None:
    """Logs at ``level`` (TF1's verbose logging takes a plain level, as here)."""
    get_logger().log(level, msg, *args, **kwargs)


def log_if(level: int, msg: Any, condition: bool, *args) -> None:
    if condition:
        log(level, msg, *args)


def _count(key) -> int:
    with _lock:
        count = _counts.get(key, 0)
        _counts[key] = count + 1
    return count


def _caller_key() -> tuple:
    frame = sys._getframe(2)
    return frame.f_code.co_filename, frame.f_lineno


def log_every_n(level: int, msg: Any, n: int, *args) -> None:
    """Logs on the 1st, (n+1)th, (2n+1)th... call from the same line."""
    if n < 1:
        raise ValueError(f"n must be a positive integer, got {n}")
    if _count(_caller_key()) % n == 0:
        log(level, msg, *args)


def log_first_n(level: int, msg: Any, n: int, *args) -> None:
    """Logs only the first ``n`` calls from the same line."""
    if _count(_caller_key()) < n:
        log(level, msg, *args)


def TaskLevelStatusMessage(msg: Any) -> None:  # noqa: N802 - TF1's public name
    error(msg)
