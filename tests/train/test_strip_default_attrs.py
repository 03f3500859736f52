"""``strip_default_attrs=True`` (export_meta_graph, Saver.save, SavedModelBuilder).

TF 2.21 leaves out of each node the attrs equal to their op's default
(``MatMul``'s ``transpose_a``/``transpose_b``/``grad_a``/``grad_b``, ``Sum``'s
``keep_dims``/``Tidx``, ``VariableV2``'s ``container``/``shared_name``, ``AvgPool``'s
``data_format``) and sets ``meta_info_def.stripped_default_attrs``; importing fills them
back in. gradflow refused the argument (ValueError).
"""
import os

import numpy as np

import gradflow as gf

X = np.array([[1.0, 2.0], [3.0, -1.0]], np.float32)


def _model():
    x = gf.placeholder(gf.float32, [None, 2], name="x")
    w = gf.Variable([[1.0], [2.0]], name="w")
    y = gf.matmul(x, w, name="y")
    z = gf.reduce_sum(y, name="z")
    pooled = gf.nn.avg_pool(gf.reshape(x, [-1, 1, 2, 1]), [1, 1, 1, 1], [1, 1, 1, 1], "SAME",
                            name="AvgPool")
    return x, z, pooled


def _attrs(meta) -> dict:
    return {n.name: sorted(n.attr) for n in meta.graph_def.node
            if n.name in ("x", "w", "y", "z", "AvgPool")}


def test_export_meta_graph_strips_default_valued_attrs():
    with gf.Graph().as_default():
        _model()
        stripped = gf.train.export_meta_graph(strip_default_attrs=True)
        full = gf.train.export_meta_graph()
    assert stripped.meta_info_def.stripped_default_attrs
    assert not full.meta_info_def.stripped_default_attrs
    assert _attrs(stripped) == {"x": ["dtype", "shape"], "w": ["dtype", "shape"],
                                "y": ["T"], "z": ["T"],
                                "AvgPool": ["T", "ksize", "padding", "strides"]}
    assert _attrs(full)["y"] == ["T", "grad_a", "grad_b", "transpose_a", "transpose_b"]


def test_stripped_meta_graph_imports_and_runs(tmp_path):
    prefix = os.path.join(tmp_path, "model")
    with gf.Graph().as_default():
        x, z, pooled = _model()
        saver = gf.train.Saver()
        with gf.Session() as sess:
            sess.run(gf.global_variables_initializer())
            want = sess.run([z, pooled], {x: X})
            saver.save(sess, prefix, strip_default_attrs=True)
    with gf.Graph().as_default() as graph, gf.Session() as sess:
        restorer = gf.train.import_meta_graph(prefix + ".meta")
        restorer.restore(sess, prefix)
        assert graph.get_operation_by_name("y").get_attr("transpose_a") is False
        got = sess.run(["z:0", "AvgPool:0"], {"x:0": X})
    np.testing.assert_allclose(got[0], want[0])
    np.testing.assert_allclose(got[1], want[1])


def test_saved_model_builder_strips_and_loads(tmp_path):
    export_dir = os.path.join(tmp_path, "export")
    with gf.Graph().as_default():
        x, z, _ = _model()
        with gf.Session() as sess:
            sess.run(gf.global_variables_initializer())
            builder = gf.saved_model.builder.SavedModelBuilder(export_dir)
            builder.add_meta_graph_and_variables(
                sess, [gf.saved_model.tag_constants.SERVING], strip_default_attrs=True)
            builder.save()
    with gf.Graph().as_default(), gf.Session() as sess:
        meta = gf.saved_model.loader.load(sess, [gf.saved_model.tag_constants.SERVING],
                                          export_dir)
        assert meta.meta_info_def.stripped_default_attrs
        assert sess.run("z:0", {"x:0": X}) == np.float32(1.0 * 1 + 2 * 2 + 3 - 2)
