"""RL1xx and RL202-RL208: messages name the expression and the consequence; defaults."""
import textwrap

import pytest

from rllint.registry import load_rules
from rllint.runner import lint_files, lint_text
from rllint.settings import Settings


def findings(source: str, select=("RL",)):
    settings = Settings(select=list(select) if select is not None else None)
    result = lint_text(textwrap.dedent(source), "snippet.py", settings)
    return [(d.line, d.code, d.message) for d in result.diagnostics]


def test_reversed_ratio_message_names_the_expression_and_the_consequence():
    (line, code, message), = findings("""
        import torch
        def loss(logps, old_logps):
            return torch.exp(old_logps - logps)
    """)
    assert (line, code) == (4, "RL101")
    assert message.startswith("`torch.exp(old_logps - logps)` is old/new: the PPO ratio is inverted")


def test_group_layout_message_says_which_layout():
    (line, code, message), = findings("""
        def adv(prompt_ids, rewards, G):
            ids = prompt_ids.repeat_interleave(G, dim=0)
            return ids, rewards.view(G, -1)
    """)
    assert (line, code) == (4, "RL202")
    assert "contiguous" in message and "`.view(-1, G)`" in message


def test_std_and_length_normalisation_are_off_by_default():
    rules = load_rules()
    assert not rules["RL204"].default_enabled and not rules["RL205"].default_enabled
    source = """
        def adv(rewards, G):
            std = rewards.view(-1, G).std(dim=1).repeat_interleave(G)
            return rewards / (std + 1e-6)
    """
    assert findings(source, select=None) == []  # the default selection
    assert [c for _, c, _ in findings(source)] == ["RL204"]


def test_files_without_trigger_words_are_not_reported():
    assert findings("def f(x):\n    return x.sum() / x.numel()\n") == []


# ---- patterns that also occur in ML code of other kinds: reported only in RL code ----

NOT_RL = """
    import torch

    def confidence_loss(logits, labels, valid_mask, hidden, attention_mask, sigma):
        probs = torch.softmax(logits, dim=-1)
        log_probs = torch.log(probs.clamp_min(1e-12))
        loss = -(log_probs.gather(-1, labels.unsqueeze(-1)).squeeze(-1))
        pooled = (hidden * attention_mask.unsqueeze(-1)).sum(1) / valid_mask.sum(1, keepdim=True)
        scale = (hidden - hidden.mean()) / (hidden.std() + 1.0)
        return (loss * valid_mask).mean(), pooled, scale
"""
RL_WORDS = """
    def grpo_step(policy, advantages, rollouts):
        return policy(rollouts), advantages
"""


def test_softmax_logs_masked_means_and_epsilons_are_reported_only_in_rl_code():
    assert findings(NOT_RL, select=("RL108", "RL201", "RL206", "RL207")) == []
    found = findings(NOT_RL + RL_WORDS, select=("RL108", "RL201", "RL206", "RL207"))
    assert [(line, code) for line, code, _ in found] == [(6, "RL108"), (8, "RL207"), (9, "RL201"), (10, "RL206")]


def test_a_cast_in_one_branch_does_not_reach_the_other():
    assert findings("""
        import torch
        from torch import nn

        def attention(weights):
            if weights.dtype == torch.float16:
                weights = nn.functional.softmax(weights, dim=-1, dtype=torch.float32).to(torch.float16)
            else:
                weights = nn.functional.softmax(weights, dim=-1)
            return weights
    """, select=("RL107",)) == []


SCORE_LABELS = """
    import torch

    def response_logps(policy, input_ids, labels):
        logits = policy(input_ids).logits
        return torch.log_softmax(logits, dim=-1).gather(-1, labels.unsqueeze(-1)).squeeze(-1)
"""


def test_labels_are_unshifted_unless_the_file_builds_them_shifted():
    assert [code for _, code, _ in findings(SCORE_LABELS, select=("RL109",))] == ["RL109"]
    assert findings(SCORE_LABELS + """
    def encode(sequences):
        ids = torch.tensor(sequences)
        return {"input_ids": ids[:, :-1], "labels": ids[:, 1:].clone()}
    """, select=("RL109",)) == []


def rl109(source, named):
    return [line for line, code, _ in findings(source, select=("RL109",) if named else ("ALL",)) if code == "RL109"]


def test_rl109_by_default_needs_the_very_ids_the_model_read():
    source = """
        import torch

        def helper_labels(model, batch, encode):
            enc = encode(batch)
            logits = model(enc["input_ids"]).logits
            return logits.log_softmax(-1).gather(-1, enc["labels"].unsqueeze(-1)).squeeze(-1)

        def aliased(model, tokens):
            seq = tokens.to("cuda")
            logits = model(tokens).logits
            return logits.log_softmax(-1).gather(-1, seq.unsqueeze(-1)).squeeze(-1)
    """
    assert rl109(source, named=False) == [12]  # a helper's labels are out of sight; `seq` is `tokens` moved
    assert rl109(source, named=True) == [7, 12]  # the broad form judges `labels` by its name
    assert rl109(source.replace('tokens.to("cuda")', "align(tokens)"), named=False) == []


def test_rl109_ids_shifted_in_place_or_written_one_position_early_are_aligned():
    copied = """
        import torch

        def step(model, input_ids, pad_id):
            labels = input_ids.clone()
            REWRITE
            logits = model(input_ids).logits
            return logits.log_softmax(-1).gather(-1, labels.unsqueeze(-1)).squeeze(-1)
    """
    assert rl109(copied.replace("REWRITE", "pass"), named=False) == [8]
    for rewrite in ("labels[:, :-1] = input_ids[:, 1:]", "labels.copy_(torch.roll(input_ids, -1, 1))"):
        assert rl109(copied.replace("REWRITE", rewrite), named=False) == []
    built = """
        import torch

        def build(rows, width, pad):
            labels = torch.full((len(rows), width), pad)
            for i, (start, ids) in enumerate(rows):
                labels[i, START:start + len(ids)] = torch.tensor(ids)
            return labels

        def score(model, tokens, rows, width, pad):
            labels = build(rows, width, pad)
            return torch.gather(model(tokens).logits.log_softmax(-1), -1, labels.unsqueeze(-1)).squeeze(-1)
    """
    assert rl109(built.replace("START", "start - 1"), named=True) == []
    assert rl109(built.replace("START", "start"), named=True) == [12]


def test_rl109_targets_of_an_unshifted_cross_entropy_are_already_shifted():
    source = """
        import torch

        def sft_and_logps(model, example):
            criterion = torch.nn.CrossEntropyLoss()
            logits = model(example.tokens).logits
            labels = example.labels.view(-1)
            loss = criterion(input=CE_LOGITS, target=labels)
            labels = torch.masked_select(labels, example.masks.view(-1))
            flat = logits.view(-1, logits.size(-1))[example.masks.view(-1)]
            return loss, torch.gather(torch.log_softmax(flat, dim=-1), -1, labels.unsqueeze(-1)).squeeze(-1)
    """
    assert rl109(source.replace("CE_LOGITS", "logits.view(-1, logits.size(-1))"), named=True) == []
    # cross-entropy against shifted logits says nothing of how the labels line up with unshifted ones
    assert rl109(source.replace("CE_LOGITS", "logits[:, :-1].reshape(-1, logits.size(-1))"), named=True) == [11]


def test_gather_on_dim_one_of_one_sequence_is_the_vocabulary_axis():
    source = """
        import torch

        def response_logps(model, full_ids, starts):
            log_probs = torch.log_softmax(model(full_ids).logits, dim=-1)
            out = []
            for i, start in enumerate(starts):
                window = log_probs[i, start - 1:-1, :]
                out.append(window.gather(1, full_ids[i, start:].unsqueeze(1)).squeeze(1))
            return out, log_probs.gather(1, full_ids[:, 1:].unsqueeze(-1))
    """
    assert [line for line, _, _ in findings(source, select=("RL105",))] == [10]  # the batch gather only


def test_a_width_one_slice_keeps_the_index_axis():
    source = """
        import torch

        def step_logps(logits, completion_ids, t):
            logps = torch.log_softmax(logits[:, t], dim=-1)
            return torch.gather(logps, -1, completion_ids[:, INDEX])
    """
    for kept in ("t:t + 1", "3:4", "-1:"):
        assert findings(source.replace("INDEX", kept), select=("RL106",)) == []
    for lacking in ("t", "1:", "t:t + 2"):
        assert [c for _, c, _ in findings(source.replace("INDEX", lacking), select=("RL106",))] == ["RL106"]


@pytest.mark.parametrize("position, reported", [("[0, -1]", False), ("", True)])
def test_one_position_s_logits_gathered_on_their_only_axis(position, reported):
    """`out.logits[0, -1]` is one position's `[V]` logits: gathering them on dim 0 with a 1-D id tensor is right;
    the whole `[B, T, V]` logits gathered with the same ids lack the trailing axis."""
    source = f"""
        import torch
        from transformers import AutoModelForCausalLM

        def support_probs(logits, support_ids):
            support = torch.tensor(support_ids, dtype=torch.long)
            return torch.softmax(logits.float().gather(0, support), dim=0)

        def step(ids, support_ids):
            model = AutoModelForCausalLM.from_pretrained("gpt2")
            out = model(input_ids=ids)
            return support_probs(out.logits{position}, support_ids)
    """
    assert [c for _, c, _ in findings(source, select=("RL106",))] == (["RL106"] if reported else [])


def test_numpy_group_statistics_by_axis_and_keepdims():
    source = """
        import numpy as np

        def grpo_advantages(rewards, G):
            return rewards - np.mean(rewards.reshape(-1, G), axis=1KEEP)
    """
    assert [c for _, c, _ in findings(source.replace("KEEP", ""), select=("RL203",))] == ["RL203"]
    assert findings(source.replace("KEEP", ", keepdims=True"), select=("RL203",)) == []


def test_rows_selected_by_position_are_not_a_gather_over_time():
    source = """
        import torch

        def labelled_rows(model, inputs, labels):
            logits = model(inputs).logits
            rows = (labels >= 0).nonzero()
            return torch.gather(logits, 0, rows.expand(rows.size(0), logits.size(1))), torch.gather(logits, 0, labels)
    """
    assert [(line, code) for line, code, _ in findings(source, select=("RL105",))] == [(7, "RL105")]


def test_kl_estimator_messages_say_which_estimator_is_wrong():
    source = """
        import torch
        def kl_terms(lp, ref_lp, token_rewards, beta):
            k3 = torch.exp(lp - ref_lp) - (lp - ref_lp) - 1
            shaped = token_rewards + beta * (lp - ref_lp)
            return k3, shaped
    """
    found = findings(source, select=("RL110",))
    assert [(line, code) for line, code, _ in found] == [(4, "RL110"), (5, "RL110")]
    assert "k3 KL estimator with the ratio reversed" in found[0][2]
    assert found[1][2].startswith("`token_rewards + beta * (lp - ref_lp)` rewards the policy's log-probs over the reference's")


def test_k1_in_the_loss_needs_policy_gradient_on_its_log_probs():
    source = """
        import torch
        def step(actor, ref_actor, opt, ids, adv):
            lp = torch.log_softmax(actor(ids).logits, -1).gather(-1, ids.unsqueeze(-1)).squeeze(-1)
            with torch.no_grad():
                ref_lp = torch.log_softmax(ref_actor(ids).logits, -1).gather(-1, ids.unsqueeze(-1)).squeeze(-1)
                frozen_lp = lp.detach()
            loss = -(lp * adv).mean() + 0.1 * (lp - ref_lp).mean()
            loss.backward()
            metric = (frozen_lp - ref_lp).mean()
            return metric
    """
    found = findings(source, select=("RL110",))
    assert [(line, code) for line, code, _ in found] == [(8, "RL110")]
    assert "gradient is zero in expectation" in found[0][2]


def test_k1_in_the_loss_weighted_by_a_named_coefficient():
    source = """
        import torch
        def update(policy, opt, x, acts, ref_logp, adv, entropy_beta: float, gain: float):
            dist = torch.distributions.Categorical(logits=policy(x))
            logp = dist.log_prob(acts)
            drift = logp - ref_logp
            obj = logp * adv - entropy_beta * drift
            opt.zero_grad()
            (-obj.mean()).backward()
    """
    found = findings(source, select=("RL110",))
    assert [(line, code) for line, code, _ in found] == [(6, "RL110")]
    assert findings(source.replace("entropy_beta * drift", "gain * drift"), select=("RL110",)) == []  # sign unknown


ADAPTIVE_K1 = """
    def token_logps(model, ids):
        import torch
        logits = model(input_ids=ids).logits[:, :-1].float()
        return torch.log_softmax(logits, dim=-1).gather(-1, ids[:, 1:].unsqueeze(-1)).squeeze(-1).sum(-1)


    def train(batches, coef=0.2, lo=0.01, hi=5.0):
        import torch
        from transformers import AutoModelForCausalLM
        policy = AutoModelForCausalLM.from_pretrained("Qwen/Qwen2.5-0.5B")
        opt = torch.optim.AdamW(policy.parameters(), lr=1e-6)
        for ids, adv in batches:
            with torch.no_grad():
                with policy.disable_adapter():
                    ref = token_logps(policy, ids)
            new = token_logps(policy, ids)
            kl = PENALTY
            loss = -(new * adv).mean() + coef * kl
            opt.zero_grad()
            loss.backward()
            opt.step()
            coef *= 1.5 if kl.item() > 0.1 else 0.9
            coef = min(hi, max(lo, coef))
"""


@pytest.mark.parametrize("penalty, reported", [
    ("(new - ref).mean()", True),
    ("(torch.exp(ref - new) - (ref - new) - 1).mean()", False),  # k3: the estimator for a loss
])
def test_k1_in_the_loss_of_a_lazily_importing_loop_with_an_adaptive_coefficient(penalty, reported):
    """`import torch` inside the functions and a coefficient clamped into a range each step: the log-probs and
    the coefficient are still known, so the k1 estimator in the loss is seen (and k3 is not mistaken for it)."""
    found = findings(ADAPTIVE_K1.replace("PENALTY", penalty), select=None)
    assert [(line, code) for line, code, _ in found if code == "RL110"] == ([(18, "RL110")] if reported else [])


BRANCHED_KL = """
    import torch
    from transformers import AutoModelForCausalLM

    policy = AutoModelForCausalLM.from_pretrained("Qwen/Qwen2.5-0.5B")
    frozen = AutoModelForCausalLM.from_pretrained("Qwen/Qwen2.5-0.5B").eval()
    opt = torch.optim.AdamW(policy.parameters(), lr=1e-6)


    def token_logps(model, ids):
        return torch.log_softmax(model(ids).logits, -1).gather(-1, ids.unsqueeze(-1)).squeeze(-1)


    def step(ids, adv, use_kl):
        cur = token_logps(policy, ids)
        with torch.no_grad():
            base = token_logps(frozen, ids)
        if use_kl:
            kl = PENALTY
        else:
            kl = torch.tensor(0.0)
        loss = -(cur * adv).mean() + 0.1 * kl
        loss.backward()
"""


@pytest.mark.parametrize("penalty, reported", [
    ("(cur - base).mean()", True),
    ("0.5 * (cur - base).sum(-1).mean()", True),
    ("(torch.exp(base - cur) - (base - cur) - 1).mean()", False),  # k3: the estimator for a loss
    ("(cur - base).mean().detach()", False),  # no gradient reaches it
    ("(cur.detach() - base).mean()", False),  # the policy's log-probs cut from their graph
    ("(base - cur).mean()", True),  # reversed: pays the policy for moving away
    ("((base - cur) * adv).mean()", False),  # weighted by advantages: a policy gradient on the log-ratio
])
def test_k1_in_the_loss_on_one_branch_of_the_penalty(penalty, reported):
    found = findings(BRANCHED_KL.replace("PENALTY", penalty), select=("RL110",))
    assert [(line, code) for line, code, _ in found] == ([(19, "RL110")] if reported else [])


def test_the_reversed_k1_in_the_loss_says_it_pushes_away():
    found = findings(BRANCHED_KL.replace("PENALTY", "(base - cur).mean()"), select=("RL110",))
    assert "sign reversed" in found[0][2] and "moving away from the reference" in found[0][2]
    found = findings(BRANCHED_KL.replace("PENALTY", "(cur - base).mean()"), select=("RL110",))
    assert "sign reversed" not in found[0][2]


def test_a_kl_function_returning_the_reversed_k1_is_reported_when_named_unless_it_declares_a_direction():
    source = """
        import torch

        class Estimators:
            def kl_first_order(self, policy_logps, reference_logps, mask=None):
                diff = (reference_logps - policy_logps)
                if mask is not None:
                    diff = diff * mask
                return diff

            def kl_forward(self, policy_logps, reference_logps):
                return policy_logps - reference_logps

            def kl_shaping(self, policy_logps, reference_logps, kl_coef: float):
                return -kl_coef * (policy_logps - reference_logps)

            def kl_backward(self, policy_logps, reference_logps):
                \"\"\"Estimate of KL(q_ref || p_theta).\"\"\"
                return reference_logps - policy_logps

            def log_gap(self, policy_logps, reference_logps):
                return reference_logps - policy_logps

            def kl_k3(self, policy_logps, reference_logps):
                d = reference_logps - policy_logps
                return d.exp() - d - 1
    """
    found = findings(source, select=("RL110",))
    assert [(line, code) for line, code, _ in found] == [(9, "RL110")]
    assert "k1 KL estimator with the sign reversed" in found[0][2]
    assert findings(source, select=None) == []  # by default: only the function's name says it is a KL estimator


def test_negative_k2_is_reported_as_an_estimator_not_as_a_weighted_penalty():
    source = """
        import torch
        def shape(cfg, scores, pol_logps, ref_logps):
            diff = pol_logps - ref_logps
            sq_kl = -0.5 * diff ** 2
            kl = 0.5 * diff ** 2
            kl_penalty = -cfg.kl_beta * kl
            return scores + kl_penalty, sq_kl
    """
    found = findings(source, select=("RL110",))
    assert [(line, code) for line, code, _ in found] == [(5, "RL110")]
    assert "k2 KL estimator with a negative sign" in found[0][2]


def test_kl_to_old_policy_names_the_slot():
    (line, code, message), = findings("""
        def update(loss_fn, logp, rollout_logp, adv):
            return loss_fn(logp, adv, ref_logp=rollout_logp)
    """, select=("RL111",))
    assert (line, code) == (3, "RL111")
    assert message.startswith("`rollout_logp` holds the old policy's log-probs but is given as the reference's "
                              "(`ref_logp`)")


def test_softmax_of_gathered_log_probs_message():
    (line, code, message), = findings("""
        import torch
        def weights(model, ids):
            lp = model(ids).logits.log_softmax(-1).gather(-1, ids.unsqueeze(-1)).squeeze(-1)
            return lp.softmax(-1)
    """, select=("RL105",))
    assert (line, code) == (5, "RL105")
    assert "already gathered" in message and "`softmax` runs over the time" in message


def test_gae_over_padding_names_the_leaking_row():
    source = """
        import torch, trl
        def advantages(critic, ids, rewards, attention_mask, gamma=1.0, lam=0.95):
            values = critic(ids, attention_mask=attention_mask).squeeze(-1)
            gae, out = 0.0, []
            for t in reversed(range(values.shape[-1])):
                nxt = values[:, t + 1] if t + 1 < values.shape[-1] else 0.0
                gae = rewards[:, t] + gamma * nxt - values[:, t] + gamma * lam * gae
                out.append(gae)
            return out
    """
    found = findings(source, select=("RL208",))
    assert [(line, code) for line, code, _ in found] == [(6, "RL208")]
    assert "`values` is not zeroed after the response ends" in found[0][2]


def test_k3_whose_log_ratio_is_masked_first_keeps_its_direction():
    source = """
        import torch
        def approx_kl3(log_probs, log_probs_ref, action_mask):
            log_ratio = log_probs - log_probs_ref
            if action_mask is not None:
                log_ratio = log_ratio * action_mask
            return torch.expm1(log_ratio) - log_ratio

        def masked_k3(logp, ref_logp, mask):
            log_ratio = (ref_logp - logp) * mask
            return torch.exp(log_ratio) - log_ratio - 1

        def weighted(logp, ref_logp, weights):
            log_ratio = (logp - ref_logp) * weights
            return torch.exp(log_ratio) - log_ratio - 1
    """
    found = findings(source, select=("RL110",))
    assert [(line, code) for line, code, _ in found] == [(7, "RL110")]


# ---- RL111: what the callee does with the reference slot -----------------------------------------

CALLEES = """
    import torch

    class Terms:
        def __init__(self, bound):
            self.bound = bound

        def unused(self, logp, ref_logp, mask=None):
            return -(logp * mask).sum() / mask.sum()

        def ratio(self, logp, ref_logp):
            return torch.exp(logp - ref_logp).clamp(max=self.bound)

        def _sequence_ratio(self, logp, base):
            r = torch.exp((logp - base).sum(-1))
            return r

        def sequence_ratio(self, logp, ref_logp=None):
            if ref_logp is None:
                return torch.ones_like(logp[:, 0])
            r = self._sequence_ratio(logp, ref_logp)
            return torch.clip(r, 0.8, self.bound)

        def abstract(self, logp, ref_logp):
            'A regularizer term.'
            raise NotImplementedError

        def k1(self, logp, ref_logp):
            return logp - ref_logp

        def k3(self, logp, ref_logp):
            d = ref_logp - logp
            return torch.clamp(torch.exp(d) - d - 1, -10, 10)

        def clamped_k1(self, logp, ref_logp):
            return torch.clamp(logp - ref_logp, -10, 10)

        def exp_not_clamped(self, logp, ref_logp):
            return torch.exp(logp - ref_logp) - 1 - (logp - ref_logp)
"""


@pytest.mark.parametrize("method", ["unused", "ratio", "sequence_ratio"])
def test_old_log_probs_in_a_reference_slot_the_callee_ignores_or_divides_by_are_not_reported(method):
    """A slot is the reference's only if the callee uses it as one: never read, or the denominator of a
    clamped importance ratio pi / pi_old, the old policy is the right value."""
    source = CALLEES + f"""
    def step(logp, old_logp):
        terms = Terms(1.2)
        return terms.{method}(logp, ref_logp=old_logp)
    """
    assert findings(source, select=("RL111",)) == []


@pytest.mark.parametrize("method", ["abstract", "k1", "k3", "clamped_k1", "exp_not_clamped"])
def test_old_log_probs_in_a_reference_slot_the_callee_takes_a_kl_of_are_reported(method):
    source = CALLEES + f"""
    def step(logp, old_logp):
        terms = Terms(1.2)
        return terms.{method}(logp, ref_logp=old_logp)
    """
    assert [(line, code) for line, code, _ in findings(source, select=("RL111",))] == [(43, "RL111")]


def test_reference_slot_of_a_helper_in_another_module(tmp_path):
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "regularizers.py").write_text(textwrap.dedent("""
        class Entropy:
            def compute(self, log_probs, ref_log_probs, mask):
                return (log_probs * mask).sum() / mask.sum()

        class KL:
            def compute(self, log_probs, ref_log_probs, mask):
                return ((log_probs - ref_log_probs) * mask).sum() / mask.sum()
    """))
    source = textwrap.dedent("""
        from regularizers import KL, Entropy

        def regularize(kind, log_prob, old_log_prob, response_mask):
            if kind == "entropy":
                return Entropy().compute(log_probs=log_prob, ref_log_probs=old_log_prob, mask=response_mask)
            reg = KL()
            return reg.compute(log_probs=log_prob, ref_log_probs=old_log_prob, mask=response_mask)
    """)
    (tmp_path / "registry.py").write_text(source)
    result = lint_text(source, str(tmp_path / "registry.py"), Settings(select=["RL111"]))
    assert [(d.line, d.code) for d in result.diagnostics] == [(8, "RL111")]


def test_rl109_labels_a_helper_of_another_module_writes_one_position_early(tmp_path):
    from rllint.analysis import summaries
    from rllint.runner import lint_files

    helper = """
        import torch

        def encode(rows, width, pad):
            tokens = torch.full((len(rows), width), pad)
            labels = torch.full((len(rows), width), -100)
            for i, (prompt, answer) in enumerate(rows):
                tokens[i, :len(prompt) + len(answer)] = torch.tensor(prompt + answer)
                labels[i, START:len(prompt) + len(answer) - 1] = torch.tensor(answer)
            return {"tokens": tokens, "labels": labels}
    """
    train = """
        import torch
        from data.encoding import encode

        def answer_logps(model, rows, pad):
            batch = encode(rows, 512, pad)
            logits = model(batch["tokens"]).logits
            return torch.gather(logits.log_softmax(-1), -1, batch["labels"].unsqueeze(-1)).squeeze(-1)
    """
    for start, expected in (("len(prompt) - 1", []), ("len(prompt)", [8])):
        (tmp_path / "data").mkdir(exist_ok=True)
        (tmp_path / "data" / "__init__.py").write_text("")
        (tmp_path / "data" / "encoding.py").write_text(textwrap.dedent(helper).replace("START", start))
        (tmp_path / "train.py").write_text(textwrap.dedent(train))
        summaries.clear_cache()
        result = lint_files([str(tmp_path / "train.py")], Settings(select=["RL109"]))
        assert [d.line for d in result.diagnostics] == expected


GAE_FROM_CALLER = """
    import torch


    def kl_rewards(logps, ref_logps, scores, ends, kl_coef=0.1):
        rewards = -kl_coef * (logps - ref_logps)
        rewards[torch.arange(len(ends)), ends] += scores
        return rewards


    def gae(values, rewards, starts, gamma=1.0, lam=0.95):
        width = rewards.shape[1]
        out = torch.zeros_like(rewards)
        for i in range(rewards.shape[0]):
            last = 0.0
            for t in reversed(range(starts[i], BOUND)):
                nxt = values[i, t + 1] if t + 1 < width else 0.0
                last = rewards[i, t] + gamma * nxt - values[i, t] + gamma * lam * last
                out[i, t] = last
        return out


    def step(critic, seqs, attention_mask, logps, ref_logps, scores, starts):
        ends = attention_mask.sum(-1) - 1
        with torch.no_grad():
            values = critic(seqs).squeeze(-1)[:, :-1]
            rewards = REWARDS
            PREPARE
            return gae(rewards=rewards, values=values, starts=starts)
"""


@pytest.mark.parametrize("rewards, prepare, bound, reported", [
    ("kl_rewards(logps, ref_logps, scores, ends)", "pass", "width", True),
    ("kl_rewards(logps * attention_mask[:, 1:], ref_logps * attention_mask[:, 1:], scores, ends)",
     "values = values * attention_mask[:, 1:]", "width", False),  # the helper's log-probs are masked: so is its result
    ("kl_rewards(logps, ref_logps, scores, ends)", "values = values * attention_mask[:, 1:]", "width", True),
    ("kl_rewards(logps, ref_logps, scores, ends) * attention_mask[:, 1:]", "values = values * attention_mask[:, 1:]",
     "width", False),  # both rows masked by the caller
    ("kl_rewards(logps, ref_logps, scores, ends)", "rewards[attention_mask[:, 1:] == 0] = 0\n"
     "            values[attention_mask[:, 1:] == 0] = 0", "width", False),  # zeroed in place after the end
    ("kl_rewards(logps, ref_logps, scores, ends)", "pass", "int(ends[i]) + 1", False),  # bounded by the response
])
def test_gae_over_padding_follows_its_rows_to_the_caller_and_into_helpers(rewards, prepare, bound, reported):
    source = GAE_FROM_CALLER.replace("REWARDS", rewards).replace("PREPARE", prepare).replace("BOUND", bound)
    found = findings(source, select=("RL208",))
    assert [(line, code) for line, code, _ in found] == ([(16, "RL208")] if reported else [])


def test_gae_over_padding_rows_no_caller_of_the_file_shows_are_not_judged(tmp_path):
    gae_only = GAE_FROM_CALLER.replace("BOUND", "width").split("def step")[0]
    assert findings(gae_only, select=("RL208",)) == []
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "advantage.py").write_text(textwrap.dedent(gae_only))
    caller = "from advantage import gae, kl_rewards\n\n\ndef step" + GAE_FROM_CALLER.split("def step")[1].replace(
        "REWARDS", "kl_rewards(logps, ref_logps, scores, ends)").replace("PREPARE", "pass")
    (tmp_path / "train.py").write_text(textwrap.dedent(caller))
    result = lint_files([str(tmp_path / "advantage.py"), str(tmp_path / "train.py")],
                        Settings(select=["RL208"], root=tmp_path))
    assert result.diagnostics == []  # a caller in another module: its arguments are that module's


def test_k1_in_the_loss_masked_by_a_comparison_of_ids_out_of_sight():
    """`batch["ids"] != pad_id` holds 0/1 whatever `batch` is: the masked sum of log-probs stays one, and its k1
    difference with the reference's reaches the loss."""
    source = """
        import torch
        import torch.nn.functional as F
        from transformers import AutoModelForCausalLM

        policy = AutoModelForCausalLM.from_pretrained("Qwen/Qwen2.5-0.5B")
        reference = AutoModelForCausalLM.from_pretrained("Qwen/Qwen2.5-0.5B").requires_grad_(False)

        def sequence_logps(logits, ids, keep):
            token = torch.gather(F.log_softmax(logits, dim=-1)[:, :-1], -1, ids[:, 1:].unsqueeze(-1)).squeeze(-1)
            return (token * keep[:, 1:]).sum(dim=1)

        def step(batch, pad_id, advantages, beta=0.05):
            ids = batch["ids"].clone()
            keep = ids != pad_id
            logps = sequence_logps(logits=policy(ids).logits, ids=ids, keep=keep)
            with torch.no_grad():
                ref = sequence_logps(logits=reference(ids).logits, ids=ids, keep=keep)
            loss = -(logps * advantages).mean() + beta * (logps - ref).mean()
            loss.backward()
    """
    found = findings(source, select=("RL110",))
    assert [(line, code) for line, code, _ in found] == [(19, "RL110")]
