"""RL112 and RL113: the clipped surrogate's bound and the clip range of whole-sequence ratios."""
import textwrap

from rllint.registry import load_rules
from rllint.runner import lint_text
from rllint.settings import Settings


def findings(source: str, select=("RL112", "RL113")):
    settings = Settings(select=list(select) if select is not None else None)
    result = lint_text(textwrap.dedent(source), "snippet.py", settings)
    return [(d.line, d.code, d.message) for d in result.diagnostics]


def codes(source: str):
    return [(line, code) for line, code, _ in findings(source)]


# ---- RL112 ----

def test_objective_with_max_is_reported_with_its_expression():
    (line, code, message), = findings("""
        import torch

        def policy_objective(new_lp, behaviour_lp, gains, band=0.25):
            w = (new_lp - behaviour_lp).exp()
            bounded = w.clamp(1.0 - band, 1.0 + band)
            objective = torch.maximum(w * gains, bounded * gains)
            return -objective.mean()
    """)
    assert (line, code) == (7, "RL112")
    assert message.startswith("`torch.maximum(w * gains, bounded * gains)` takes the max of the clipped surrogate's "
                              "objective terms")


def test_loss_with_min_is_reported_through_names_and_a_minus_on_the_weight():
    assert codes("""
        import torch

        def step(policy_lp, sampled_lp, scores, eps_lo, eps_hi):
            rho = torch.exp(policy_lp - sampled_lp)
            neg = -scores
            first = neg * rho
            second = neg * torch.clamp(rho, 1 - eps_lo, 1 + eps_hi)
            per_token = torch.min(first, second)
            return per_token.mean()
    """) == [(9, "RL112")]


def test_builtin_max_on_per_token_scalars_in_a_loop():
    assert codes("""
        import torch

        def token_objective(pairs, adv, clip=0.2):
            total = 0.0
            for new, old in pairs:
                r = torch.exp(new - old)
                total = total + max(r * adv, r.clamp(1 - clip, 1 + clip) * adv)
            return -total
    """) == [(8, "RL112")]


def test_a_clip_written_with_min_and_max_is_no_clamp_evidence():
    assert codes("""
        import math

        def token_objective(pairs, adv, clip=0.2):
            total = 0.0
            for new, old in pairs:
                r = math.exp(new - old)
                total += max(r * adv, min(max(r, 1 - clip), 1 + clip) * adv)
            return -total
    """) == []


def test_numpy_objective_with_maximum():
    assert codes("""
        import numpy as np

        def surrogate(ratio_t, adv_t, eps=0.2):
            capped = np.clip(ratio_t, 1 - eps, 1 + eps)
            return np.maximum(adv_t * ratio_t, adv_t * capped).mean()
    """) == [(6, "RL112")]


def test_correct_surrogates_are_not_reported():
    assert codes("""
        import torch

        def objective_then_negated(lp, lp_old, a, c=0.2):
            r = torch.exp(lp - lp_old)
            return -torch.min(r * a, torch.clamp(r, 1 - c, 1 + c) * a).mean()

        def loss_with_max(lp, lp_old, a, c=0.2):
            r = torch.exp(lp - lp_old)
            return torch.max(-r * a, -torch.clamp(r, 1 - c, 1 + c) * a).mean()

        def loss_written_weight_first(lp, lp_old, a, c=0.2):
            r = torch.exp(lp - lp_old)
            u1 = -a * r
            u2 = -a * r.clamp(1 - c, 1 + c)
            return torch.maximum(u1, u2).mean()
    """) == []


def test_dual_clip_third_bound_is_not_reported():
    assert codes("""
        import torch

        def dual_clip_loss(lp, lp_old, a, low=0.2, high=0.28, floor_c=3.0):
            r = torch.exp(lp - lp_old)
            l1 = -a * r
            l2 = -a * torch.clamp(r, 1 - low, 1 + high)
            pessimistic = torch.maximum(l1, l2)
            l3 = -a * floor_c
            bounded = torch.min(l3, pessimistic)
            return torch.where(a < 0, bounded, pessimistic).mean()

        def dual_clip_objective(lp, lp_old, a, c=0.2, floor_c=3.0):
            r = torch.exp(lp - lp_old)
            inner = torch.min(r * a, torch.clamp(r, 1 - c, 1 + c) * a)
            return -torch.where(a < 0, torch.max(inner, floor_c * a), inner).mean()
    """) == []


def test_value_clipping_and_other_max_calls_are_not_reported():
    assert codes("""
        import torch

        def critic_loss(v, v_old, target, c=0.2):
            v_clip = v_old + torch.clamp(v - v_old, -c, c)
            return torch.max((v - target) ** 2, (v_clip - target) ** 2).mean()

        def widest(r, a, c=0.2):
            return torch.max(r * a, torch.clamp(r, 1 - c, 1 + c) * a.detach().abs())
    """) == []


# ---- RL113 ----

def test_summed_sequence_ratio_with_token_range_is_reported_with_the_range():
    (line, code, message), = findings("""
        import torch

        CLIP = 0.25

        def sequence_surrogate(lp, rollout_lp, response_mask, adv):
            seq_log_w = ((lp - rollout_lp) * response_mask).sum(dim=1)
            w = seq_log_w.exp()
            w_clipped = torch.clamp(w, 1 - CLIP, 1 + CLIP)
            return -torch.min(w * adv, w_clipped * adv).mean()
    """)
    assert (line, code) == (9, "RL113")
    assert "to 1 +- 0.25" in message and "`exp(((lp - rollout_lp) * response_mask).sum(dim=1))`" in message


def test_difference_of_summed_log_probs_with_numeric_bounds():
    assert codes("""
        import torch

        def per_sample(policy_lp, behaviour_lp, reward):
            ratio = torch.exp(policy_lp.sum() - behaviour_lp.sum())
            return -torch.min(ratio * reward, ratio.clip(0.9, 1.1) * reward)
    """) == [(6, "RL113")]


def test_sequence_range_from_a_config_field():
    assert codes("""
        from dataclasses import dataclass
        import torch

        @dataclass
        class Cfg:
            eps: float = 0.2

        def loss(cfg: Cfg, lp, rollout_lp, adv):
            w = torch.exp(torch.sum(lp - rollout_lp, dim=-1))
            return -torch.min(w * adv, torch.clamp(w, 1 - cfg.eps, 1 + cfg.eps) * adv).mean()
    """) == [(11, "RL113")]


def test_token_level_and_length_normalised_ratios_are_not_reported():
    assert codes("""
        import torch

        def token_level(lp, rollout_lp, adv):
            w = torch.exp(lp - rollout_lp)
            return -torch.min(w * adv, torch.clamp(w, 0.8, 1.2) * adv).mean()

        def gspo_like(lp, rollout_lp, completion_mask, adv, lo=3e-4, hi=4e-4):
            lengths = completion_mask.sum(-1).clamp(min=1)
            w = torch.exp(((lp - rollout_lp) * completion_mask).sum(-1) / lengths)
            return -torch.min(w * adv, torch.clamp(w, 1 - lo, 1 + hi) * adv).mean()

        def mean_ratio_token_range(lp, rollout_lp, adv, eps=0.2):
            w = torch.exp((lp - rollout_lp).mean(-1))
            return -torch.min(w * adv, torch.clamp(w, 1 - eps, 1 + eps) * adv).mean()

        def summed_with_sequence_range(lp, rollout_lp, adv, eps=3e-4):
            w = torch.exp((lp - rollout_lp).sum(-1))
            return -torch.min(w * adv, torch.clamp(w, 1 - eps, 1 + eps) * adv).mean()

        def unknown_range(lp, rollout_lp, adv, settings):
            w = torch.exp((lp - rollout_lp).sum(-1))
            return -torch.min(w * adv, torch.clamp(w, 1 - settings.eps, 1 + settings.eps) * adv).mean()
    """) == []


def test_several_picks_of_one_distribution_summed_are_one_joint_action_not_a_sequence():
    """A slate of items drawn from one softmax over candidates: the gather's index has no trailing axis of one,
    so its last axis holds several picks of the same distribution, and their summed log-probs are one action's.
    Nothing proves a token axis: silent. One pick per position (`ids[:, :, None]`) is still a sequence."""
    assert codes("""
        import torch

        class Slate:
            eps = 0.2

            def ratio_of_choice(self, scores, behaviour_logp, chosen, gain):
                log_pi = torch.log_softmax(scores, dim=1)
                joint_logp = log_pi.gather(1, chosen).sum()
                w = (joint_logp - behaviour_logp.sum()).exp()
                return -torch.min(w * gain, torch.clamp(w, 1 - self.eps, 1 + self.eps) * gain).mean()

            def ratio_of_tokens(self, logits, rollout_lp, ids, gain):
                per_token = torch.gather(logits.log_softmax(-1), 2, ids[:, :, None]).squeeze(2)
                w = torch.exp(per_token.sum(-1) - rollout_lp.sum(-1))
                return -torch.min(w * gain, torch.clamp(w, 1 - self.eps, 1 + self.eps) * gain).mean()
    """) == [(16, "RL113")]


def test_both_rules_are_on_by_default():
    rules = load_rules()
    assert rules["RL112"].default_enabled and rules["RL113"].default_enabled
    source = """
        import torch
        def f(lp, rollout_lp, adv):
            w = torch.exp((lp - rollout_lp).sum(-1))
            return -torch.max(w * adv, torch.clamp(w, 0.8, 1.2) * adv).mean()
    """
    assert sorted(code for _, code, _ in findings(source, select=None)) == ["RL112", "RL113"]


def test_sequence_sums_taken_where_the_log_probs_were_made_are_followed_through_callers(tmp_path):
    """The sums are taken in a rollout helper of another module and in a method; the clamp sees two
    parameters. The engine follows them: a masked sum over the time axis stays a sequence log-prob."""
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "scoring.py").write_text(textwrap.dedent("""
        import torch

        def sequence_logp(model, ids, prompt_len):
            logps = model(input_ids=ids).logits[:, :-1].log_softmax(-1)
            tokens = logps.gather(-1, ids[:, 1:].unsqueeze(-1)).squeeze(-1)
            keep = torch.ones_like(ids[:, 1:])
            keep[:, : prompt_len - 1] = False
            return torch.sum(tokens * keep, dim=1), keep
    """))
    source = textwrap.dedent("""
        import torch
        from transformers import AutoModelForCausalLM
        from scoring import sequence_logp

        policy = AutoModelForCausalLM.from_pretrained("gpt2")
        optimizer = torch.optim.AdamW(policy.parameters(), lr=1e-6)


        class Learner:
            clip = 0.2

            def surrogate(self, now, then, adv):
                w = (now - then).exp()
                return -torch.min(w * adv, w.clamp(min=1 - self.clip, max=1 + self.clip) * adv).mean()

            def normalised(self, now, then, keep, adv):
                w = torch.exp((now - then) / keep.sum(-1))
                return -torch.min(w * adv, w.clamp(min=1 - self.clip, max=1 + self.clip) * adv).mean()

            def step(self, prompt_ids, adv):
                with torch.no_grad():
                    ids = policy.generate(prompt_ids, do_sample=True, max_new_tokens=64)
                    then, keep = sequence_logp(policy, ids, prompt_ids.shape[1])
                now, _ = sequence_logp(policy, ids, prompt_ids.shape[1])
                loss = self.surrogate(now, then, adv) + self.normalised(now, then, keep, adv)
                loss.backward()
                optimizer.step()
    """)
    path = tmp_path / "train.py"
    path.write_text(source)
    result = lint_text(source, str(path), Settings(select=["RL113"]))
    assert [(d.line, d.code) for d in result.diagnostics] == [(15, "RL113")]
