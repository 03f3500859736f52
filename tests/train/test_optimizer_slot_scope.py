"""Optimizer slots are named under the variable scope in force at ``minimize``, as in TF1.

TF 2.21: ``minimize`` inside ``variable_scope("train")`` names Adam's slots of
``model/w`` ``train/model/w/Adam`` and ``train/model/w/Adam_1`` (its non-slot
``beta1_power`` too is ``train/beta1_power``); outside any variable scope they stay
``model/w/Adam``.
"""
import gradflow as gf


def _weights():
    with gf.variable_scope("model"):
        return gf.get_variable("w", [2], initializer=gf.zeros_initializer())


def test_slots_under_the_variable_scope_of_minimize():
    with gf.Graph().as_default():
        w = _weights()
        with gf.variable_scope("train"):
            adam = gf.train.AdamOptimizer(0.1)
            adam.minimize(gf.reduce_sum(w * w))
        with gf.variable_scope("train2"):
            gf.train.MomentumOptimizer(0.1, 0.9).minimize(gf.reduce_sum(w * w))
        assert [v.op.name for v in gf.global_variables()] == [
            "model/w", "train/beta1_power", "train/beta2_power", "train/model/w/Adam",
            "train/model/w/Adam_1", "train2/model/w/Momentum"]
        assert adam.get_slot(w, "m").op.name == "train/model/w/Adam"


def test_slots_outside_variable_scopes_keep_the_variable_name():
    with gf.Graph().as_default():
        w = _weights()
        with gf.name_scope("optimizer"):
            gf.train.RMSPropOptimizer(0.1).minimize(gf.reduce_sum(w * w))
        assert [v.op.name for v in gf.global_variables()] == [
            "model/w", "model/w/RMSProp", "model/w/RMSProp_1"]
