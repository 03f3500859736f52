"""Summary ops against TF 2.21: op names and types, tags, collections, the Summary protos
field by field (images and audio compared decoded)."""
import base64
import io
import wave

import numpy as np
import pytest
from PIL import Image
from tensorboard.compat.proto import summary_pb2

import gradflow as gf
from tf_fixtures import load_json

FIXTURE = load_json("summary")
INPUTS = FIXTURE["inputs"]


def build():
    made = {}
    made["scalar"] = gf.summary.scalar("loss", gf.constant(1.25))
    made["scalar_again"] = gf.summary.scalar("loss", gf.constant(2.5))
    with gf.name_scope("train"):
        made["scalar_scoped"] = gf.summary.scalar("lr", gf.constant(0.5, gf.float64))
    made["scalar_family"] = gf.summary.scalar("acc", gf.constant(3), family="fam")
    made["histogram"] = gf.summary.histogram("weights", gf.constant(INPUTS["hist"]))
    made["histogram_empty"] = gf.summary.histogram("empty", gf.zeros([0]))
    made["image"] = gf.summary.image("img", gf.constant(INPUTS["images_f"]), max_outputs=3)
    made["image_neg"] = gf.summary.image("neg", gf.constant(INPUTS["images_neg"]))
    made["image_u8"] = gf.summary.image("u8", gf.constant(INPUTS["images_u8"], gf.uint8),
                                        max_outputs=2)
    made["audio"] = gf.summary.audio("snd", gf.constant(INPUTS["audio"]), 8000, max_outputs=1)
    made["text"] = gf.summary.text("note", gf.constant("hello *world*"))
    made["tensor_summary"] = gf.summary.tensor_summary(
        "tens", gf.constant([[1, 2], [3, 4]], gf.int32))
    made["merge"] = gf.summary.merge([made["scalar"], made["histogram"]])
    made["merge_all"] = gf.summary.merge_all()
    return made


@pytest.fixture(scope="module")
def results():
    graph = gf.Graph()
    with graph.as_default():
        made = build()
        with gf.Session() as sess:
            values = sess.run(made)
        names = {k: (t.name, t.op.type) for k, t in made.items()}
        collection = [t.name for t in graph.get_collection(gf.GraphKeys.SUMMARIES)]
        ops = [[op.name, op.type] for op in graph.get_operations()]
    return made, values, names, collection, ops


def _proto(serialized) -> summary_pb2.Summary:
    if isinstance(serialized, str):
        serialized = base64.b64decode(serialized)
    elif isinstance(serialized, np.ndarray):  # a fetched string scalar
        serialized = serialized.item()
    return summary_pb2.Summary.FromString(serialized)


def test_op_names_types_and_collection(results):
    _, _, names, collection, _ = results
    for key, recorded in FIXTURE["graph"]["cases"].items():
        assert names[key] == (recorded["name"], recorded["type"]), key
    assert collection == FIXTURE["graph"]["collection"]


def test_summary_ops_make_tfs_ops(results):
    *_, ops = results
    summary_types = {"ScalarSummary", "HistogramSummary", "ImageSummary", "AudioSummaryV2",
                     "TensorSummaryV2", "MergeSummary"}
    assert [o for o in ops if o[1] in summary_types] == \
        [o for o in FIXTURE["graph"]["ops"] if o[1] in summary_types]


def _plain_fields(value):
    """A Summary.Value without its encoded image/audio bytes (compared decoded)."""
    copy = summary_pb2.Summary.Value()
    copy.CopyFrom(value)
    if copy.HasField("image"):
        copy.image.ClearField("encoded_image_string")
    if copy.HasField("audio"):
        copy.audio.ClearField("encoded_audio_string")
    return copy


@pytest.mark.parametrize("key", sorted(FIXTURE["graph"]["cases"]))
def test_protos_match_tf_field_by_field(results, key):
    _, values, *_ = results
    got, want = _proto(values[key]), _proto(FIXTURE["graph"]["cases"][key]["serialized"])
    assert [v.tag for v in got.value] == FIXTURE["graph"]["cases"][key]["tags"]
    for mine, theirs in zip(got.value, want.value, strict=True):
        assert _plain_fields(mine) == _plain_fields(theirs), mine.tag
        if theirs.HasField("image"):
            decoded = [np.asarray(Image.open(io.BytesIO(v.image.encoded_image_string)))
                       for v in (mine, theirs)]
            np.testing.assert_array_equal(decoded[0], decoded[1])
        if theirs.HasField("audio"):
            frames = []
            for v in (mine, theirs):
                with wave.open(io.BytesIO(v.audio.encoded_audio_string)) as w:
                    frames.append((w.getnchannels(), w.getsampwidth(), w.getframerate(),
                                   w.readframes(w.getnframes())))
            assert frames[0] == frames[1]


def test_histogram_rejects_nan_at_run_time():
    h = gf.summary.histogram("bad", gf.constant([1.0, np.nan]))
    with gf.Session() as sess, pytest.raises(gf.errors.InvalidArgumentError,
                                             match="Nan in summary histogram for: bad"):
        sess.run(h)


def test_merge_rejects_duplicate_tags():
    a = gf.summary.scalar("a", 1.0)
    merged = gf.summary.merge([a, a])
    with gf.Session() as sess, pytest.raises(gf.errors.InvalidArgumentError,
                                             match="Duplicate tag a"):
        sess.run(merged)


def test_merge_all_of_an_empty_collection_is_none_and_custom_collections():
    assert gf.summary.merge_all() is None
    s = gf.summary.scalar("x", 1.0, collections=["mine"])
    assert gf.get_collection("mine") == [s]
    assert gf.get_collection(gf.GraphKeys.SUMMARIES) == []
    assert FIXTURE["keys"] == {"SUMMARIES": gf.GraphKeys.SUMMARIES,
                               "SUMMARY_OP": gf.GraphKeys.SUMMARY_OP}


def test_bad_summaries_raise_and_leave_the_graph_alone():
    graph = gf.get_default_graph()
    vector, matrix, text = gf.constant([1.0, 2.0]), gf.zeros([2, 2]), gf.constant("t")
    before = [op.name for op in graph.get_operations()]
    with pytest.raises(ValueError, match="Shapes must be equal rank"):
        gf.summary.scalar("x", vector)
    with pytest.raises(ValueError, match="4-D with last dim 1, 3, or 4"):
        gf.summary.image("x", matrix)
    with pytest.raises(TypeError, match="values"):
        gf.summary.histogram("x", text)
    with pytest.raises(ValueError, match="dtype string"):
        gf.summary.text("x", vector)
    assert [op.name for op in graph.get_operations()] == before
    assert gf.get_collection(gf.GraphKeys.SUMMARIES) == []


def test_family_names_and_tags_follow_tf():
    a = gf.summary.scalar("acc", gf.constant(1.0), family="fam")
    b = gf.summary.scalar("acc", gf.constant(1.0), family="fam")
    with gf.name_scope("outer"):
        h = gf.summary.histogram("h", gf.constant([1.0]), family="fam")
    with gf.Session() as sess:
        tags = [[v.tag for v in _proto(sess.run(t)).value] for t in (a, b, h)]
    assert [t.name for t in (a, b, h)] == FIXTURE["families"]["names"]
    assert tags == FIXTURE["families"]["tags"]
