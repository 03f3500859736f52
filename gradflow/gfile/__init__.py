"""``gf.gfile``: TF1's file API (``GFile``, ``Exists``, ``MakeDirs``, ``Glob``...) on local paths.

Failures raise TF's error types (``errors.NotFoundError``, ``AlreadyExistsError``,
``FailedPreconditionError``, ``PermissionDeniedError``) rather than ``OSError``.
Remote file systems (``gs://``, ``hdfs://``, ``s3://``) are not supported: such paths
raise ``UnimplementedError``, as TF does for a scheme it has no file system for.
"""
from __future__ import annotations

import contextlib
import errno
import glob as _glob
import os
import shutil
from typing import Iterator

from gradflow.framework import errors

__all__ = ["GFile", "Open", "FastGFile", "Exists", "MakeDirs", "MkDir", "Glob",
           "ListDirectory", "IsDirectory", "Remove", "Rename", "Copy", "DeleteRecursively",
           "Walk", "Stat", "FileStatistics"]

_ERRORS = {errno.ENOENT: errors.NotFoundError, errno.EEXIST: errors.AlreadyExistsError,
           errno.EACCES: errors.PermissionDeniedError, errno.EPERM: errors.PermissionDeniedError,
           errno.ENOTDIR: errors.FailedPreconditionError,
           errno.EISDIR: errors.FailedPreconditionError,
           errno.ENOTEMPTY: errors.FailedPreconditionError}


def _path(name) -> str:
    path = os.fspath(name)
    if isinstance(path, bytes):
        path = path.decode("utf-8")
    if "://" in path and not path.startswith("file://"):
        raise errors.UnimplementedError(
            None, None, f"File system scheme '{path.split('://')[0]}' not implemented "
            f"(file: '{path}')")
    return path[len("file://"):] if path.startswith("file://") else path


@contextlib.contextmanager
def _tf_errors(path: str) -> Iterator[None]:
    """OSErrors become TF's error types, naming the path."""
    try:
        yield
    except OSError as err:
        kind = _ERRORS.get(err.errno, errors.UnknownError)
        raise kind(None, None, f"{path}; {err.strerror or err}") from None


class GFile:
    """A file object (``read``, ``write``, ``readline``, iteration, ``seek``, ``tell``,
    ``size``) opened in ``mode`` ("r", "w", "a", with "b" for bytes)."""

    def __init__(self, name, mode: str = "r"):
        self._name = _path(name)
        if mode.replace("b", "").replace("+", "") not in ("r", "w", "a"):
            raise ValueError(f"mode must be one of 'r', 'w', 'a' (with 'b' or '+'), got "
                             f"{mode!r}")
        self._mode = mode
        with _tf_errors(self._name):
            self._file = open(self._name, mode)

    @property
    def name(self) -> str:
        return self._name

    @property
    def mode(self) -> str:
        return self._mode

    def size(self) -> int:
        return os.path.getsize(self._name)

    def read(self, n: int = -1):
        return self._file.read(n)

    def readline(self):
        return self._file.readline()

    def readlines(self) -> list:
        return self._file.readlines()

    def write(self, file_content) -> None:
        if "b" in self._mode and isinstance(file_content, str):
            file_content = file_content.encode("utf-8")
        elif "b" not in self._mode and isinstance(file_content, bytes):
            file_content = file_content.decode("utf-8")
        self._file.write(file_content)

    def seek(self, offset: int = 0, whence: int = 0) -> int:
        return self._file.seek(offset, whence)

    def tell(self) -> int:
        return self._file.tell()

    def seekable(self) -> bool:
        return True

    def flush(self) -> None:
        self._file.flush()

    def close(self) -> None:
        self._file.close()

    def __iter__(self):
        return iter(self._file)

    def __next__(self):
        return next(self._file)

    def __enter__(self) -> "GFile":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


Open = GFile
FastGFile = GFile


class FileStatistics:
    """What ``Stat`` returns: ``length``, ``mtime_nsec`` and ``is_directory``."""

    def __init__(self, length: int, mtime_nsec: int, is_directory: bool):
        self.length = length
        self.mtime_nsec = mtime_nsec
        self.is_directory = is_directory


def Exists(filename) -> bool:  # noqa: N802 - TF1's public names are CamelCase
    return os.path.exists(_path(filename))


def IsDirectory(dirname) -> bool:  # noqa: N802
    return os.path.isdir(_path(dirname))


def MakeDirs(dirname) -> None:  # noqa: N802
    """Creates ``dirname`` and its missing parents; an existing directory is fine."""
    path = _path(dirname)
    with _tf_errors(path):
        os.makedirs(path, exist_ok=True)


def MkDir(dirname) -> None:  # noqa: N802
    """Creates ``dirname``; its parent must exist (AlreadyExistsError if it exists)."""
    path = _path(dirname)
    with _tf_errors(path):
        os.mkdir(path)


def Glob(filename) -> list[str]:  # noqa: N802
    """The paths matching the pattern ``filename`` (``*``, ``?``, ``[...]``), sorted."""
    return sorted(_glob.glob(_path(filename)))


def ListDirectory(dirname) -> list[str]:  # noqa: N802
    """The entries of ``dirname`` (names, not paths); NotFoundError if it is missing."""
    path = _path(dirname)
    if not os.path.isdir(path):
        raise errors.NotFoundError(None, None, "Could not find directory " + path)
    return sorted(os.listdir(path))


def Remove(filename) -> None:  # noqa: N802
    path = _path(filename)
    with _tf_errors(path):
        os.remove(path)


def Rename(oldname, newname, overwrite: bool = False) -> None:  # noqa: N802
    """Renames a file; AlreadyExistsError if ``newname`` exists and not ``overwrite``."""
    old, new = _path(oldname), _path(newname)
    if not overwrite and os.path.exists(new):
        raise errors.AlreadyExistsError(None, None, f"file already exists: {new}")
    with _tf_errors(old):
        os.replace(old, new)


def Copy(oldpath, newpath, overwrite: bool = False) -> None:  # noqa: N802
    """Copies a file; AlreadyExistsError if ``newpath`` exists and not ``overwrite``."""
    old, new = _path(oldpath), _path(newpath)
    if not overwrite and os.path.exists(new):
        raise errors.AlreadyExistsError(None, None, f"file already exists: {new}")
    with _tf_errors(old):
        shutil.copyfile(old, new)


def DeleteRecursively(dirname) -> None:  # noqa: N802
    """Deletes a directory tree (or a file); NotFoundError if nothing is there."""
    path = _path(dirname)
    with _tf_errors(path):
        if os.path.isdir(path):
            shutil.rmtree(path)
        else:
            os.remove(path)


def Walk(top, in_order: bool = True) -> Iterator[tuple[str, list, list]]:  # noqa: N802
    """``(dirname, subdirs, files)`` per directory under ``top`` (top first if
    ``in_order``, else bottom-up); nothing for a missing ``top``."""
    yield from os.walk(_path(top), topdown=in_order)


def Stat(filename) -> FileStatistics:  # noqa: N802
    path = _path(filename)
    with _tf_errors(path):
        info = os.stat(path)
    return FileStatistics(info.st_size, info.st_mtime_ns, os.path.isdir(path))


