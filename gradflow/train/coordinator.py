"""``train.Coordinator``: lets threads (queue runners, loops) stop together and report
the first error."""
from __future__ import annotations

import contextlib
import sys
import threading
import time
from typing import Iterator, Optional, Sequence

from gradflow.framework import errors

__all__ = ["Coordinator"]


class Coordinator:
    """A stop flag shared by threads, with the exception that asked for the stop."""

    def __init__(self, clean_stop_exception_types: Optional[Sequence[type]] = None):
        self._clean_stop = tuple(clean_stop_exception_types
                                 if clean_stop_exception_types is not None
                                 else (errors.OutOfRangeError,))
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._exc_info = None
        self._threads: set = set()
        self._joined = False

    def request_stop(self, ex: Optional[BaseException] = None) -> None:
        """Asks every thread to stop; ``ex`` (unless a clean-stop type) is re-raised by
        ``join``."""
        with self._lock:
            if ex is not None and not isinstance(ex, self._clean_stop) and \
                    self._exc_info is None and not self._joined:
                info = sys.exc_info() if sys.exc_info()[1] is ex else \
                    (type(ex), ex, ex.__traceback__)
                self._exc_info = info
            self._stop.set()

    def clear_stop(self) -> None:
        with self._lock:
            self._joined = False
            self._exc_info = None
            self._stop.clear()

    def should_stop(self) -> bool:
        return self._stop.is_set()

    @contextlib.contextmanager
    def stop_on_exception(self) -> Iterator[None]:
        """``with coord.stop_on_exception():`` turns an exception into a stop request."""
        try:
            yield
        except Exception as err:  # noqa: BLE001 - reported through join(), as TF does
            self.request_stop(err)

    def wait_for_stop(self, timeout: Optional[float] = None) -> bool:
        return self._stop.wait(timeout)

    def register_thread(self, thread: threading.Thread) -> None:
        with self._lock:
            self._threads.add(thread)

    def join(self, threads: Optional[Sequence[threading.Thread]] = None,
             stop_grace_period_secs: float = 120, ignore_live_threads: bool = False) -> None:
        """Waits for the threads to end once a stop is requested; raises what stopped them."""
        with self._lock:
            threads = set(self._threads) | set(threads or ())
        while any(t.is_alive() for t in threads) and not self.wait_for_stop(0.05):
            pass
        deadline = time.time() + stop_grace_period_secs
        while any(t.is_alive() for t in threads) and time.time() < deadline:
            time.sleep(0.01)
        with self._lock:
            self._joined = True
            self._threads = set()
            info, self._exc_info = self._exc_info, None
        if info is not None:
            raise info[1].with_traceback(info[2])
        alive = sorted(t.name for t in threads if t.is_alive())
        if alive and not ignore_live_threads:
            raise RuntimeError(f"Coordinator stopped with threads still running: "
                               f"{' '.join(alive)}")

    @property
    def joined(self) -> bool:
        return self._joined

    def raise_requested_exception(self) -> None:
        with self._lock:
            if self._exc_info is not None:
                raise self._exc_info[1].with_traceback(self._exc_info[2])
