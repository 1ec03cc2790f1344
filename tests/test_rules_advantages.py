"""RL201 options and wording, beyond what the fixtures show."""
import textwrap

import pytest

from rllint.runner import lint_files, lint_text
from rllint.settings import Settings

SOURCE = textwrap.dedent("""
    def whiten(values):
        return (values - values.mean()) / (values.std() + 1e-2)
""")


def findings(text, **options):
    result = lint_text(text, "adv.py", Settings(select=["RL201"], options=options))
    return [(d.line, d.column, d.message) for d in result.diagnostics]


def test_max_epsilon_is_an_option_that_reports_values_at_least_as_large():
    assert findings(SOURCE) == []  # 1e-2 is below the default 0.1
    assert [(line, column) for line, column, _ in findings(SOURCE, **{"max-epsilon": 1e-3})] == [(3, 55)]
    assert [(line, column) for line, column, _ in findings(SOURCE, **{"max-epsilon": 1e-2})] == [(3, 55)]
    assert findings(SOURCE, **{"max-epsilon": 0.011}) == []


def test_a_positive_exponent_is_named_as_a_likely_typo():
    assert findings(SOURCE.replace("1e-2", "1e4")) == [
        (3, 55, "epsilon 10000.0 added to the std; it dominates the std in the denominator and advantages shrink "
                "toward zero (use 1e-6 to 1e-4); a positive exponent: did you mean 1e-4?")]


# ---- RL202-RL206: groups, sizes and statistics known by structure, not by their names ----

def lines(text, select, **options):
    result = lint_text(textwrap.dedent(text), "adv.py", Settings(select=select, options=options))
    return sorted((d.line, d.code) for d in result.diagnostics)


def test_rl202_group_size_under_another_name_and_batch_sizes_measured_from_shapes():
    source = """
        import torch

        def rows_first(question_ids, pts, spec):
            per_q = spec.answers_each
            stacked = question_ids.repeat_interleave(per_q, dim=0)
            table = pts.view(per_q, -1)
            return stacked, table - table.mean(dim=0, keepdim=True)

        def from_shape(seqs, scores):
            N, L = seqs.shape
            table = scores.reshape(-1, N)
            return table - table.mean(dim=1, keepdim=True)

        def from_len(questions, scores):
            table = scores.view(-1, len(questions))
            return table - table.mean(dim=1, keepdim=True)

        def tiled(question_ids, pts, reps):
            stacked = question_ids.repeat(reps, 1)
            table = pts.view(-1, reps)
            return stacked, table - table.mean(dim=1, keepdim=True)
    """
    # `question_ids.repeat(reps, 1)` by an unnamed count may be one prompt repeated into its group: not tiled
    assert lines(source, ["RL202"]) == [(7, "RL202"), (12, "RL202"), (16, "RL202")]
    # a vector of unknown kind is scores by its use only when cut by a group size: `pts.view(-1, N)` is a table
    assert lines(source.replace("scores", "pts"), ["RL202"]) == [(7, "RL202")]


def test_rl202_a_product_of_counts_is_no_tiled_list_of_prompts():
    """`n = num_prompts * group_size` used as a count (`[prompt] * n`, `torch.full((n,), ...)`, `range(n)`) is a
    number; the same product of a list of prompts, handed to the scorer, tiles them."""
    counted = """
        import torch

        def step(tok, policy, score, prompt, args):
            n = args.num_prompts * args.group_size
            enc = tok([prompt] * n, return_tensors="pt", padding=True)
            lens = torch.full((n,), enc["input_ids"].shape[1])
            out = policy.generate(**enc, do_sample=True)
            rewards = torch.tensor([score(o) for o in out])
            grouped = rewards.view(args.num_prompts, args.group_size)
            return lens, grouped - grouped.mean(dim=1, keepdim=True)

        def step_inline(tok, policy, score, prompts, args):
            rewards = torch.zeros(args.num_prompts * args.group_size)
            grouped = rewards.view(args.num_prompts, args.group_size)
            return grouped - grouped.mean(dim=1, keepdim=True)
    """
    assert lines(counted, ["RL202"]) == []
    tiled = """
        import torch

        def step(score, prompts, args):
            batch = prompts * args.group_size
            rewards = torch.tensor(score(batch))
            grouped = rewards.view(-1, args.group_size)
            return grouped - grouped.mean(dim=1, keepdim=True)
    """
    assert lines(tiled, ["RL202"]) == [(7, "RL202")]


def test_rl202_look_alikes_reshapes_that_match_the_layout_and_per_token_tables():
    source = """
        import torch

        def rows_last(question_ids, scores, spec):
            per_q = spec.answers_each
            stacked = question_ids.repeat_interleave(per_q, dim=0)
            table = scores.view(-1, per_q)
            return stacked, table - table.mean(dim=1, keepdim=True)

        def tiled_by_columns(questions, scores, reps):
            stacked = questions * reps
            table = scores.view(-1, len(questions))
            return stacked, table - table.mean(dim=0, keepdim=True)

        def centred_by_columns(seqs, scores):
            N, L = seqs.shape
            table = scores.view(-1, N)
            return table - table.mean(0)

        def per_token(scores, L):
            return scores.view(-1, L).sum(1)

        def rows_are_promscores(seqs, scores):
            N, L = seqs.shape
            table = scores.view(N, -1)
            return table - table.mean(dim=1, keepdim=True)
    """
    assert lines(source, ["RL202"]) == []


PAIRED = """
    import numpy as np
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    lm = AutoModelForCausalLM.from_pretrained("Qwen/Qwen2.5-0.5B-Instruct")
    tok = AutoTokenizer.from_pretrained("Qwen/Qwen2.5-0.5B-Instruct")


    def grade(reference, reply):
        return float(reference in reply)


    def scores_of(references, replies):
        return [grade(r, y) for r, y in zip(references, replies)]


    def rollout(rows, k):
        enc = tok([r["q"] for r in rows], return_tensors="pt", padding=True)
        ids = {ids}
        refs = {refs}
        out = lm.generate(input_ids=ids, do_sample=True, max_new_tokens=64)
        return scores_of(refs, tok.batch_decode(out[:, ids.shape[1]:], skip_special_tokens=True))
"""


@pytest.mark.parametrize("ids, refs, reported", [
    # the prompts' copies contiguous, the references tiled (nanoGRPO's shape, in a function with a helper)
    ('enc["input_ids"].repeat_interleave(k, dim=0)', '[r["a"] for _ in range(k) for r in rows]', [15]),
    # the prompts tiled, the references contiguous
    ('enc["input_ids"].repeat(k, 1)', '[r["a"] for r in rows for _ in range(k)]', [15]),
    ('torch.as_tensor(np.repeat(enc["input_ids"].numpy(), k, axis=0))', '[r["a"] for _ in range(k) for r in rows]',
     [15]),
    # look-alikes: both laid out the same way, a count of another name, references not repeated at all
    ('torch.repeat_interleave(enc["input_ids"], k, dim=0)', '[r["a"] for r in rows for _ in range(k)]', []),
    ('enc["input_ids"].repeat(k, 1)', '[r["a"] for _ in range(k) for r in rows]', []),
    ('enc["input_ids"].repeat_interleave(k, dim=0)', '[r["a"] for _ in range(len(rows)) for r in rows]', []),
    ('enc["input_ids"].repeat_interleave(k, dim=0)', '[r["a"] for r in rows]', []),
])
def test_rl202_sequences_repeated_in_different_layouts_are_paired_row_by_row(ids, refs, reported):
    assert [line for line, _ in lines(PAIRED.format(ids=ids, refs=refs), ["RL202"])] == reported


def test_rl202_pairing_followed_into_methods_whose_caller_repeats_the_batch():
    source = """
        import torch


        class Sampler:
            def __init__(self, policy, tokenizer, copies):
                self.policy, self.tokenizer, self.copies = policy, tokenizer, copies

            def judge(self, items, texts):
                return [float(item["gold"] in text) for item, text in zip(items, texts)]

            def step(self, items):
                batch = self.tokenizer([item["prompt"] for item in items], return_tensors="pt", padding=True)
                prompt_ids = torch.repeat_interleave(batch["input_ids"], self.copies, dim=0)
                items = [item for _ in range(self.copies) for item in items]
                generated = self.policy.generate(prompt_ids, max_new_tokens=32)
                return self.judge(items, self.tokenizer.batch_decode(generated))
    """
    assert lines(source, ["RL202"]) == [(10, "RL202")]
    fixed = source.replace("for _ in range(self.copies) for item in items", "for item in items for _ in range(self.copies)")
    assert lines(fixed, ["RL202"]) == []


def test_rl203_a_statistic_of_the_cut_vector_met_with_the_vector_itself():
    source = """
        import torch

        def baseline(pts, spec):
            w = spec.answers_each
            mu = pts.view(-1, w).mean(dim=1)
            return pts - mu

        def aliased(pts, spec):
            n = spec.num_generations
            return pts - pts.reshape(-1, n).mean(1)

        def expanded(pts, spec):
            w = spec.answers_each
            mu = pts.view(-1, w).mean(dim=1).repeat_interleave(w)
            return pts - mu

        def other_vector(pts, lengths, w):
            return lengths - pts.view(-1, w).mean(1)

        def per_token(pts, L):
            return pts.view(-1, L).sum(1) - 1.0
    """
    assert lines(source, ["RL203"]) == [(7, "RL203"), (11, "RL203")]


def test_rl204_per_key_statistics_in_dicts_and_dataframes():
    source = """
        import numpy as np
        import torch
        from collections import defaultdict

        def loop_dicts(pts, qids, eps=1e-6):
            q2pts = defaultdict(list)
            q2mu, q2sd = {}, {}
            for j in range(len(pts)):
                q2pts[qids[j]].append(pts[j])
            for q, vals in q2pts.items():
                q2mu[q] = torch.tensor(vals).mean()
                q2sd[q] = torch.std(torch.tensor(vals)) if len(vals) > 1 else torch.tensor(1.0)
            return [(pts[j] - q2mu[qids[j]]) / (q2sd[qids[j]] + eps) for j in range(len(pts))]

        def comprehension(pts, qids, groups):
            sd = {q: float(np.std(v)) for q, v in groups.items()}
            return [p / (sd[q] + 1e-6) for p, q in zip(pts, qids)]

        def frame(df):
            g = df.groupby("question")["points"]
            return (df["points"] - g.transform("mean")) / g.transform("std")

        def batch_level(pts, stats):
            stats["std"] = pts.std()
            return (pts - pts.mean()) / (stats["std"] + 1e-6)

        def mean_only(pts, qids, groups):
            mu = {q: float(np.mean(v)) for q, v in groups.items()}
            return [p - mu[q] for p, q in zip(pts, qids)]
    """
    assert lines(source, ["RL204"]) == [(14, "RL204"), (18, "RL204"), (22, "RL204")]


def test_rl206_weights_that_are_not_the_mask_while_the_mask_goes_unused():
    source = """
        import torch

        def weighted(token_losses, importance, response_mask):
            return (token_losses * importance).mean()

        def weighted_and_masked(token_losses, importance, response_mask):
            return (token_losses * importance * response_mask).sum() / response_mask.sum()

        def weighted_without_a_mask(token_losses, importance):
            return (token_losses * importance).mean()

        def mask_used_before(token_losses, importance, response_mask):
            kept_losses = token_losses * response_mask
            return (kept_losses * importance).mean()

        def not_a_loss(values, importance, response_mask):
            return (values * importance).mean()
    """
    assert lines(source, ["RL206"], **{"rl-context": "always"}) == [(5, "RL206")]


def test_rl203_scattered_group_statistics_must_be_indexed_back_by_the_group_ids():
    source = """
        import torch
        from torch_scatter import scatter_mean, scatter_std

        def scattered(scores, qids, nq):
            qmean = torch.zeros(nq).scatter_reduce(0, qids, scores, reduce="mean", include_self=False)
            return scores - qmean

        def library(scores, qids):
            return scores - scatter_mean(scores, qids, dim=0)

        def indexed(scores, qids, nq):
            qmean = torch.zeros(nq).scatter_reduce(0, qids, scores, reduce="mean", include_self=False)
            return scores - qmean[qids]

        def looped(scores, G):
            qmean = scores.view(-1, G).mean(1)
            return [scores[j] - qmean[j // G] for j in range(len(scores))]

        def normalised(scores, qids):
            return (scores - scatter_mean(scores, qids)[qids]) / (scatter_std(scores, qids)[qids] + 1e-6)
    """
    assert lines(source, ["RL203"]) == [(7, "RL203"), (10, "RL203")]
    assert lines(source, ["RL204"]) == [(21, "RL204")]


def walrus(text):
    result = lint_text(textwrap.dedent(text), "adv.py", Settings(select=["RL209"]))
    return [(d.line, d.column, d.message) for d in result.diagnostics]


def test_walrus_over_a_comparison_then_divided_by_is_reported_with_the_fix():
    found = walrus("""
        def normalise(batch, floor):
            mu = sum(batch) / len(batch)
            if sigma := stdev(batch) >= floor:
                return [(b - mu) / sigma for b in batch]
            return batch
    """)
    assert found == [(4, 8, "`sigma := stdev(batch) >= floor` stores the comparison (True or False) in `sigma`, "
                            "not `stdev(batch)`, and `sigma` is used as a number on line 5: write "
                            "`(sigma := stdev(batch)) >= floor`")]


def test_walrus_in_a_comprehension_filter_and_at_module_level():
    assert [line for line, _, _ in walrus("""
        if width := get_width() < 80:
            pad = width * 2
        rows = [r for r in data if (m := r.max() > 0) and r / m > 0.5]
    """)] == [2, 4]


def test_walrus_parenthesised_as_it_should_be_or_around_the_comparison_is_not_reported():
    assert walrus("""
        def scale(t):
            if (s := t.std()) > 0:
                t = t / s
            if s := (t.abs().max() > 1):
                t = t * s
            return t
    """) == []


def test_walrus_target_used_only_as_a_flag_is_not_reported():
    assert walrus("""
        def check(t):
            if positive := t.min() > 0:
                log("all positive", positive)
            elif empty := len(t) <= 0:
                assert not empty
            return positive or empty
    """) == []


def test_walrus_over_equality_membership_or_identity_counted_as_a_flag_is_not_reported():
    assert walrus("""
        def tally(pairs, seen):
            n = 0
            for a, b in pairs:
                if same := a == b:
                    n += same
                if known := a in seen:
                    n = n + known
                if missing := b is None:
                    n -= missing
            return n
    """) == []


def test_walrus_target_rebound_before_it_is_computed_with_is_not_reported():
    assert walrus("""
        def f(t):
            if spread := t.std() > 0:
                spread = t.std()
                return t / spread
    """) == []


RL206_SHAPES = """
    import torch
    import torch.nn.functional as F
    from transformers import AutoModelForCausalLM

    policy = AutoModelForCausalLM.from_pretrained("gpt2")

    def step(prompt_ids, pad_id, advantages, rewards, chunk):
        seqs = policy.generate(prompt_ids, do_sample=True)
        logps = torch.log_softmax(policy(seqs).logits[:, :-1], dim=-1).gather(-1, seqs[:, 1:, None]).squeeze(-1)
        action_mask = (seqs[:, 1:] != pad_id).float()
        token_loss = -logps * advantages
        per_seq_loss = (token_loss * action_mask).sum(dim=1) / action_mask.sum(dim=1)
        valid_mask = (rewards > 0).float()
        a = (token_loss * action_mask).mean()
        b = (per_seq_loss * valid_mask).mean()
        c = (per_seq_loss * action_mask[:, 0]).mean()
        agg_loss = chunk(token_loss, action_mask, dim=-1)
        d = (agg_loss * valid_mask).mean()
        return a + b + c + d

    def dpo(pol_chosen, pol_rejected, ref_margin, pair_mask, beta):
        margin_loss = -F.logsigmoid(beta * (pol_chosen - pol_rejected - ref_margin))
        return (margin_loss * pair_mask).mean()
"""


def rl206(text, named):
    settings = Settings(select=["RL206"] if named else ["ALL"], options={"rl-context": "always"})
    return sorted(d.line for d in lint_text(textwrap.dedent(text), "loss.py", settings).diagnostics
                  if d.code == "RL206")


def test_rl206_by_default_reports_only_a_time_axis_the_engine_proves():
    # a: per-token losses of generated sequences times their mask; b, c: one loss per sequence (the engine
    # follows the sum over the time axis); d, dpo: shapes out of sight (a helper's result, parameters)
    assert rl206(RL206_SHAPES, named=False) == [15]
    # named, the broad form judges unknown shapes by their names; a proven per-sequence loss stays silent, and
    # so does one a helper handed the mask reduced over the time axis (`dim=-1`)
    assert rl206(RL206_SHAPES, named=True) == [15, 24]
    assert rl206(RL206_SHAPES.replace("action_mask, dim=-1)", "action_mask)"), named=True) == [15, 19, 24]
    assert rl206(RL206_SHAPES.replace("agg_loss = chunk(", "agg_loss = 0.5 * chunk("), named=True) == [15, 24]


def test_rl206_a_framework_completion_mask_has_a_time_axis():
    source = """
        from trl import GRPOTrainer

        class Trainer(GRPOTrainer):
            def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
                seq_loss = self.sequence_losses(model, inputs)
                return (seq_loss * inputs["completion_mask"]).mean()
    """
    assert rl206(source, named=False) == [7]


# ---- RL210: a gathered value cut to one rank's count ----

RL210_LOOP = """
import torch
import torch.distributed as dist
from accelerate import Accelerator

accelerator = Accelerator()


def advantages_of(texts, dataset):
    rewards = torch.tensor([float(len(t)) for t in texts])
    everyone = accelerator.gather(rewards)
    centred = everyone - everyone.mean()
    {line}
    return mine
"""


def rl210(line):
    text = RL210_LOOP.replace("{line}", line)
    result = lint_text(text, "train.py", Settings(select=["RL210"], options={"rl-context": "always"}))
    return [d.line for d in result.diagnostics]


def test_rl210_a_slice_from_zero_to_the_local_count_keeps_rank_zero_values():
    assert rl210("mine = centred[: len(rewards)]") == [13]
    assert rl210("mine = centred[0 : rewards.shape[0]]") == [13]
    assert rl210("mine = centred[: rewards.size(0)].float()") == [13]


def test_rl210_slices_with_the_rank_offset_are_not_reported():
    rank = "accelerator.process_index"
    assert rl210(f"mine = centred[{rank} * len(rewards) : ({rank} + 1) * len(rewards)]") == []
    assert rl210(f"mine = centred[slice({rank} * len(rewards), ({rank} + 1) * len(rewards))]") == []
    assert rl210("mine = centred[dist.get_rank() * len(rewards) :]") == []


def test_rl210_the_main_process_and_logging_see_their_own_share_or_only_look():
    assert rl210("mine = None\n    if accelerator.is_main_process:\n        mine = centred[: len(rewards)]") == []
    assert rl210("mine = None\n    if dist.get_rank() == 0:\n        mine = centred[: len(rewards)]") == []
    assert rl210("mine = None\n    if dist.get_rank() == 1:\n        mine = centred[: len(rewards)]") == [15]
    assert rl210("mine = None\n    print('first', centred[: len(rewards)].tolist())") == []
    assert rl210("head = centred[: len(rewards)]\n    accelerator.log({'head': head.mean()})\n    mine = None") == []
    assert rl210("head = centred[: len(rewards)]\n    print(head)\n    mine = head") == [13]  # also returned


def test_rl210_global_sizes_unknown_counts_and_slices_of_local_values_are_not_reported():
    assert rl210("mine = centred[: len(dataset)]") == []  # the padding gather_for_metrics adds, cut off
    assert rl210("mine = centred[: len(texts)]") == []  # a count the engine cannot tie to one rank
    assert rl210("mine = rewards[: len(rewards)]") == []  # nothing gathered
    assert rl210("mine = centred.mean()") == []


def test_rl210_through_a_helper_of_another_module(tmp_path):
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "comm.py").write_text(textwrap.dedent("""
        import torch
        import torch.distributed as dist


        def all_rows(values):
            parts = [torch.zeros_like(values) for _ in range(dist.get_world_size())]
            dist.all_gather(parts, values)
            return torch.cat(parts)
    """))
    (tmp_path / "advantage.py").write_text(textwrap.dedent("""
        import torch
        from comm import all_rows


        def grpo_advantages(scores):
            local = torch.as_tensor(scores)
            everyone = all_rows(local)
            whitened = (everyone - everyone.mean()) / (everyone.std() + 1e-6)
            return whitened[: len(local)]
    """))
    result = lint_files([str(tmp_path / "advantage.py")], Settings(select=["RL210"], options={"rl-context": "always"}))
    assert [(d.line, d.code) for d in result.diagnostics] == [(10, "RL210")]
