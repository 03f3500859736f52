"""Safe NPZ reading and atomic writing, shared by checkpoints and saved graphs.

Reading never unpickles (``allow_pickle=False``) and checks each array's header (dtype
and shape) against a size limit, and against what the caller needs, before its data is
read, so a hostile file can neither run code nor make the reader allocate more than
the caller allows. Only regular files are opened (a FIFO or a link to a device is
refused before anything is read); members must be stored or deflated (their
inflation is then bounded by what is read) and declare the size their header implies;
only a member's header and the bytes its array needs are ever inflated.
"""
from __future__ import annotations

import contextlib
import lzma
import math
import os
import stat
import tempfile
import zipfile
import zlib
from typing import Iterator, Optional

import numpy as np

__all__ = ["NpzReader", "write_npz", "atomic_write_text", "open_regular"]

# Compressions whose inflation zipfile bounds by the bytes asked for (LZMA and bzip2
# members inflate whole input chunks: a small chunk may hold gigabytes).
_BOUNDED_COMPRESSIONS = {zipfile.ZIP_STORED: "stored", zipfile.ZIP_DEFLATED: "deflated"}
# The most deflate can inflate: one 258-byte match per ~2 bits of input, ~1032 to 1.
_MAX_DEFLATE_RATIO = 1032


def open_regular(path: str, what: str):
    """``path`` opened for binary reading if it is a regular file (links followed).

    A FIFO, a device (``/dev/zero``), a socket or a directory is refused at once, with a
    ValueError naming the file: opening does not block (``O_NONBLOCK``) and nothing is
    read before the check.
    """
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) |
                     getattr(os, "O_CLOEXEC", 0))
    except OSError as err:
        raise ValueError(f"{path}: cannot open the {what}: {err.strerror}") from None
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise ValueError(f"{path}: the {what} is not a regular file "
                             f"({_file_kind(mode)}); only regular files are read")
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def _file_kind(mode: int) -> str:
    for test, kind in ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"),
                       (stat.S_ISDIR, "a directory")):
        if test(mode):
            return kind
    return "not a plain file"


class NpzReader:
    """Reads the arrays of an ``.npz`` archive one at a time, headers checked first.

    Only members named ``<key>.npy`` are arrays; each is read straight from its member
    (never through ``np.load``, which would also return other members as raw bytes).
    Raises ValueError for a file that is not an NPZ archive, a member that is not a
    plain (non-object) NumPy array, or an array larger than ``max_bytes``.
    """

    def __init__(self, path: str, max_bytes: int):
        self._path = path
        self._max_bytes = max_bytes
        self._file = open_regular(path, "NPZ archive")
        self._size = os.fstat(self._file.fileno()).st_size
        try:
            if not zipfile.is_zipfile(self._file):
                raise ValueError(f"{path} is not an NPZ archive (not a zip file)")
            self._zip = zipfile.ZipFile(self._file)
        except _ARCHIVE_ERRORS as err:
            self._file.close()
            raise ValueError(f"{path} is not a readable NPZ archive: {err}") from None
        except BaseException:
            self._file.close()
            raise
        self._members = {name[:-4]: name for name in self._zip.namelist()
                         if name.endswith(".npy")}

    @property
    def keys(self) -> list[str]:
        return list(self._members)

    def header(self, key: str) -> tuple[tuple, np.dtype]:
        """The shape and dtype of array ``key``, read without reading its data."""
        shape, dtype, _ = self._header(key)
        return shape, dtype

    def _header(self, key: str) -> tuple[tuple, np.dtype, int]:
        """Shape, dtype and header length of array ``key``; checks its member's
        compression first (only the header's bytes are inflated)."""
        info = self._zip.getinfo(self._members[key])
        if info.compress_type not in _BOUNDED_COMPRESSIONS:
            raise ValueError(f"{self._path}: array {key!r} is compressed with method "
                             f"{info.compress_type}; only stored and deflated members are "
                             "read (other methods inflate without a bound)")
        try:
            with self._zip.open(info) as stream:
                shape, _, dtype = _read_header(stream)
                header_bytes = stream.tell()
        except _ARCHIVE_ERRORS as err:
            raise ValueError(f"{self._path}: array {key!r} has a malformed header: {err}") \
                from None
        if dtype.hasobject:
            raise ValueError(f"{self._path}: array {key!r} holds Python objects ({dtype}); "
                             "only plain numeric, bool and fixed-width string arrays load")
        if any(d < 0 for d in shape):
            raise ValueError(f"{self._path}: array {key!r} has a negative dimension: "
                             f"{list(shape)}")
        return shape, dtype, header_bytes

    def read(self, key: str, max_elements: Optional[int] = None) -> np.ndarray:
        """Array ``key``; ValueError if it exceeds the byte limit, holds more than
        ``max_elements`` elements (what the caller's target needs), declares more
        bytes than its member's data can inflate to (deflate: ~1032x) or a member size
        its header does not imply, or is malformed. All is checked before any
        of its data is inflated; then only the bytes the header declares are read."""
        shape, dtype, header_bytes = self._header(key)
        count = math.prod(shape)
        if max_elements is not None and count > max_elements:
            raise ValueError(f"{self._path}: array {key!r} of shape {list(shape)} holds "
                             f"{count} elements; its target needs at most {max_elements}")
        # Python ints: no overflow; an empty itemsize still costs one byte per element.
        nbytes = count * max(dtype.itemsize, 1)
        if nbytes > self._max_bytes:
            raise ValueError(f"{self._path}: array {key!r} of shape {list(shape)} and dtype "
                             f"{dtype} needs {nbytes} bytes, over the limit of "
                             f"{self._max_bytes}")
        info = self._zip.getinfo(self._members[key])
        declared = header_bytes + count * dtype.itemsize
        # the data must be in the file: deflate inflates at most ~1032x, storing 1x
        ratio = _MAX_DEFLATE_RATIO if info.compress_type == zipfile.ZIP_DEFLATED else 1
        if info.compress_size > self._size or declared > ratio * info.compress_size + 1024:
            raise ValueError(f"{self._path}: array {key!r} declares {declared} bytes from "
                             f"{info.compress_size} bytes of member data in a file of "
                             f"{self._size} bytes; more than the data can hold")
        if info.file_size != declared:
            raise ValueError(f"{self._path}: array {key!r} declares {info.file_size} bytes "
                             f"inflated, but its header implies {declared}")
        try:
            with self._zip.open(info) as stream:
                return np.lib.format.read_array(stream, allow_pickle=False)
        except _ARCHIVE_ERRORS as err:
            raise ValueError(f"{self._path}: array {key!r} is corrupt: {err}") from None

    def close(self) -> None:
        self._zip.close()
        self._file.close()

    def __enter__(self) -> "NpzReader":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


# What reading a damaged zip member can raise: bad structure, bad compressed data,
# unsupported compression or encryption, short data.
_ARCHIVE_ERRORS = (OSError, ValueError, EOFError, RuntimeError, NotImplementedError,
                   zipfile.BadZipFile, zlib.error, lzma.LZMAError)


def _read_header(stream) -> tuple:
    version = np.lib.format.read_magic(stream)
    if version == (1, 0):
        return np.lib.format.read_array_header_1_0(stream)
    return np.lib.format.read_array_header_2_0(stream)


@contextlib.contextmanager
def _atomic_target(path: str) -> Iterator[str]:
    """A temporary path beside ``path`` that replaces ``path`` if the block succeeds.

    Missing parent directories are created first.
    """
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    fd, temp = tempfile.mkstemp(dir=directory, prefix=".tmp-", suffix=os.path.basename(path))
    os.close(fd)
    try:
        yield temp
        os.chmod(temp, 0o666 & ~_umask())
        os.replace(temp, path)
    finally:
        if os.path.exists(temp):
            os.remove(temp)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def write_npz(path: str, arrays: dict, compress: bool = False) -> None:
    """Writes ``arrays`` to ``path`` atomically (readers never see a half-written file)."""
    method = zipfile.ZIP_DEFLATED if compress else zipfile.ZIP_STORED
    with _atomic_target(path) as temp, zipfile.ZipFile(temp, "w", compression=method) as archive:
        for key, array in arrays.items():
            with archive.open(key + ".npy", "w", force_zip64=True) as member:
                np.lib.format.write_array(member, np.asarray(array), allow_pickle=False)


def atomic_write_text(path: str, text: str) -> None:
    with _atomic_target(path) as temp:
        with open(temp, "w", encoding="utf-8") as f:
            f.write(text)
