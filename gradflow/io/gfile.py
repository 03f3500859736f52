"""``gf.io.gfile``: the file API under its TF2 names (``exists``, ``makedirs``, ``glob``...).
``join`` is ``os.path.join``, as TF's is for local paths."""
from os.path import join  # noqa: F401

from gradflow.gfile import (  # noqa: F401
    Copy as copy, DeleteRecursively as rmtree, Exists as exists, GFile, Glob as glob,
    IsDirectory as isdir, ListDirectory as listdir, MakeDirs as makedirs, MkDir as mkdir,
    Remove as remove, Rename as rename, Stat as stat, Walk as walk)

__all__ = ["GFile", "copy", "exists", "glob", "isdir", "join", "listdir", "makedirs",
           "mkdir", "remove", "rename", "rmtree", "stat", "walk"]
