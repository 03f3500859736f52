"""Hostile files: the graph loader and the checkpoint loader fuzzed with mutated and
random files. Only clean, documented exceptions come out: never a crash, a hang, code
execution or an allocation beyond the limits."""
import contextlib
import copy
import io
import json
import os
import pathlib
import pickle
import time
import signal
import tracemalloc
import warnings
import zipfile

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import gradflow as gf
from gradflow.framework import errors
from gradflow.tools import LoadLimits, load_graph, save_graph
from gradflow.tools.npz_io import NpzReader, write_npz

FUZZ_EXAMPLES = int(os.environ.get("GRADFLOW_FUZZ_EXAMPLES", "150"))
FUZZ = settings(max_examples=FUZZ_EXAMPLES, deadline=None, database=None, derandomize=True,
                suppress_health_check=list(HealthCheck))
CHECKPOINT_ERRORS = (ValueError, errors.NotFoundError, errors.InvalidArgumentError,
                     errors.DataLossError)


@contextlib.contextmanager
def watchdog(seconds: int = 20):
    """Fails the example instead of hanging forever."""
    def expire(*_):
        raise TimeoutError(f"no answer within {seconds} s: the loader hangs")
    previous = signal.signal(signal.SIGALRM, expire)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


# ------------------------------------------------------------------ seed files
def _seed_graph() -> gf.Graph:
    """A graph using every attr kind, functions, loops, TensorArrays and collections."""
    graph = gf.Graph()
    with graph.as_default():
        w = gf.Variable(np.linspace(-1, 1, 6).reshape(3, 2), name="w")
        x = gf.placeholder(gf.float64, [None, 3], name="x")
        with gf.name_scope("layer"), gf.device("/cpu:0"):
            h = gf.tanh(gf.matmul(x, w))
        gf.constant(["a", b"\x00b"], name="names")
        gf.constant(np.int64(7), name="seven")
        loss = gf.reduce_mean(h * h, name="loss")

        @gf.Defun(gf.float64)
        def cube(t):
            return t * t * t

        branch = gf.cond(loss > 0.0, lambda: cube(loss) + h[0, 0], lambda: loss)
        _, looped = gf.while_loop(lambda i, a: i < 3, lambda i, a: (i + 1, a * 1.5),
                                  [0, branch])
        ta = gf.TensorArray(gf.float64, size=2).write(0, looped).write(1, loss)
        out = gf.identity(gf.reduce_sum(ta.stack()), name="out")
        gf.gradients(out, [w, x])
        gf.add_to_collection("outputs", out)
        gf.add_to_collection("ops", out.op)
    return graph


@pytest.fixture(scope="module")
def seed_files(tmp_path_factory):
    folder = tmp_path_factory.mktemp("seed")
    save_graph(_seed_graph(), str(folder / "model"))
    return ((folder / "model.json").read_bytes(), (folder / "model.npz").read_bytes())


def _write(folder, json_bytes: bytes, npz_bytes: bytes) -> str:
    (folder / "m.json").write_bytes(json_bytes)
    (folder / "m.npz").write_bytes(npz_bytes)
    return str(folder / "m")


def _load_cleanly(path: str, limits: LoadLimits = None):
    """load_graph either gives a Graph or raises ValueError; nothing else."""
    with watchdog():
        try:
            graph = load_graph(path, limits)
        except ValueError as err:
            assert str(err), "an empty error message"
            return None
    assert isinstance(graph, gf.Graph)
    return graph


# -------------------------------------------------------------- JSON mutations
def _paths(document) -> list:
    """Every (container, key) position of a JSON document, iteratively."""
    found, stack = [], [document]
    while stack:
        node = stack.pop()
        items = node.items() if isinstance(node, dict) else enumerate(node) \
            if isinstance(node, list) else ()
        for key, child in items:
            found.append((node, key))
            stack.append(child)
    return found


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-2**70, 2**70) | st.sampled_from([
        0, -1, 1, 2**31, 2**63, 10**30, "nan", "inf", "float32", "int32", "string", "variant",
        "a0", "a1", "x:0", "x:1", "loss:0", "w", "nowhere:0", "layer/MatMul", "", "/", "x/",
        "Const", "Placeholder", "While", "If", "PartitionedCall", "Evil", "array", "scalar",
        "function", "list", "shape", "dtype", "bytes", "string_array", "pickle", "!!"]) |
    st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(
        st.sampled_from(["kind", "value", "key", "shape", "name", "type", "inputs", "ops",
                         "outer", "graph", "attrs", "op", "tensor"]) | st.text(max_size=4),
        inner, max_size=4),
    max_leaves=8)


class Mutated:
    """A mutated document that shows only its edits when Hypothesis reports it."""

    def __init__(self, document, edits: list):
        self.document = document
        self.edits = edits

    def __repr__(self) -> str:
        return f"Mutated({self.edits})"


@st.composite
def json_edits(draw, document):
    """A copy of ``document`` with 1-4 structural edits at random positions."""
    document = copy.deepcopy(document)
    edits = []
    for _ in range(draw(st.integers(1, 4))):
        positions = _paths(document)
        node, key = positions[draw(st.integers(0, len(positions) - 1))]
        action = draw(st.sampled_from(["replace", "delete", "splice", "duplicate"]))
        edits.append((action, key, repr(node[key])[:80]))
        if action == "replace":
            node[key] = draw(JSON_VALUES)
        elif action == "delete":
            del node[key]
        elif action == "splice":  # a value from elsewhere in the file: plausibly typed
            other_node, other_key = positions[draw(st.integers(0, len(positions) - 1))]
            node[key] = copy.deepcopy(other_node[other_key])
        elif isinstance(node, list):
            node.insert(key, copy.deepcopy(node[key]))
        else:
            node[key] = [node[key], node[key]]
        edits[-1] += (repr(node[key])[:80] if action != "delete" else "",)
    return Mutated(document, edits)


def test_fuzz_structured_json_mutations(seed_files, tmp_path):
    json_bytes, npz_bytes = seed_files
    document = json.loads(json_bytes)

    @FUZZ
    @given(json_edits(document))
    def check(mutated):
        _load_cleanly(_write(tmp_path, json.dumps(mutated.document).encode(), npz_bytes))

    check()


@st.composite
def byte_edits(draw, data: bytes):
    """``data`` with a few bytes flipped, inserted, deleted, or the tail cut."""
    data = bytearray(data)
    for _ in range(draw(st.integers(1, 6))):
        if not data:
            break
        position = draw(st.integers(0, len(data) - 1))
        action = draw(st.sampled_from(["flip", "insert", "delete", "truncate", "set"]))
        if action == "flip":
            data[position] ^= 1 << draw(st.integers(0, 7))
        elif action == "insert":
            data[position:position] = draw(st.binary(min_size=1, max_size=8))
        elif action == "delete":
            del data[position:position + draw(st.integers(1, 16))]
        elif action == "truncate":
            del data[position:]
        else:
            data[position] = draw(st.sampled_from(b"\x00\xff{}[]\":,0123456789-e."))
    return bytes(data)


def test_fuzz_json_bytes(seed_files, tmp_path):
    json_bytes, npz_bytes = seed_files

    @FUZZ
    @given(byte_edits(json_bytes))
    def check(mutated):
        _load_cleanly(_write(tmp_path, mutated, npz_bytes))

    check()


def test_fuzz_npz_bytes(seed_files, tmp_path):
    json_bytes, npz_bytes = seed_files

    @FUZZ
    @given(byte_edits(npz_bytes))
    def check(mutated):
        _load_cleanly(_write(tmp_path, json_bytes, mutated))

    check()


def test_fuzz_random_files(tmp_path):
    @FUZZ
    @given(st.binary(max_size=512), st.binary(max_size=512) | st.just(b"PK\x05\x06" + 18 * b"\0"))
    def check(json_bytes, npz_bytes):
        _load_cleanly(_write(tmp_path, json_bytes, npz_bytes))

    check()


# ------------------------------------------------------------------ NPZ members
DESCRS = ["<f4", "<f8", "<i4", "|b1", "|S3", "<U2", "|V0", "|S0", "<c16", "|O",
          [("a", "<f4")], [("o", "|O")]]


@st.composite
def crafted_npy(draw) -> bytes:
    """An .npy member whose header says anything, followed by some bytes."""
    shape = tuple(draw(st.lists(st.integers(-3, 2**40) | st.integers(0, 4), max_size=3)))
    header = {"descr": draw(st.sampled_from(DESCRS)), "fortran_order": draw(st.booleans()),
              "shape": shape}
    buffer = io.BytesIO()
    try:
        np.lib.format.write_array_header_1_0(buffer, header)
    except (ValueError, TypeError):
        buffer = io.BytesIO(np.lib.format.MAGIC_PREFIX + b"\x01\x00\x10\x00{'descr': 3}    ")
    return buffer.getvalue() + draw(st.binary(max_size=64))


@st.composite
def npz_edits(draw, npz_bytes: bytes) -> bytes:
    """The archive with members dropped, renamed, replaced by crafted ones or added."""
    with zipfile.ZipFile(io.BytesIO(npz_bytes)) as source:
        members = [(name, source.read(name)) for name in source.namelist()]
    for _ in range(draw(st.integers(1, 3))):
        index = draw(st.integers(0, len(members) - 1)) if members else 0
        action = draw(st.sampled_from(["drop", "rename", "craft", "add", "raw"]))
        if action == "drop" and members:
            members.pop(index)
        elif action == "rename" and members:
            members[index] = (draw(st.sampled_from(["a0", "a1", "a0.npy", "x.npy", "a1.npy/"])),
                              members[index][1])
        elif action == "craft" and members:
            members[index] = (members[index][0], draw(crafted_npy()))
        elif action == "raw" and members:  # the array's data under a name without .npy
            members[index] = (members[index][0].replace(".npy", "") or "a0", members[index][1])
        else:
            members.append((draw(st.sampled_from(["a0", "a0.npy", "a7.npy"])),
                            draw(crafted_npy() | st.binary(max_size=32))))
    buffer = io.BytesIO()
    compression = draw(st.sampled_from([zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED,
                                        zipfile.ZIP_BZIP2, zipfile.ZIP_LZMA]))
    with zipfile.ZipFile(buffer, "w", compression=compression) as archive, \
            warnings.catch_warnings():
        warnings.filterwarnings("ignore", "Duplicate name", UserWarning)  # on purpose
        for name, data in members:
            archive.writestr(name, data)
    return buffer.getvalue()


def test_fuzz_npz_members(seed_files, tmp_path):
    json_bytes, npz_bytes = seed_files

    @FUZZ
    @given(npz_edits(npz_bytes))
    def check(mutated):
        _load_cleanly(_write(tmp_path, json_bytes, mutated))

    check()


# ----------------------------------------------------------------- no code runs
class _Payload:
    """Unpickling this creates a marker file: proof that a loader ran file content."""

    def __init__(self, marker: str):
        self.marker = marker

    def __reduce__(self):
        return (open, (self.marker, "w"))


def _pickled_npz(path, key: str, marker: str) -> None:
    array = np.empty(1, dtype=object)
    array[0] = _Payload(marker)
    with zipfile.ZipFile(path, "w") as archive, archive.open(key + ".npy", "w") as member:
        np.lib.format.write_array(member, array, allow_pickle=True)
    assert b"open" in pickle.dumps(array)


def test_pickled_arrays_never_run(seed_files, tmp_path):
    json_bytes, _ = seed_files
    marker = str(tmp_path / "pwned")
    (tmp_path / "m.json").write_bytes(json_bytes)
    _pickled_npz(tmp_path / "m.npz", "a0", marker)
    with pytest.raises(ValueError, match="Python objects"):
        load_graph(str(tmp_path / "m"))
    w = gf.Variable(np.zeros(1, dtype=object).astype(np.float32), name="w")
    _pickled_npz(tmp_path / "ckpt.npz", "w", marker)
    with gf.Session() as sess, pytest.raises(errors.DataLossError, match="Python objects"):
        sess.run(w.initializer)
        gf.train.Saver([w]).restore(sess, str(tmp_path / "ckpt"))
    assert not os.path.exists(marker)


# -------------------------------------------------------------------- limits
def _allocation_peak(action) -> int:
    tracemalloc.start()
    try:
        action()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def _save(tmp_path, build) -> str:
    graph = gf.Graph()
    with graph.as_default():
        build()
    save_graph(graph, str(tmp_path / "g"))
    return str(tmp_path / "g")


@pytest.mark.parametrize("limit, value", [
    ("max_json_bytes", 100), ("max_ops", 2), ("max_graphs", 0), ("max_array_bytes", 16),
    ("max_total_array_bytes", 40), ("max_attr_depth", 0)])
def test_every_load_limit_is_enforced(tmp_path, limit, value):
    def build():
        gf.constant(np.zeros(3), name="a")
        gf.constant(np.zeros(4), name="b")
        gf.placeholder(gf.float32, name="p").op._attrs["_nested"] = [[1]]
    path = _save(tmp_path, build)
    assert load_graph(path) is not None
    with pytest.raises(ValueError):
        load_graph(path, LoadLimits(**{limit: value}))


def test_build_time_folding_allocates_nothing_big(tmp_path):
    """Constant propagation never materialises a big value: not while building, not
    while loading a file (a range, stack, tile or fill feeding a shape or an axis)."""
    def build():
        big = gf.range(0, 2**26, 1, dtype=gf.int64)       # 512 MiB if materialised
        n = gf.constant(2**26, gf.int64)
        x = gf.placeholder(gf.float32, name="x")
        gf.reshape(x, big, name="reshaped")
        gf.reduce_sum(x, axis=gf.stack([big] * 8), name="summed")
        gf.fill(gf.stack([n, n]), 1.0, name="filled")
        gf.reshape(x, gf.tile([1], gf.expand_dims(n, 0)), name="tiled")
    assert _allocation_peak(lambda: _save(tmp_path, build)) < 8 << 20
    assert _allocation_peak(lambda: _load_cleanly(str(tmp_path / "g"))) < 8 << 20


def test_hostile_names_in_a_file(seed_files, tmp_path):
    json_bytes, npz_bytes = seed_files
    document = json.loads(json_bytes)
    main = document["graphs"][-1]["ops"]
    for bad in ["x/", "w/", "bad name!/", "a:0/", "x"]:
        mutated = copy.deepcopy(document)
        mutated["graphs"][-1]["ops"] = main + [dict(main[0], name=bad)]
        with pytest.raises(ValueError, match="name"):
            load_graph(_write(tmp_path, json.dumps(mutated).encode(), npz_bytes))


# --------------------------------------------------------------- checkpoints
@pytest.fixture
def checkpoint(tmp_path):
    variables = [gf.Variable(np.arange(6, dtype=np.float32).reshape(2, 3), name="w"),
                 gf.Variable(np.float64(0.5), name="b"),
                 gf.Variable(np.int64(3), name="step", trainable=False)]
    saver = gf.train.Saver()
    sess = gf.Session()
    sess.run(gf.global_variables_initializer())
    # gradflow's former NPZ checkpoint, which Saver still restores
    path = str(tmp_path / "ckpt")
    write_npz(path + ".npz", {v.op.name: value
                              for v, value in zip(variables, sess.run(variables), strict=True)})
    sess.run([v.assign(v * 2) for v in variables])
    yield saver, sess, variables, path, (tmp_path / "ckpt.npz").read_bytes()
    sess.close()


def _restore_cleanly(saver, sess, variables, path: str, data: bytes) -> None:
    with open(path + ".npz", "wb") as f:
        f.write(data)
    before = sess.run(variables)
    with watchdog():
        try:
            saver.restore(sess, path)
        except CHECKPOINT_ERRORS as err:
            assert str(err)
            for old, new in zip(before, sess.run(variables)):
                np.testing.assert_array_equal(old, new)  # nothing half-restored
            return
    for var, value in zip(variables, sess.run(variables)):
        assert value.dtype == var.dtype.as_numpy_dtype and var.shape.is_compatible_with(
            value.shape)


def test_fuzz_checkpoint_bytes(checkpoint):
    saver, sess, variables, path, data = checkpoint

    @FUZZ
    @given(byte_edits(data))
    def check(mutated):
        _restore_cleanly(saver, sess, variables, path, mutated)

    check()


def test_fuzz_checkpoint_members(checkpoint):
    saver, sess, variables, path, data = checkpoint

    @FUZZ
    @given(npz_edits(data) | st.binary(max_size=256))
    def check(mutated):
        _restore_cleanly(saver, sess, variables, path, mutated)

    check()


def test_fuzz_checkpoint_state_file(tmp_path):
    @FUZZ
    @given(st.binary(max_size=300) | st.lists(st.sampled_from(
        ['model_checkpoint_path: "a"', 'all_model_checkpoint_paths: "b"', 'x: "y"',
         'model_checkpoint_path: "\\ud800"', 'model_checkpoint_path: "\\', ""]),
        max_size=4).map(lambda lines: "\n".join(lines).encode()))
    def check(data):
        (tmp_path / "checkpoint").write_bytes(data)
        with watchdog():
            state = gf.train.get_checkpoint_state(str(tmp_path))  # None when unreadable
        assert state is None or isinstance(state.model_checkpoint_path, str)

    check()


# ------------------------------------------------- special files (issue 20, item 7)
def _special_file(folder, name: str, kind: str) -> str:
    path = str(folder / name)
    if kind == "fifo":
        os.mkfifo(path)
    else:
        os.symlink("/dev/zero", path)
    return path


@pytest.mark.parametrize("kind", ["fifo", "link to /dev/zero"])
@pytest.mark.parametrize("member", ["json", "npz"])
def test_a_graph_file_that_is_not_regular_is_refused_at_once(seed_files, tmp_path, kind,
                                                             member):
    json_bytes, npz_bytes = seed_files
    path = _write(tmp_path, json_bytes, npz_bytes)
    os.remove(f"{path}.{member}")
    special = _special_file(tmp_path, f"m.{member}", kind)
    with watchdog(5), pytest.raises(ValueError, match="not a regular file") as raised:
        load_graph(path)
    assert special in str(raised.value)


@pytest.mark.parametrize("kind", ["fifo", "link to /dev/zero"])
def test_a_checkpoint_that_is_not_regular_is_refused_at_once(checkpoint, kind):
    saver, sess, variables, path, _ = checkpoint
    os.remove(path + ".npz")
    _special_file(pathlib.Path(path).parent, pathlib.Path(path).name + ".npz", kind)
    with watchdog(5), pytest.raises(CHECKPOINT_ERRORS) as raised:
        saver.restore(sess, path)
    assert path in str(raised.value)


# --------------------------------------------- checkpoint bombs (issue 20, item 7)
def _bomb_checkpoint(data: bytes, key: str, declared: tuple, method: int,
                     written: int) -> bytes:
    """The checkpoint ``data`` with member ``key`` replaced: a header declaring
    ``declared`` float32 elements followed by ``written`` zero bytes, compressed."""
    source = zipfile.ZipFile(io.BytesIO(data))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", compression=method) as archive:
        for info in source.infolist():
            if info.filename != key + ".npy":
                archive.writestr(info, source.read(info))
                continue
            with archive.open(key + ".npy", "w", force_zip64=True) as member:
                np.lib.format.write_array_header_1_0(
                    member, {"descr": "<f4", "fortran_order": False, "shape": declared})
                chunk = bytes(1 << 20)
                for start in range(0, written, len(chunk)):
                    member.write(chunk[:written - start])
    return out.getvalue()


def _refused_quickly(checkpoint, data: bytes, match: str) -> tuple:
    """Restoring ``data`` raises a checkpoint error matching ``match``; returns the
    seconds it took and the peak bytes allocated meanwhile."""
    saver, sess, variables, path, _ = checkpoint
    with open(path + ".npz", "wb") as f:
        f.write(data)
    start = time.perf_counter()
    tracemalloc.start()
    try:
        with watchdog(10), pytest.raises(CHECKPOINT_ERRORS, match=match) as raised:
            saver.restore(sess, path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert path in str(raised.value) and "'w'" in str(raised.value)
    return time.perf_counter() - start, peak


def test_a_deflate_bomb_for_a_six_element_variable_is_refused_unread(checkpoint):
    data = _bomb_checkpoint(checkpoint[4], "w", (64 << 20,), zipfile.ZIP_DEFLATED, 256 << 20)
    assert len(data) < 1 << 20  # 256 MiB of zeros in under 1 MB
    seconds, peak = _refused_quickly(checkpoint, data, "needs at most 6")
    assert seconds < 1.0 and peak < 1 << 20


def test_an_lzma_member_is_refused_before_inflating(checkpoint):
    data = _bomb_checkpoint(checkpoint[4], "w", (2, 3), zipfile.ZIP_LZMA, 24)
    _refused_quickly(checkpoint, data, "only stored and deflated")


def test_a_header_declaring_gigabytes_is_refused_without_allocating(checkpoint):
    data = _bomb_checkpoint(checkpoint[4], "w", (3 << 30,), zipfile.ZIP_STORED, 0)
    seconds, peak = _refused_quickly(checkpoint, data, "needs at most 6")
    assert seconds < 1.0 and peak < 1 << 20


def test_a_member_declaring_a_size_its_header_does_not_imply_is_refused(checkpoint):
    data = _bomb_checkpoint(checkpoint[4], "w", (2, 3), zipfile.ZIP_DEFLATED, 1 << 20)
    _refused_quickly(checkpoint, data, "header implies")


# ------------------------------------------ graph files checked at load (item 7)
def _mutated_load(seed_files, tmp_path, edit) -> pytest.ExceptionInfo:
    """Loads the seed graph after ``edit(document)``; returns the ValueError raised."""
    json_bytes, npz_bytes = seed_files
    document = json.loads(json_bytes)
    edit(document)
    path = _write(tmp_path, json.dumps(document).encode(), npz_bytes)
    with watchdog(10), pytest.raises(ValueError) as raised:
        load_graph(path)
    assert path + ".json" in str(raised.value)  # the error names the file
    return raised


def _op(document, name: str, graph: int = -1) -> dict:
    return next(op for op in document["graphs"][graph]["ops"] if op["name"] == name)


@pytest.mark.parametrize("attr, value, message", [
    ("evil", {"kind": "int", "value": 1}, "unknown attr 'evil'"),
    ("transpose_a", {"kind": "int", "value": 1}, "attr 'transpose_a' must be a bool"),
    ("transpose_b", {"kind": "str", "value": "yes"}, "attr 'transpose_b' must be a bool"),
    ("transpose_a", {"kind": "int", "value": 2**80}, "out of int64 range")])
def test_attrs_are_checked_against_the_op_schema_at_load(seed_files, tmp_path, attr, value,
                                                        message):
    def edit(document):
        _op(document, "layer/MatMul")["attrs"][attr] = value
    raised = _mutated_load(seed_files, tmp_path, edit)
    assert message in str(raised.value) and "layer/MatMul" in str(raised.value)


def test_a_missing_attr_is_refused_at_load(seed_files, tmp_path):
    def edit(document):
        del _op(document, "while/While")["attrs"]["num_loop_vars"]
    assert "attr 'num_loop_vars' is missing" in str(_mutated_load(seed_files, tmp_path, edit).value)


@pytest.mark.parametrize("edit, message", [
    (lambda d: _op(d, "loss")["control_inputs"].append("loss"), "on itself"),
    (lambda d: _op(d, "layer/MatMul")["control_inputs"].append("out"), "cycle"),
    (lambda d: _op(d, "cond/If")["inputs"].pop(), "passes 1 arguments"),
    (lambda d: _op(d, "while/While")["attrs"].update(
        num_loop_vars={"kind": "int", "value": 1}), "loop variables"),
    (lambda d: _op(d, "cube", 1)["inputs"].append("capture:0"), "passes 2 arguments")])
def test_cycles_self_dependencies_and_arity_are_refused_at_load(seed_files, tmp_path, edit,
                                                                message):
    assert message in str(_mutated_load(seed_files, tmp_path, edit).value)


def test_an_absurd_op_name_is_refused_cheaply(seed_files, tmp_path):
    """An 80 KB name 40,000 scopes deep: refused before any work on its scopes."""
    name = "/".join(["a"] * 40_000)

    def edit(document):
        document["graphs"][-1]["ops"].append({"name": name, "type": "NoOp"})
    start = time.perf_counter()
    tracemalloc.start()
    try:
        raised = _mutated_load(seed_files, tmp_path, edit)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert "over the limit of 4096" in str(raised.value)
    assert time.perf_counter() - start < 2.0 and peak < 32 << 20


def _function_table(count: int) -> dict:
    """A document of ``count`` one-op function graphs, each in the function table."""
    placeholder = {"name": "a", "type": "Placeholder", "attrs": {
        "dtype": {"kind": "dtype", "value": "float32"}, "shape": {"kind": "shape", "value": []}}}
    graphs = [{"name": f"f{i}", "outer": count, "ops": [placeholder], "inputs": ["a:0"],
               "outputs": ["a:0"]} for i in range(count)]
    return {"format": "gradflow.graph", "version": 1, "graphs": graphs + [{"ops": []}],
            "functions": [{"name": f"f{i}", "graph": i, "inputs": ["a:0"],
                           "outputs": ["a:0"]} for i in range(count)]}


def test_the_function_table_is_bounded(tmp_path):
    (tmp_path / "t.json").write_text(json.dumps(_function_table(20)))
    with pytest.raises(ValueError, match="20 functions, over the limit of 10"):
        load_graph(str(tmp_path / "t"), LoadLimits(max_functions=10))


@st.composite
def schema_edits(draw, document):
    """One edit of what the loader checks against schemas and structure: an attr added
    or of another kind, a huge integer, a control input (maybe a cycle), an input of a
    call dropped or repeated."""
    document = copy.deepcopy(document)
    graph = draw(st.sampled_from(document["graphs"]))
    if not graph["ops"]:
        return Mutated(document, [])
    op = draw(st.sampled_from(graph["ops"]))
    names = [o["name"] for o in graph["ops"]]
    choice = draw(st.sampled_from(["attr", "huge", "control", "inputs"]))
    if choice == "attr":
        key = draw(st.sampled_from(sorted(op.get("attrs", {})) + ["evil", "T", "_x"]))
        value = draw(st.sampled_from([{"kind": "int", "value": 3}, {"kind": "bool", "value": True},
                                      {"kind": "str", "value": "s"},
                                      {"kind": "float", "value": 0.5}, {"kind": "none"},
                                      {"kind": "list", "value": []}]))
        op.setdefault("attrs", {})[key] = value
    elif choice == "huge":
        key = draw(st.sampled_from(sorted(op.get("attrs", {})) + ["n"]))
        op.setdefault("attrs", {})[key] = {"kind": "int", "value": draw(st.sampled_from(
            [2**63, -2**63 - 1, 2**200, 2**63 - 1]))}
    elif choice == "control":
        op.setdefault("control_inputs", []).append(draw(st.sampled_from(names)))
    elif op.get("inputs"):
        inputs = op["inputs"]
        if draw(st.booleans()):
            inputs.pop(draw(st.integers(0, len(inputs) - 1)))
        else:
            inputs.append(draw(st.sampled_from(inputs)))
    return Mutated(document, [(choice, op["name"])])


def test_fuzz_schema_and_structure_edits(seed_files, tmp_path):
    json_bytes, npz_bytes = seed_files
    document = json.loads(json_bytes)

    @FUZZ
    @given(schema_edits(document))
    def check(mutated):
        graph = _load_cleanly(_write(tmp_path, json.dumps(mutated.document).encode(),
                                     npz_bytes))
        if graph is not None:  # what loads has no cycle, and runs its constants
            assert all(op not in op.control_inputs for op in graph.get_operations())

    check()


def test_fuzz_checkpoint_size_declarations(checkpoint):
    """Headers and member sizes that disagree with each other and with the variable."""
    @FUZZ
    @given(st.sampled_from(["w", "b", "step"]),
           st.lists(st.integers(0, 1 << 40), max_size=3).map(tuple),
           st.sampled_from([zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED, zipfile.ZIP_BZIP2,
                            zipfile.ZIP_LZMA]),
           st.integers(0, 4096))
    def check(key, declared, method, written):
        data = _bomb_checkpoint(checkpoint[4], key, declared, method, written)
        _restore_cleanly(*checkpoint[:4], data)

    check()


def test_a_header_declaring_more_than_its_data_can_hold_is_refused(checkpoint, tmp_path):
    """Without a target's size to go by, the member's own bytes bound the array: stored
    data holds at most its size, deflated data ~1032 times it."""
    for method in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
        path = tmp_path / f"declared-{method}.npz"
        path.write_bytes(_bomb_checkpoint(checkpoint[4], "w", (3 << 28,), method, 4096))
        tracemalloc.start()
        try:
            with NpzReader(str(path), 1 << 34) as reader, \
                    pytest.raises(ValueError, match="more than the data can hold") as raised:
                reader.read("w")
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert str(path) in str(raised.value) and peak < 1 << 20
