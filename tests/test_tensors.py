"""Unit tests of the tensor facts: kinds, polarity, casts, shift, layout, groups and masks."""
import ast
import textwrap

import libcst as cst
import pytest

from rllint.analysis.tensors import LOGITS, LOGPROBS, MASK, NEGLOGP, PROBS, REWARDS, TOKEN_IDS, Tensors, name_kind
from rllint.runner import FileContext
from rllint.settings import Settings


class Source:
    """A parsed snippet and its Tensors, with expressions looked up by their code."""

    def __init__(self, text: str) -> None:
        text = textwrap.dedent(text)
        self.module = cst.parse_module(text)
        self.file = FileContext("snippet.py", text, self.module, ast.parse(text), Settings(select=["RL"]))
        self.tensors = self.file.fact(Tensors)
        functions = [n for n in self.module.body if isinstance(n, cst.FunctionDef)]
        for function in functions:
            self.tensors.enter([self.module, function])
        self.tensors.enter([self.module])

    def find(self, code: str, nth: int = 0, kind: type = cst.BaseExpression) -> cst.CSTNode:
        found = []
        module = self.module

        class Finder(cst.CSTVisitor):
            def on_visit(self, node):
                if isinstance(node, kind) and module.code_for_node(node).strip() == code:
                    found.append(node)
                return True

        module.visit(Finder())
        assert len(found) > nth, f"{code!r} not found"
        return found[nth]


IMPORTS = "import torch\nimport torch.nn.functional as F\n"


def kind_of(body: str, code: str, nth: int = 0):
    source = Source(IMPORTS + body)
    return source.tensors.kind(source.find(code, nth))


# ---- kinds -------------------------------------------------------------------------

def test_log_softmax_of_model_logits_is_vocab_log_probs_with_its_dim():
    found = kind_of("""
def f(model, ids):
    logits = model(ids).logits[:, :-1]
    logps = F.log_softmax(logits.float(), dim=-1)
    return logps
""", "logps", 1)
    assert (found.kind, found.vocab, found.dim, found.rank, found.by_name) == (LOGPROBS, True, -1, 3, False)


def test_classifier_softmax_dim_is_recorded():
    found = kind_of("def f(x):\n    p = x.softmax(1)\n    return p\n", "p", 1)
    assert (found.kind, found.dim) == (PROBS, 1)


def test_gathered_log_probs_are_per_token():
    found = kind_of("""
def f(logits, ids):
    picked = logits.log_softmax(-1).gather(-1, ids.unsqueeze(-1))
    return picked
""", "picked", 1)
    assert (found.kind, found.vocab) == (LOGPROBS, False)


def test_source_beats_name_cross_entropy_stored_as_logps():
    found = kind_of("""
def f(logits, y):
    token_logps = F.cross_entropy(logits, y, reduction="none")
    return token_logps
""", "token_logps", 1)
    assert found.kind == NEGLOGP and not found.by_name


def test_negation_flips_neglogp_to_logprobs():
    found = kind_of("def f(logits, y):\n    lp = -F.cross_entropy(logits, y, reduction='none')\n    return lp\n",
                    "lp", 1)
    assert found.kind == LOGPROBS


def test_lm_head_output_and_model_attribute_are_logits():
    assert kind_of("def f(self, h):\n    return self.lm_head(h)\n", "self.lm_head(h)").kind == LOGITS
    assert kind_of("def f(out):\n    return out.logits\n", "out.logits").vocab is True


def test_comparisons_and_products_of_masks_are_masks():
    assert kind_of("def f(ids, pad):\n    m = ids != pad\n    return m\n", "m", 1).kind == MASK
    assert kind_of("def f(response_mask, attention_mask):\n    v = response_mask * attention_mask\n    return v\n",
                   "v", 1).kind == MASK


def test_torch_tensor_keeps_the_kind_of_its_data():
    assert kind_of("def f(rewards):\n    r = torch.tensor(rewards)\n    return r\n", "r", 1).kind == REWARDS


@pytest.mark.parametrize("name, kind", [
    ("per_token_logps", LOGPROBS), ("old_log_probs", LOGPROBS), ("logprobs_old", LOGPROBS), ("neglogp", NEGLOGP),
    ("old_neglogp", NEGLOGP), ("nll", NEGLOGP), ("completion_ids", TOKEN_IDS), ("labels", TOKEN_IDS),
    ("attention_mask", MASK), ("kept_mask", MASK), ("scores", REWARDS), ("logits", LOGITS), ("probs", PROBS),
])
def test_name_evidence(name, kind):
    assert name_kind(name).kind == kind


@pytest.mark.parametrize("name", ["masked_logits", "loss", "values", "log_ratio", "ratio", "index"])
def test_names_that_say_nothing(name):
    found = name_kind(name)
    assert found is None or found.kind not in (LOGPROBS, NEGLOGP, MASK, TOKEN_IDS)


def test_vocab_by_name_only_for_whole_distributions():
    assert name_kind("logps").vocab is True
    assert name_kind("per_token_logps").vocab is False


# ---- names ---------------------------------------------------------------------------

def test_a_name_stands_for_its_latest_assignment_before_the_use():
    source = Source(IMPORTS + """
def f(logits):
    x = logits.softmax(-1)
    y = x
    x = logits.log_softmax(-1)
    return x, y
""")
    assert source.tensors.kind(source.find("y", 1)).kind == PROBS
    assert source.tensors.kind(source.find("x", 3)).kind == LOGPROBS


def test_an_assignment_in_one_branch_does_not_reach_the_other():
    source = Source(IMPORTS + """
def f(logits, cheap):
    if cheap:
        logits = logits.half()
    else:
        y = logits
    z = logits
    return y, z
""")
    t = source.tensors
    assert t.half_cast(source.find("logits", 3)) is None  # `y = logits` in the else branch
    assert t.half_cast(source.find("logits", 4)) is not None  # after the `if`, the cast may have run


def test_self_assignment_reads_the_previous_value():
    source = Source(IMPORTS + """
def f(model, ids):
    logits = model(ids).logits
    logits = logits[:, :-1].float()
    return logits
""")
    found = source.tensors.kind(source.find("logits", 4))
    assert (found.kind, found.rank) == (LOGITS, 3)


def test_unused_parameter():
    source = Source("def f(loss, response_mask, completion_mask):\n    return (loss * completion_mask).mean()\n")
    scope = source.tensors.scope(source.find("loss", 1))
    assert scope.unused("response_mask") and not scope.unused("completion_mask") and not scope.unused("loss")


# ---- polarity ------------------------------------------------------------------------

def is_named(word):
    return lambda leaf: isinstance(leaf, cst.Name) and word in leaf.value


@pytest.mark.parametrize("code, chosen, rejected", [
    ("beta * (chosen - rejected)", 1, -1),
    ("beta * (rejected - chosen)", -1, 1),
    ("-beta * (chosen - rejected)", -1, 1),
    ("-(chosen - rejected) / temperature", -1, 1),
    ("torch.sigmoid(2.0 * (chosen - rejected))", 1, -1),
    ("-beta * margin - gamma", -1, 1),
    ("chosen * rejected", None, None),
    ("other + 1", 0, 0),
])
def test_polarity(code, chosen, rejected):
    source = Source(IMPORTS + f"def f(chosen, rejected, beta, gamma, temperature, other):\n"
                              f"    margin = chosen - rejected\n    return {code}\n")
    expr = source.find(code)
    assert source.tensors.polarity(expr, is_named("chosen")) == chosen
    assert source.tensors.polarity(expr, is_named("rejected")) == rejected


def test_terms_see_through_names_and_clamp():
    source = Source(IMPORTS + "def f(old, new):\n    d = old - new\n    return torch.clamp(d, -20, 20)\n")
    terms = source.tensors.terms(source.find("torch.clamp(d, -20, 20)"))
    assert [(sign, source.module.code_for_node(leaf)) for sign, leaf in terms] == [(1, "old"), (-1, "new")]


def test_roles():
    source = Source("def f(old_logps, ref_logps, logps, batch):\n    return old_logps, ref_logps, logps.detach(), "
                    "batch['behaviour_logprobs']\n")
    roles = [source.tensors.role(source.find(code)) for code in
             ("old_logps", "ref_logps", "logps.detach()", "batch['behaviour_logprobs']")]
    assert roles == ["old", "ref", "new", "old"]


# ---- casts ---------------------------------------------------------------------------

def test_half_cast_along_the_history():
    source = Source(IMPORTS + """
def f(logits, lm_head, h):
    a = logits.half()
    b = a.view(-1, 8)
    c = logits.bfloat16().float()
    d = lm_head(h).to(dtype=torch.bfloat16)
    e = logits.to(torch.float32)
    return b, c, d, e
""")
    t = source.tensors
    assert source.module.code_for_node(t.half_cast(source.find("b", 1))) == "logits.half()"
    assert t.half_cast(source.find("c", 1)) is None
    assert source.module.code_for_node(t.half_cast(source.find("d", 1))) == "lm_head(h).to(dtype=torch.bfloat16)"
    assert t.half_cast(source.find("e", 1)) is None


def test_dtype_argument_of_the_op_itself():
    source = Source(IMPORTS + "def f(x):\n    return F.log_softmax(x, -1, dtype=torch.float32)\n")
    call = source.find("F.log_softmax(x, -1, dtype=torch.float32)")
    assert source.tensors.cast_precision(call, "log_softmax") == "full"


def test_autocast_regions():
    source = Source(IMPORTS + """
def f(x):
    with torch.autocast(device_type="cuda", dtype=torch.bfloat16):
        a = torch.log_softmax(x, -1)
    with torch.autocast("cuda", enabled=False):
        b = torch.softmax(x, -1)
    c = torch.softmax(x, 0)
""")
    t = source.tensors
    assert t.in_autocast(source.find("torch.log_softmax(x, -1)"))
    assert not t.in_autocast(source.find("torch.softmax(x, -1)"))
    assert not t.in_autocast(source.find("torch.softmax(x, 0)"))


# ---- shift ---------------------------------------------------------------------------

def test_shift():
    source = Source(IMPORTS + """
def f(model, input_ids, n):
    logits = model(input_ids).logits
    window = logits[:, -n - 1:-1]
    kept = model(input_ids, logits_to_keep=n).logits
    shift_labels = input_ids
    return logits, window, input_ids[:, 1:], input_ids, kept, shift_labels, logits[0]
""")
    t = source.tensors
    shifted = [t.shifted(source.find(code, nth)) for code, nth in (
        ("logits", 2), ("window", 1), ("input_ids[:, 1:]", 0), ("input_ids", 4), ("kept", 1),
        ("shift_labels", 1), ("logits[0]", 0))]
    assert shifted == [False, True, True, False, True, True, False]
    assert source.module.code_for_node(t.model_logits(source.find("window", 1))) == "model(input_ids)"


# ---- gathers -------------------------------------------------------------------------

@pytest.mark.parametrize("code, dim, index", [
    ("torch.gather(x, 1, idx)", "1", "idx"),
    ("x.gather(-1, idx)", "-1", "idx"),
    ("x.gather(dim=0, index=idx)", "0", "idx"),
    ("torch.take_along_dim(x, idx, dim=2)", "2", "idx"),
])
def test_gather_parse(code, dim, index):
    source = Source(IMPORTS + f"def f(x, idx):\n    return {code}\n")
    gather = source.tensors.gather(source.find(code))
    code_of = source.module.code_for_node
    assert (code_of(gather.source), code_of(gather.dim), code_of(gather.index)) == ("x", dim, index)


def test_unsqueezed_index():
    source = Source("def f(ids):\n    i = ids.unsqueeze(-1)\n    return i, ids[..., None], ids\n")
    t = source.tensors
    assert t.unsqueezed(source.find("i", 1)) and t.unsqueezed(source.find("ids[..., None]"))
    assert not t.unsqueezed(source.find("ids", 2))


# ---- layout and groups -----------------------------------------------------------------

def layout_in(body: str, imports: str = IMPORTS) -> str:
    source = Source(imports + body)
    return source.tensors.layout(source.find("rewards", 1))


def test_layout_evidence_per_function():
    assert layout_in("def f(ids, rewards, G):\n    ids.repeat_interleave(G, dim=0)\n    rewards\n") == "contiguous"
    assert layout_in("def f(ids, rewards, G):\n    ids.repeat(G, 1)\n    rewards\n") == "tiled"
    assert layout_in("def f(prompts, rewards, num_generations):\n    b = prompts * num_generations\n    rewards\n") \
        == "tiled"
    assert layout_in("def f(prompts, rewards, G):\n    b = [p for p in prompts for _ in range(G)]\n    rewards\n") \
        == "contiguous"
    assert layout_in("def f(prompts, rewards, G):\n    b = [p for _ in range(G) for p in prompts]\n    rewards\n") \
        == "tiled"


def test_layout_falls_back_to_the_file_then_the_framework():
    body = "def g(ids, args):\n    ids.repeat_interleave(args.group_size)\n\ndef f(rewards):\n    rewards\n"
    assert layout_in(body) == "contiguous"
    mixed = body + "\ndef h(ids, G):\n    ids.repeat(G)\n"
    assert layout_in(mixed) is None
    assert layout_in("def f(rewards):\n    rewards\n") is None
    assert layout_in("def f(rewards):\n    rewards\n", imports="from trl import GRPOTrainer\n") == "contiguous"


def test_group_size_and_batch_size_names():
    source = Source("def f(cfg, G, self, per_device_batch_size):\n"
                    "    return cfg.rollout.n, G, self.num_generations, per_device_batch_size, cfg.n\n")
    t = source.tensors
    assert [t.is_group_size(source.find(c)) for c in ("cfg.rollout.n", "G", "self.num_generations", "cfg.n")] == \
        [True, True, True, False]
    assert t.is_batch_size(source.find("per_device_batch_size", 1))


def test_group_stats_and_their_expansion():
    source = Source(IMPORTS + """
def f(rewards, G):
    a = rewards.view(-1, G).mean(dim=1)
    b = a.repeat_interleave(G)
    c = rewards.view(-1, G).std(-1, keepdim=True) + 1e-6
    d = rewards.view(G, -1).mean(dim=0).repeat(G)
    e = rewards.view(-1, G).mean(dim=0)
    f = rewards.mean()
    return a, b, c, d, e, f
""")
    t = source.tensors
    stats = [t.group_stat(source.find(name, 1)) for name in "abcdef"]
    assert [(s.stat, s.reshape.axis, s.expanded) if s else None for s in stats] == [
        ("mean", 1, None), ("mean", 1, "contiguous"), ("std", 1, "keepdim"), ("mean", 0, "tiled"), None, None]


def test_masked_sums_counts_and_aliases():
    source = Source(IMPORTS + """
def f(loss, completion_mask, attention_mask, trunc):
    mask = completion_mask.float()
    kept = completion_mask * ~trunc
    n = attention_mask.sum()
    return (loss * mask).sum(-1), torch.sum(loss * kept), n, completion_mask.sum(-1).clamp(min=1)
""")
    t = source.tensors
    code = source.module.code_for_node
    values, mask, dim = t.masked_sum(source.find("(loss * mask).sum(-1)"))
    assert (code(values), code(mask), dim) == ("loss", "mask", -1)
    assert t.masked_sum(source.find("torch.sum(loss * kept)"))[2] is None
    count, dim = t.mask_count(source.find("n", 1))
    assert (code(count), dim) == ("attention_mask", None)
    count, dim = t.mask_count(source.find("completion_mask.sum(-1).clamp(min=1)"))
    assert (code(count), dim) == ("completion_mask", -1)
    assert t.same_mask(source.find("mask", 1), count)
    assert not t.same_mask(source.find("kept", 1), count)


def test_layout_from_called_helpers_and_sibling_methods():
    helper = ("def expand(prompts, G):\n    return [p for _ in range(G) for p in prompts]\n\n"
              "def f(prompts, rewards, G):\n    expand(prompts, G)\n    rewards\n\n"
              "def g(ids, G):\n    return ids.repeat_interleave(G)\n")
    assert layout_in(helper) == "tiled"
    trainer = ("class T:\n    def gen(self, prompt_ids):\n        return prompt_ids.repeat_interleave(self.num_generations)\n"
               "\n    def adv(self, rewards):\n        rewards\n\n"
               "def h(ids, G):\n    return ids.repeat(G)\n")
    source = Source(IMPORTS + trainer)
    method = [n for n in source.module.body if isinstance(n, cst.ClassDef)][0].body.body[1]
    source.tensors.enter([source.module, method])
    assert source.tensors.layout(source.find("rewards", 1)) == "contiguous"


def test_repeating_statistics_is_not_layout_evidence():
    assert layout_in("def f(rewards, G):\n    m = rewards.view(-1, G).mean(1).repeat(G)\n    rewards\n") is None


def test_repeats_that_keep_completions_contiguous():
    assert layout_in("import numpy as np\ndef f(prompts, rewards, G):\n    np.repeat(prompts, G)\n    rewards\n") \
        == "contiguous"
    assert layout_in("def f(batch, rewards, cfg):\n    batch.repeat(repeat_times=cfg.rollout.n, interleave=True)\n"
                     "    rewards\n") == "contiguous"
    assert layout_in("def f(batch, rewards, cfg):\n    batch.repeat(repeat_times=cfg.rollout.n, interleave=False)\n"
                     "    rewards\n") == "tiled"


def test_mask_count_through_an_epsilon():
    source = Source("def f(mask):\n    return mask.sum(-1) + 1e-8\n")
    count, dim = source.tensors.mask_count(source.find("mask.sum(-1) + 1e-8"))
    assert (source.module.code_for_node(count), dim) == ("mask", -1)


def test_masking_and_summing_keep_log_probs():
    source = Source("def f(old_logprobs, mask, attention_mask):\n"
                    "    a = (old_logprobs * mask).sum(-1)\n    b = attention_mask.sum(-1)\n    return a, b\n")
    assert source.tensors.kind(source.find("(old_logprobs * mask).sum(-1)")).kind == LOGPROBS
    assert source.tensors.role(source.find("(old_logprobs * mask).sum(-1)")) == "old"
    assert source.tensors.kind(source.find("b", 1)) is None  # a count of tokens is not a mask


def test_a_centred_score_is_still_one_score_per_completion():
    source = Source("def f(rewards, baseline, G):\n    a = rewards - rewards.mean()\n    b = rewards.view(-1, G) - 1\n"
                    "    c = rewards - baseline\n    return a, b, c\n")
    a = source.tensors.kind(source.find("a", 1))
    b = source.tensors.kind(source.find("b", 1))
    assert (a.kind, a.rank) == (REWARDS, None) and (b.kind, b.rank) == (REWARDS, 2)
    assert source.tensors.kind(source.find("c", 1)) is None  # the baseline's source is not visible


def test_reshaped_masks_and_products_of_masks_are_the_same_mask():
    source = Source(IMPORTS + """
def f(loss, completion_mask, valid_mask, attention_mask):
    a = (loss * completion_mask.unsqueeze(-1)).sum(1) / completion_mask.sum(1)
    b = (loss * completion_mask[:, :, None]).sum() / completion_mask.reshape(-1).sum()
    c = (loss * completion_mask * valid_mask).sum() / (valid_mask * completion_mask).sum()
    d = (loss * completion_mask * valid_mask).sum() / completion_mask.sum()
    e = (loss * completion_mask * valid_mask).sum() / (completion_mask * attention_mask).sum()
    return a, b, c, d, e
""")
    t = source.tensors
    code = source.module.code_for_node
    same = []
    for division in (source.find(c, kind=cst.BinaryOperation) for c in (
            "(loss * completion_mask.unsqueeze(-1)).sum(1) / completion_mask.sum(1)",
            "(loss * completion_mask[:, :, None]).sum() / completion_mask.reshape(-1).sum()",
            "(loss * completion_mask * valid_mask).sum() / (valid_mask * completion_mask).sum()",
            "(loss * completion_mask * valid_mask).sum() / completion_mask.sum()",
            "(loss * completion_mask * valid_mask).sum() / (completion_mask * attention_mask).sum()")):
        values, mask, _ = t.masked_sum(division.left)
        assert code(values) == "loss"
        same.append(t.same_mask(mask, t.mask_count(division.right)[0]))
    assert same == [True, True, True, False, False]


def test_a_mask_times_itself_and_rows_of_a_mask_are_that_mask():
    """Entries of a mask are 0 or 1, so `m * m` is `m`; a chunk of its rows summed over the whole mask's count is
    a share of one global mean (accumulation across chunks). Shifted positions (`m[:, 1:]`) are other tokens."""
    source = Source(IMPORTS + """
def f(loss, live_mask, pad_mask, lo, hi):
    both = live_mask * pad_mask
    a = (loss[lo:hi] * live_mask[lo:hi] * live_mask[lo:hi].bool()).sum() / live_mask.sum()
    b = (loss * both * live_mask).sum() / (pad_mask * live_mask).sum()
    c = (loss * live_mask).sum() / live_mask[:, 1:].sum()
    d = (loss * live_mask * live_mask).sum() / (live_mask * pad_mask).sum()
    return a, b, c, d
""")
    t = source.tensors
    same = []
    for code in ("a", "b", "c", "d"):
        division = t.resolve(source.find(code, 1))
        same.append(t.same_mask(t.masked_sum(division.left)[1], t.mask_count(division.right)[0]))
    assert same == [True, True, False, False]


def test_token_gather_is_found_through_casts_and_scaling_not_reductions():
    source = Source(IMPORTS + """
def f(model, ids, mask, tau):
    logits = model(ids).logits[:, :-1]
    tok = logits.log_softmax(-1).gather(-1, ids[:, 1:].unsqueeze(-1)).squeeze(-1).float()
    scaled = tok / tau
    seq = (tok * mask).sum(-1)
    vals = torch.gather(mask, 1, ids)
    return scaled, seq, vals
""")
    tensors = source.tensors
    gather = tensors.token_gather(source.find("scaled", 1))
    assert gather is not None and source.module.code_for_node(gather).startswith("logits.log_softmax(-1).gather(")
    assert tensors.token_gather(source.find("seq", 1)) is None
    assert tensors.token_gather(source.find("vals", 1)) is None  # a gather of a tensor without vocabulary axis
def test_several_picks_unless_the_index_gets_a_trailing_axis_of_one():
    """A gather whose index is not shown to end in an axis of one may pick several entries of one distribution
    per row (top-k items); with `unsqueeze(-1)`, `[:, :, None]`, `.view(b, t, 1)` or a width-one slice it picks
    one per position."""
    source = Source(IMPORTS + """
def f(scores, ids, b, t, k):
    lp = scores.log_softmax(-1)
    top = torch.gather(lp, 1, scores.topk(k).indices).float()
    lead = lp.gather(-1, ids.unsqueeze(0))
    one = lp.gather(-1, ids.unsqueeze(dim=-1)).squeeze(-1)
    none = torch.gather(lp, 2, ids[:, :, None])
    viewed = lp.gather(2, ids.view(b, t, 1))
    step = lp.gather(-1, ids[:, t:t + 1])
    return top, lead, one, none, viewed, step
""")
    tensors = source.tensors
    for name in ("top", "lead"):
        assert tensors.several_picks(source.find(name, 1)) is not None, name
    for name in ("one", "none", "viewed", "step"):
        assert tensors.several_picks(source.find(name, 1)) is None, name
    assert tensors.several_picks(source.find("lp", 1)) is None  # no gather at all


# ---- group sizes and statistics by structure ----------------------------------------------

def test_a_group_size_by_alias_or_by_the_count_the_prompts_were_repeated_by():
    source = Source(IMPORTS + """
def f(question_ids, scores, opts, width):
    per_q = opts.answers_each
    m = opts.num_generations
    question_ids.repeat_interleave(per_q, dim=0)
    return per_q, m, width, opts.answers_each
""")
    t = source.tensors
    per_q, m, width, attr = (source.find(c, n) for c, n in (("per_q", 2), ("m", 1), ("width", 1),
                                                             ("opts.answers_each", 1)))
    assert t.is_group_size(per_q) and t.is_group_size(m) and t.is_group_size(attr)
    assert not t.is_group_size(width)


def test_a_repeat_count_is_local_to_its_function_unless_it_is_an_attribute():
    source = Source(IMPORTS + """
def expand(question_ids, reps, self):
    question_ids.repeat_interleave(reps, dim=0)
    question_ids.repeat_interleave(self.per_q, dim=0)

def other(scores, reps, self):
    return reps, self.per_q
""")
    t = source.tensors
    assert not t.is_group_size(source.find("reps", 3))
    assert t.is_group_size(source.find("self.per_q", 1))


def test_batch_sizes_measured_from_shapes_and_lengths():
    source = Source(IMPORTS + """
def f(tokens, xs, questions, scores):
    N, L = tokens.shape
    nb = xs.size(0)
    rows = xs.shape[0]
    width = xs.size(1)
    return N, L, nb, rows, width, len(questions)
""")
    t = source.tensors
    found = [t.is_batch_size(source.find(c, n)) for c, n in (("N", 1), ("L", 1), ("nb", 1), ("rows", 1),
                                                            ("width", 1), ("len(questions)", 0))]
    assert found == [True, False, True, True, False, True]


def test_a_reshape_whose_rows_are_centred_is_a_group_reshape_whatever_the_size_is_called():
    source = Source(IMPORTS + """
def f(scores, w, t):
    table = scores.view(w, -1)
    centred = table - table.mean(dim=0, keepdim=True)
    rows = scores.view(-1, t)
    totals = rows.sum(1)
    return table, rows
""")
    t = source.tensors
    table = t.group_reshape(source.find("table", 2))
    assert table is not None and table.axis == 0
    assert t.centred_axes(source.find("scores.view(w, -1)")) == {0}
    assert t.group_reshape(source.find("rows", 1)) is None  # summed, not centred: a per-token table


def test_a_statistic_met_with_the_vector_that_was_cut_is_a_group_statistic():
    source = Source(IMPORTS + """
def f(scores, w):
    base = scores.view(-1, w).mean(dim=1)
    return scores - base
""")
    t = source.tensors
    base = source.find("base", 1)
    assert t.group_stat(base) is None  # `w` alone says nothing
    stat = t.group_stat(base, source=source.find("scores", 2))
    assert (stat.stat, stat.reshape.axis, stat.expanded) == ("mean", 1, None)


def test_per_key_statistics_in_dicts_and_pandas_groupby():
    source = Source(IMPORTS + """
import numpy as np
import statistics
from collections import defaultdict

def f(scores, keys, frame):
    q2sd = {}
    q2sd_named = {}
    table = defaultdict(list)
    for k in table:
        q2sd[k] = float(np.std(table[k]))
    q2sd_named["spread"] = scores.std()
    by_q = {k: statistics.stdev(v) for k, v in table.items()}
    per_q = frame.groupby("qid")["score"]
    return q2sd[keys[0]], q2sd_named["spread"], by_q[keys[1]], per_q.transform("std"), per_q.mean(), q2sd["a"]
""")
    t = source.tensors
    found = [t.group_stat(source.find(c)) for c in ('q2sd[keys[0]]', 'q2sd_named["spread"]', "by_q[keys[1]]",
                                                      'per_q.transform("std")', "per_q.mean()", 'q2sd["a"]')]
    assert [(s.stat, s.expanded, s.reshape) if s else None for s in found] == [
        ("std", "indexed", None), None, ("std", "indexed", None), ("std", "broadcast", None), ("mean", None, None),
        None]


def test_group_baselines_by_the_size_they_use():
    from rllint.analysis.tensors import GroupBaselines
    source = Source(IMPORTS + """
GROUP = 2
K = 3

def f(scores, cfg):
    g = scores.view(-1, GROUP)
    a = (g - g.mean(1, keepdim=True)) / g.std(1, keepdim=True)
    b = scores.reshape(cfg.samples_k, -1).mean(0)
    c = scores.view(K, 5).std(0)
    return a, b, c
""")
    baselines = source.file.fact(GroupBaselines)
    assert (baselines.of("GROUP"), baselines.of("cfg.samples_k"), baselines.of("samples_k"), baselines.of("K")) == \
        ("std", "mean", "mean", None)


def test_the_length_of_a_list_of_functions_is_not_a_batch_size():
    source = Source("def f(self, rewards):\n    return len(self.reward_funcs), len(self.prompts)\n")
    t = source.tensors
    assert not t.is_batch_size(source.find("len(self.reward_funcs)"))
    assert t.is_batch_size(source.find("len(self.prompts)"))


def test_positive_factor_from_literals_bound_numbers_and_coefficient_names():
    source = Source(IMPORTS + """
def f(x, kl_beta, entropy_coef, weight, gain):
    w = 0.5
    neg = -2.0
    return kl_beta * x, entropy_coef * x, w * x, neg * x, weight * x, gain * x, -kl_beta * x
""")
    signs = {name: source.tensors.positive_factor(source.find(name, nth=1 if name in ("w", "neg") else 0))
             for name in ("kl_beta", "entropy_coef", "w", "neg", "weight", "gain")}
    assert signs == {"kl_beta": 1, "entropy_coef": 1, "w": 1, "neg": -1, "weight": 0, "gain": 0}
    assert source.tensors.positive_factor(source.find("-kl_beta")) == -1
