"""``tf.math`` names added from the API gap list (Bessel functions, erfcinv, polyval,
nextafter, cumulative_logsumexp) against TF 2.21 fixtures, with numeric gradient checks."""
import numpy as np
import pytest

import gradflow as gf
from gradcheck import gradient_error, second_order_error
from tf_fixtures import load_arrays, load_json

RECORDED = load_json("gaps")
ARRAYS = load_arrays("gaps")


def test_values_names_and_gradients_match_tf1():
    with gf.Graph().as_default():
        x = gf.constant([0.0, 0.5, -2.0, 3.0])
        x64 = gf.constant([0.3, 0.5, -2.0, 3.0], gf.float64)
        out = {"i0": gf.math.bessel_i0(x), "i0e": gf.math.bessel_i0e(x),
               "i1": gf.math.bessel_i1(x), "i1e": gf.math.bessel_i1e(x),
               "erfcinv": gf.math.erfcinv(gf.constant([0.5, 1.0, 1.5])),
               "polyval": gf.math.polyval([1.0, 2.0, 3.0], x),
               "nextafter": gf.math.nextafter(x, gf.constant(5.0)),
               "cls": gf.math.cumulative_logsumexp(x),
               "cls_rev": gf.math.cumulative_logsumexp(
                   gf.constant([[1.0, 2.0, 3.0], [0.0, -1.0, 4.0]]), axis=1, exclusive=True,
                   reverse=True)}
        w = gf.constant([1.0, -2.0, 0.5, 3.0], gf.float64)
        for key, fn in (("i0", gf.math.bessel_i0), ("i0e", gf.math.bessel_i0e),
                        ("i1", gf.math.bessel_i1), ("i1e", gf.math.bessel_i1e),
                        ("cls", gf.math.cumulative_logsumexp)):
            out[key + "_grad"] = gf.gradients(gf.reduce_sum(fn(x64) * w), x64)[0]
        for key, tensor in out.items():
            if not key.endswith("_grad"):
                assert tensor.name == RECORDED["names"]["mx_" + key], key
        with gf.Session() as session:
            got = session.run(out)
    for key, value in got.items():
        assert value.dtype == ARRAYS["mx_" + key].dtype, key
        np.testing.assert_allclose(value, ARRAYS["mx_" + key], rtol=2e-6, atol=1e-7,
                                   err_msg=key)


@pytest.mark.parametrize("name", ["bessel_i0", "bessel_i0e", "bessel_i1", "bessel_i1e",
                                  "erfcinv", "cumulative_logsumexp", "polyval", "nextafter"])
def test_gradients_float64(name):
    x = np.array([0.3, 0.7, -1.2, 1.6])
    builds = {"erfcinv": lambda t: gf.math.erfcinv(t * 0.5 + 1.0),
              "polyval": lambda t: gf.math.polyval([t[0], 2.0, t[1]], t),
              "nextafter": lambda t: gf.math.nextafter(t, gf.constant(5.0, gf.float64)),
              "cumulative_logsumexp": lambda t: gf.math.cumulative_logsumexp(
                  t, exclusive=True, reverse=True)[:3]}
    build = builds.get(name, getattr(gf.math, name))
    assert gradient_error(build, [x]) < 1e-6
    if name.startswith("bessel") or name == "cumulative_logsumexp":
        assert second_order_error(build, [x]) < 1e-5
