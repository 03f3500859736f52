"""What the readers' limits hold crafted files to: seconds and peak bytes to refuse each.

Crafts, in a temporary folder, the files of issue 20 (a FIFO and a link to
``/dev/zero`` as a graph file and as a checkpoint, a 1 GiB deflate bomb and an LZMA
member for a six-element variable, a header declaring 3 GiB, an 80 KB op name 40,000
scopes deep, function tables of 25,000 and 100,000 entries; record files: a FIFO, a
link to ``/dev/zero``, a length of 1 TiB, a GZIP record declaring 4 GiB and one
declaring 512 MiB that ends after inflating 256 MiB) and prints, for each, the
time and the peak Python allocation (tracemalloc) of loading it, and the error's first
words. Times are taken without tracing; the peak comes from a second, traced run.

    python benchmarks/hostile_limits.py [--bomb-mib 1024]
"""
from __future__ import annotations

import argparse
import io
import json
import os
import struct
import tempfile
import time
import tracemalloc
import zipfile
import zlib

import numpy as np

from common import Table, load, print_tables


def measured(action) -> tuple[float, int, str]:
    """Seconds (untraced), peak traced bytes (a second, traced run) and the outcome."""
    start = time.perf_counter()
    outcome = _outcome(action)
    seconds = time.perf_counter() - start
    tracemalloc.start()
    try:
        _outcome(action)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return seconds, peak, outcome


def _outcome(action) -> str:
    try:
        action()
    except Exception as err:  # the outcome is what is reported
        return f"{type(err).__name__}: {str(err)[:90]}"
    return "loaded"


def bomb(checkpoint: bytes, declared: tuple, method: int, written: int) -> bytes:
    """``checkpoint`` with member ``w.npy`` declaring ``declared`` float32 elements and
    holding ``written`` zero bytes, compressed with ``method``."""
    source = zipfile.ZipFile(io.BytesIO(checkpoint))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", compression=method) as archive:
        for info in source.infolist():
            if info.filename != "w.npy":
                archive.writestr(info, source.read(info))
                continue
            with archive.open("w.npy", "w", force_zip64=True) as member:
                np.lib.format.write_array_header_1_0(
                    member, {"descr": "<f4", "fortran_order": False, "shape": declared})
                chunk = bytes(1 << 20)
                for start in range(0, written, len(chunk)):
                    member.write(chunk[:written - start])
    return out.getvalue()


def function_table(count: int, graphs: int) -> dict:
    placeholder = {"name": "a", "type": "Placeholder", "attrs": {
        "dtype": {"kind": "dtype", "value": "float32"}, "shape": {"kind": "shape", "value": []}}}
    return {"format": "gradflow.graph", "version": 1,
            "graphs": [{"name": f"f{i}", "outer": graphs, "ops": [placeholder],
                        "inputs": ["a:0"], "outputs": ["a:0"]} for i in range(graphs)]
            + [{"ops": []}],
            "functions": [{"name": f"function{i}", "graph": i % graphs, "inputs": ["a:0"],
                           "outputs": ["a:0"]} for i in range(count)]}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bomb-mib", type=int, default=1024)
    args = parser.parse_args(argv)
    gf = load("gradflow")
    load_graph = gf.tools.load_graph
    folder = tempfile.mkdtemp(prefix="hostile-")
    table = Table("Crafted files: what refusing each costs",
                  ["file", "size", "seconds", "peak MiB", "outcome"])

    def row(name: str, size: int, action) -> None:
        seconds, peak, outcome = measured(action)
        table.add(name, f"{size / 1e6:.2f} MB", f"{seconds:.4f}", f"{peak / 2**20:.2f}",
                  outcome)

    # graph files that are not regular files
    for kind in ("fifo", "/dev/zero"):
        stem = os.path.join(folder, f"special-{kind.strip('/').replace('/', '-')}")
        if kind == "fifo":
            os.mkfifo(stem + ".json")
        else:
            os.symlink("/dev/zero", stem + ".json")
        row(f"graph file: {kind}", 0, lambda s=stem: load_graph(s))

    # checkpoints for a six-element variable: gradflow's former NPZ format, which Saver
    # still restores (it writes TF's V2 bundles, whose limits tests/io covers)
    graph = gf.Graph()
    with graph.as_default():
        gf.Variable(np.zeros((2, 3), np.float32), name="w")
        saver = gf.train.Saver()
        sess = gf.Session()
        sess.run(gf.global_variables_initializer())
    prefix = os.path.join(folder, "ckpt")
    np.savez(prefix + ".npz", w=np.zeros((2, 3), np.float32))
    clean = open(prefix + ".npz", "rb").read()
    crafted = {
        f"checkpoint: {args.bomb_mib} MiB deflate bomb": bomb(
            clean, (args.bomb_mib << 18,), zipfile.ZIP_DEFLATED, args.bomb_mib << 20),
        "checkpoint: LZMA member": bomb(clean, (2, 3), zipfile.ZIP_LZMA, 24),
        "checkpoint: header declaring 3 GiB": bomb(clean, (3 << 28,), zipfile.ZIP_STORED, 0),
    }
    for name, data in crafted.items():
        with open(prefix + ".npz", "wb") as f:
            f.write(data)
        with graph.as_default():
            row(name, len(data), lambda: saver.restore(sess, prefix))
    for kind in ("fifo", "/dev/zero"):
        os.remove(prefix + ".npz")
        if kind == "fifo":
            os.mkfifo(prefix + ".npz")
        else:
            os.symlink("/dev/zero", prefix + ".npz")
        with graph.as_default():
            row(f"checkpoint: {kind}", 0, lambda: saver.restore(sess, prefix))

    # an absurd op name, function tables
    name = "/".join(["a"] * 40_000)
    documents = {
        "graph: 80 KB name, 40,000 scopes": {
            "format": "gradflow.graph", "version": 1,
            "graphs": [{"ops": [{"name": name, "type": "NoOp"}]}]},
        "graph: 100,000 functions in 1,000 graphs": function_table(100_000, 1_000),
        "graph: 25,000 functions in 250 graphs": function_table(25_000, 250),
    }
    for label, document in documents.items():
        stem = os.path.join(folder, f"doc{len(label)}")
        text = json.dumps(document)
        with open(stem + ".json", "w") as f:
            f.write(text)
        row(label, len(text), lambda s=stem: load_graph(s))
    record_rows(gf, folder, row)
    print_tables([table])
    return 0


def gzip_record(masked_crc32c, declared_mib: int, written_mib: int) -> bytes:
    """A GZIP TFRecord file: one record header declaring ``declared_mib`` MiB, then
    ``written_mib`` MiB of zeros."""
    header = struct.pack("<Q", declared_mib << 20)
    packer = zlib.compressobj(9, zlib.DEFLATED, 31)
    parts = [packer.compress(header + struct.pack("<I", masked_crc32c(header)))]
    parts += [packer.compress(bytes(1 << 20)) for _ in range(written_mib)]
    return b"".join(parts + [packer.flush()])


def record_rows(gf, folder: str, row) -> None:
    """The record readers (``tf_record_iterator``; ``summary_iterator`` shares them)."""
    from gradflow.io.tfrecord import masked_crc32c  # gf.io is TF's tf.io namespace

    def read(path: str, compression: str = ""):
        return lambda: list(gf.python_io.tf_record_iterator(path, compression))

    for kind in ("fifo", "/dev/zero"):
        path = os.path.join(folder, f"records-{kind.strip('/').replace('/', '-')}")
        if kind == "fifo":
            os.mkfifo(path)
        else:
            os.symlink("/dev/zero", path)
        row(f"records: {kind}", 0, read(path))
    header = struct.pack("<Q", 1 << 40)
    path = os.path.join(folder, "records-huge")
    with open(path, "wb") as f:
        f.write(header + struct.pack("<I", masked_crc32c(header)) + b"abcd")
    row("records: length of 1 TiB", 16, read(path))
    for label, declared, written in (("GZIP record declaring 4 GiB", 4096, 64),
                                     ("GZIP 512 MiB record, 256 MiB inflated", 512, 256)):
        data = gzip_record(masked_crc32c, declared, written)
        path = os.path.join(folder, f"records-{declared}")
        with open(path, "wb") as f:
            f.write(data)
        row(f"records: {label}", len(data), read(path, "GZIP"))


if __name__ == "__main__":
    raise SystemExit(main())
