"""Unit tests of the clipping facts: clamps and their clip range, the surrogate's pair, summed log-ratios."""
import libcst as cst

from rllint.analysis.clipping import (around_one, clamp_of, clip_range, exponent_of, summed_log_ratio,
                                      surrogate_sign)
from rllint.analysis.imports import Imports
from rllint.analysis.values import Values
from tests.test_tensors import IMPORTS, Source


def clamp(source, code):
    return clamp_of(source.file.fact(Imports), source.find(code, kind=cst.Call))


def test_clamp_parts_in_function_method_and_keyword_spellings():
    source = Source(IMPORTS + "import numpy as np\n" + """
def f(w, lo, hi):
    a = torch.clip(w, lo, hi)
    b = w.clamp(min=lo, max=hi)
    c = np.clip(w, a_min=lo, a_max=hi)
    d = w.clamp(max=hi)
    e = torch.clamp(w, min=lo)
    return a, b, c, d, e
""")
    parts = {code: clamp(source, code) for code in (
        "torch.clip(w, lo, hi)", "w.clamp(min=lo, max=hi)", "np.clip(w, a_min=lo, a_max=hi)")}
    for found in parts.values():
        assert [source.module.code_for_node(n) for n in (found.operand, found.lower, found.upper)] == ["w", "lo", "hi"]
    one_sided = clamp(source, "w.clamp(max=hi)")
    assert one_sided.lower is None and source.module.code_for_node(one_sided.upper) == "hi"
    assert clamp(source, "torch.clamp(w, min=lo)").upper is None


def test_band_around_one_and_its_clip_range_through_names_and_defaults():
    source = Source(IMPORTS + """
DELTA = 0.15

def f(w, spread=0.3):
    low = 1.0 - DELTA
    a = torch.clamp(w, low, 1.0 + DELTA)
    b = w.clamp(0.75, 1.25)
    c = w.clamp(1 - spread, 1 + spread)
    d = w.clamp(-5.0, 5.0)
    e = w.clamp(0.0, 1.0)
    return a, b, c, d, e
""")
    values = source.file.fact(Values)
    found = {}
    for code in ("torch.clamp(w, low, 1.0 + DELTA)", "w.clamp(0.75, 1.25)", "w.clamp(1 - spread, 1 + spread)",
                 "w.clamp(-5.0, 5.0)", "w.clamp(0.0, 1.0)"):
        c = clamp(source, code)
        found[code] = (around_one(source.tensors, c), clip_range(source.tensors, values, c))
    assert found["torch.clamp(w, low, 1.0 + DELTA)"] == (True, 0.15)
    assert found["w.clamp(0.75, 1.25)"] == (True, 0.25)
    assert found["w.clamp(1 - spread, 1 + spread)"] == (True, 0.3)
    assert found["w.clamp(-5.0, 5.0)"][0] is False  # a log-ratio's guard, not a band around 1
    assert found["w.clamp(0.0, 1.0)"][0] is False  # a truncation, not a band around 1


def surrogate(source, call_code):
    call = source.find(call_code, kind=cst.Call)
    first, second = (a.value for a in call.args)
    return surrogate_sign(source.tensors, source.file.fact(Imports), first, second)


def test_surrogate_pair_and_its_sign_through_names_minus_and_scales():
    source = Source(IMPORTS + """
def f(w, gain, valid_mask, bound):
    held = w.clamp(1 - bound, 1 + bound)
    a = torch.min(w * gain, held * gain)
    flipped = -gain
    b = torch.max(flipped * w, flipped * held)
    t1 = -(gain * w) * valid_mask
    t2 = -(gain * held) * valid_mask
    c = torch.maximum(t2, t1)
    d = torch.min(2.0 * w * gain, 2.0 * torch.clip(w, 0.8, 1.2) * gain)
    return a, b, c, d
""")
    assert surrogate(source, "torch.min(w * gain, held * gain)") == 1
    assert surrogate(source, "torch.max(flipped * w, flipped * held)") == -1
    assert surrogate(source, "torch.maximum(t2, t1)") == -1
    assert surrogate(source, "torch.min(2.0 * w * gain, 2.0 * torch.clip(w, 0.8, 1.2) * gain)") == 1


def test_surrogate_pair_with_a_masked_ratio_name_and_a_capped_ratio():
    source = Source(IMPORTS + """
def f(lp, lp_old, gain, seq_mask, lo, hi, cap, mode):
    if mode:
        w = torch.exp(lp - lp_old)
    else:
        w = torch.exp(lp - lp_old).unsqueeze(-1) * seq_mask
    term1 = w * gain
    term2 = w.clamp(1 - lo, 1 + hi) * gain
    a = torch.min(term1, term2)
    v = torch.exp(lp - lp_old)
    banded = torch.clamp(v, 1 - lo, 1 + hi)
    if cap is not None:
        v = torch.clamp(v, max=cap)
    b = torch.max(-v * gain, -banded * gain)
    return a, b
""")
    assert surrogate(source, "torch.min(term1, term2)") == 1  # `w` holds a product: one factor, as its clamp sees it
    assert surrogate(source, "torch.max(-v * gain, -banded * gain)") == -1  # the ratio capped from above


def test_not_a_surrogate_pair():
    source = Source(IMPORTS + """
def f(w, gain, other, bound, cap):
    held = w.clamp(1 - bound, 1 + bound)
    a = torch.min(w * gain, held * other)
    b = torch.min(-w * gain, held * gain)
    c = torch.max(w * gain, w.clamp(max=cap) * gain)
    d = torch.min(w * gain, other.clamp(1 - bound, 1 + bound) * gain)
    e = torch.max(torch.min(w * gain, held * gain), -gain * cap)
    g = torch.min(w, held)
    return a, b, c, d, e, g
""")
    for code in ("torch.min(w * gain, held * other)",  # different weights
                 "torch.min(-w * gain, held * gain)",  # signs differ
                 "torch.max(w * gain, w.clamp(max=cap) * gain)",  # one-sided clamp: dual-clip's constant
                 "torch.min(w * gain, other.clamp(1 - bound, 1 + bound) * gain)",  # the clamp of another tensor
                 "torch.max(torch.min(w * gain, held * gain), -gain * cap)",  # dual-clip's third bound
                 "torch.min(w, held)"):  # no weight
        assert surrogate(source, code) is None, code


def test_summed_log_ratio_against_per_token_and_length_normalised_ratios():
    source = Source(IMPORTS + """
def f(lp, old_lp, ref_lp, keep_mask, n):
    a = torch.exp(((lp - old_lp) * keep_mask).sum(dim=-1))
    seq = lp.sum(1)
    b = torch.exp(seq - old_lp.sum(1))
    c = torch.exp(torch.sum(lp - old_lp))
    d = torch.exp(lp - old_lp)
    e = torch.exp(((lp - old_lp) * keep_mask).sum(-1) / keep_mask.sum(-1))
    g = torch.exp((lp - old_lp).mean(-1))
    h = torch.exp((lp - ref_lp).sum(-1))
    i = torch.exp((lp - old_lp).sum(0))
    j = torch.exp((old_lp - lp).sum(-1))
    return a, b, c, d, e, g, h, i, j
""")
    def summed(code):
        exponent = exponent_of(source.tensors, source.find(code, kind=cst.Call))
        return summed_log_ratio(source.tensors, exponent) is not None

    assert summed("torch.exp(((lp - old_lp) * keep_mask).sum(dim=-1))")
    assert summed("torch.exp(seq - old_lp.sum(1))")
    assert summed("torch.exp(torch.sum(lp - old_lp))")  # one sequence
    assert not summed("torch.exp(lp - old_lp)")  # per token
    assert not summed("torch.exp(((lp - old_lp) * keep_mask).sum(-1) / keep_mask.sum(-1))")  # GSPO's mean
    assert not summed("torch.exp((lp - old_lp).mean(-1))")
    assert not summed("torch.exp((lp - ref_lp).sum(-1))")  # to the reference: not an importance ratio
    assert not summed("torch.exp((lp - old_lp).sum(0))")  # over the batch
    assert not summed("torch.exp((old_lp - lp).sum(-1))")  # inverted: RL101's business


def test_exponent_of_sees_through_names_casts_and_reshapes():
    source = Source(IMPORTS + """
def f(d):
    r = torch.exp(d).float()
    s = r.unsqueeze(-1)
    t = torch.sigmoid(d)
    return s, t
""")
    assert source.module.code_for_node(exponent_of(source.tensors, source.find("s", 1))) == "d"
    assert exponent_of(source.tensors, source.find("t", 1)) is None
