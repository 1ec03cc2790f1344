"""Unit tests of the KL facts: log-ratio roles, k3 exponents, sign-keeping terms, reverse declarations."""
import libcst as cst

from rllint.analysis.kl import k3_exponents, linear_terms, log_ratio, says_reverse
from tests.test_tensors import IMPORTS, Source


def test_log_ratio_roles_follow_names_signs_and_negative_log_probs():
    source = Source(IMPORTS + """
def f(pi_logps, ref_logps, old_logps, nll, ref_nll, old_ref_logps, values):
    a = pi_logps - ref_logps
    b = -(ref_logps - pi_logps) * 2.0
    c = ref_nll - nll
    d = old_logps - pi_logps
    e = pi_logps - old_ref_logps
    g = values - ref_logps
    return a, b, c, d, e, g
""")
    roles = {code: log_ratio(source.tensors, source.find(code)) for code in (
        "pi_logps - ref_logps", "-(ref_logps - pi_logps) * 2.0", "ref_nll - nll", "old_logps - pi_logps")}
    assert roles == {
        "pi_logps - ref_logps": {"new": 1, "old": 0, "ref": -1},
        "-(ref_logps - pi_logps) * 2.0": {"new": 1, "old": 0, "ref": -1},
        "ref_nll - nll": {"new": 1, "old": 0, "ref": -1},
        "old_logps - pi_logps": {"new": -1, "old": 1, "ref": 0},
    }
    assert log_ratio(source.tensors, source.find("pi_logps - old_ref_logps")) is None  # the name says both
    assert log_ratio(source.tensors, source.find("values - ref_logps")) is None


def test_k3_exponents_in_its_spellings_and_not_in_other_sums():
    source = Source(IMPORTS + """
def f(lp, ref_lp, w):
    r = torch.exp(ref_lp - lp)
    one = r - 1 - (ref_lp - lp)
    two = w * (ref_lp - lp).exp() - (ref_lp - lp) - 1
    three = torch.exp(ref_lp - lp) - (lp - ref_lp) - 1
    four = torch.exp(ref_lp - lp) - 1
    return one, two, three, four
""")
    def exps(code):
        return [source.module.code_for_node(c) for c in k3_exponents(source.tensors, source.find(code))]
    assert exps("r - 1 - (ref_lp - lp)") == ["torch.exp(ref_lp - lp)"]
    assert exps("w * (ref_lp - lp).exp() - (ref_lp - lp) - 1") == ["(ref_lp - lp).exp()"]
    assert exps("torch.exp(ref_lp - lp) - (lp - ref_lp) - 1") == []  # the linear part has the other sign
    assert exps("torch.exp(ref_lp - lp) - 1") == []


def test_linear_terms_see_through_reductions_and_masks_only():
    source = Source(IMPORTS + """
def f(pg, lp, ref_lp, completion_mask, beta):
    kl = lp - ref_lp
    loss = pg - beta * (kl * completion_mask).sum(-1).mean()
    other = pg + torch.sigmoid(kl).mean()
    return loss, other
""")
    def leaves(code):
        return [(s, source.module.code_for_node(l)) for s, l in linear_terms(source.tensors, source.find(code))]
    assert leaves("pg - beta * (kl * completion_mask).sum(-1).mean()") == [(1, "pg"), (-1, "lp"), (1, "ref_lp")]
    assert leaves("pg + torch.sigmoid(kl).mean()") == [(1, "pg"), (1, "torch.sigmoid(kl)")]


def test_reverse_kl_is_declared_by_name_or_docstring():
    source = Source(IMPORTS + '''
def reverse_direction(lp, ref_lp):
    return lp - ref_lp

def documented(lp, ref_lp):
    """KL(ref || pi), estimated on samples of pi."""
    return lp - ref_lp

def plain(lp, ref_lp):
    """The KL penalty of the policy."""
    return lp - ref_lp
''')
    nodes = [source.find("lp - ref_lp", i) for i in range(3)]
    assert [says_reverse(source.tensors, n) for n in nodes] == [True, True, False]
    assert says_reverse(source.tensors, nodes[2], "rev_kl_term")
    assert isinstance(nodes[0], cst.BinaryOperation)


def test_expm1_form_and_masked_means_keep_their_terms():
    source = Source(IMPORTS + """
def f(lp, ref_lp, response_mask, n):
    d = lp - ref_lp
    est = torch.expm1(-d) + d
    avg = (d * response_mask).sum() / response_mask.sum().clamp(min=1)
    per_len = d.sum() / n
    return est, avg, per_len
""")
    exps = k3_exponents(source.tensors, source.find("torch.expm1(-d) + d"))
    assert [source.module.code_for_node(c) for c in exps] == ["torch.expm1(-d)"]
    def leaves(code):
        return [(s, source.module.code_for_node(l)) for s, l in linear_terms(source.tensors, source.find(code))]
    assert leaves("(d * response_mask).sum() / response_mask.sum().clamp(min=1)") == [(1, "lp"), (-1, "ref_lp")]
    assert leaves("d.sum() / n") == [(1, "d.sum() / n")]  # `n` may be anything: the sign is not known
