"""RL201 by default: a large epsilon is reported where what computes the spread proves it one."""
import os
import textwrap

import pytest

from rllint.runner import lint_files, lint_text
from rllint.settings import Settings

HEADER = "import math\nimport statistics\n\nimport numpy as np\nimport torch\nimport torch.nn.functional as F\n\n"


def found(body, named=False, **options):
    """(line within `body`, the epsilon's text) of each RL201 finding, linted as users lint by default."""
    text = HEADER + textwrap.dedent(body)
    settings = Settings(select=["RL201"] if named else None, options=options)
    result = lint_text(text, "adv.py", settings)
    lines = text.splitlines()
    offset = HEADER.count("\n")
    return [(d.line - offset, lines[d.line - 1][d.column - 1:d.end_column - 1])
            for d in result.diagnostics if d.code == "RL201"]


# ---- positives, in several written shapes ----

@pytest.mark.parametrize("spread", [
    "r.std()", "r.std(dim=0, unbiased=False)", "torch.std(r)", "np.std(r)", "statistics.pstdev(r)",
    "r.var().sqrt()", "torch.sqrt(r.var())", "np.sqrt(np.var(r))", "r.norm()", "torch.linalg.vector_norm(r)",
    "r.std().item()", "float(r.std())", "r.view(-1, 4).std(dim=1).repeat_interleave(4)",
])
def test_a_spread_computed_by_any_library_with_a_large_epsilon(spread):
    body = f"""
        def group_advantages(r):
            return (r - r.mean()) / ({spread} + 1e4)
    """
    assert found(body) == [(3, "1e4")]
    assert found(body.replace("+ 1e4", "+ 1.0")) == [(3, "1.0")]
    assert found(body.replace(f"({spread} + 1e4)", f"(0.5 + {spread})")) == [(3, "0.5")]


def test_the_spread_followed_through_assignments_attributes_and_a_helper():
    body = """
        def spread_of(scores):
            grouped = scores.view(-1, 8)
            return grouped.std(dim=1)

        class Normaliser:
            def fit(self, scores):
                self.scale = scores.std()

            def __call__(self, scores):
                return scores / (self.scale + 1.0)

        def advantages(scores):
            mean, spread = scores.mean(), scores.std()
            first = (scores - mean) / (spread + 2.0)
            helped = spread_of(scores)
            return first, scores / (helped + 3.0)
    """
    assert found(body) == [(11, "1.0"), (15, "2.0"), (17, "3.0")]


def test_a_large_epsilon_written_elsewhere_is_reported_where_it_is_written():
    body = """
        import argparse
        import os
        from dataclasses import dataclass

        STD_EPS = 1e+4

        @dataclass
        class Config:
            adv_eps: float = 0.5

        def options():
            parser = argparse.ArgumentParser()
            parser.add_argument("--norm-eps", type=float, default=1.0)
            return parser.parse_args()

        def advantages(r, cfg: Config, args):
            env_eps = float(os.environ.get("ADV_EPS", "2.0"))
            a = (r - r.mean()) / (r.std() + STD_EPS)
            b = (r - r.mean()) / (r.std() + cfg.adv_eps)
            c = (r - r.mean()) / (r.std() + args.norm_eps)
            return a, b, c, r / (r.std() + env_eps)
    """
    assert found(body) == [(6, "1e+4"), (10, "0.5"), (14, "1.0"), (18, '"2.0"')]


def test_clamps_of_a_spread_keyword_and_positional_method_and_function():
    body = """
        def advantage_floors(r, rewards):
            s = r.std()
            return (r / s.clamp(min=0.1), r / s.clamp(0.2), r / torch.clamp(s, min=0.3), r / torch.clamp(s, 0.4),
                    r / s.clamp_min(0.5), r / max(s, 0.6), r / max(0.7, s), r / np.maximum(s, 0.8))
    """
    assert [text for _, text in found(body)] == ["0.1", "0.2", "0.3", "0.4", "0.5", "0.6", "0.7", "0.8"]


def test_roots_of_a_variance_or_a_second_moment():
    body = """
        def whitened_advantages(x, mask, rewards):
            a = x / torch.sqrt(x.var() + 1e2)
            b = x / (x.var() + 1.0).sqrt()
            c = x / (x.var() + 2.0) ** 0.5
            d = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 3.0)
            mean = (x * mask).sum() / mask.sum()
            second = ((x - mean) ** 2 * mask).sum() / mask.sum()
            return a, b, c, d, (x - mean) * torch.rsqrt(second + 4.0), x / math.sqrt(np.var(x) + 5.0)
    """
    assert [text for _, text in found(body)] == ["1e2", "1.0", "2.0", "3.0", "4.0", "5.0"]


def test_an_epsilon_parameter_proven_by_the_body_its_default_and_what_its_calls_pass():
    body = """
        def whiten(values, eps=1e-8):
            return (values - values.mean()) / (values.std() + eps)

        def loud(values, eps=1.0):
            return (values - values.mean()) / (values.std() + eps)

        class Trainer:
            def normalise(self, values, floor=1e-6):
                return values / (values.std() + floor)

            def step(self, values):
                return self.normalise(values, floor=0.5), self.normalise(values, 0.25)

        def caller(values):
            return whiten(values, eps=1e4), whiten(values, 2.0), whiten(values, 1e-6), loud(values)
    """
    assert found(body) == [(5, "1.0"), (13, "0.5"), (13, "0.25"), (16, "1e4"), (16, "2.0")]


def test_a_positive_exponent_is_reported_whatever_max_epsilon_says():
    body = """
        def advantages(r):
            return r / (r.std() + 1e4), r / (r.std() + 10000.0), r / (r.std() + 1E+8)
    """
    assert found(body, **{"max-epsilon": 1e9}) == [(3, "1e4"), (3, "1E+8")]


def test_max_epsilon_widens_and_values_equal_to_it_are_reported():
    body = """
        def advantages(r):
            return r / (r.std() + 1e-2), r / (r.std() + 0.1), r / (r.std() + 0.099)
    """
    assert found(body) == [(3, "0.1")]
    assert found(body, **{"max-epsilon": 1e-3}) == [(3, "1e-2"), (3, "0.1"), (3, "0.099")]


def write(root, files):
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))


def test_a_constant_and_a_helper_of_another_module(tmp_path):
    (tmp_path / ".git").mkdir()
    write(tmp_path, {
        "configs/__init__.py": "",
        "configs/hparams.py": "ADV_EPS = 1e4\nSMALL_EPS = 1e-6\n",
        "stats.py": "def group_std(x, n):\n    return x.view(-1, n).std(dim=1)\n",
        "train.py": """\
            from configs.hparams import ADV_EPS, SMALL_EPS
            from stats import group_std


            def advantages(rewards, n):
                spread = group_std(rewards, n)
                small = (rewards - rewards.mean()) / (spread + SMALL_EPS)
                return small, (rewards - rewards.mean()) / (spread + ADV_EPS) + (rewards / (spread + 0.5))
        """})
    result = lint_files([str(tmp_path / "train.py")], Settings(), jobs=1)
    got = sorted((os.path.basename(d.path), d.line) for d in result.diagnostics if d.code == "RL201")
    assert got == [("hparams.py", 1), ("train.py", 8)]


# ---- must not flag ----

def test_clip_epsilons_optimizer_and_layer_epsilons_are_not_stability_epsilons():
    body = """
        from trl import GRPOConfig

        CLIP_EPSILON = 0.2

        def surrogate(ratio, adv, epsilon=0.2):
            clipped = torch.clamp(ratio, 1 - epsilon, 1 + epsilon)
            other = ratio.clamp(1 - CLIP_EPSILON, 1 + CLIP_EPSILON)
            return torch.min(ratio * adv, clipped * adv), other * adv / (1 + epsilon)

        def build(model, width):
            config = GRPOConfig(output_dir="out", epsilon=0.2, epsilon_high=0.28, adam_epsilon=1.0)
            optimiser = torch.optim.AdamW(model.parameters(), lr=1e-6, eps=1.0)
            positional = torch.optim.Adam(model.parameters(), 1e-6, (0.9, 0.999), 1.0)
            layer = torch.nn.LayerNorm(width, eps=1.0)
            return config, optimiser, positional, layer

        def layers(x, width):
            return F.layer_norm(x, (width,), eps=1.0), F.normalize(x, dim=-1, eps=1.0)
    """
    assert found(body) == []


@pytest.mark.parametrize("epsilon", ["1e-8", "1e-6", "1e-4", "1E-4", "0.05", "SMALL"])
def test_small_epsilons_in_every_shape(epsilon):
    body = f"""
        SMALL = 1e-5

        def shapes(r, eps={epsilon}):
            s = r.std()
            return (r / (s + {epsilon}), r / s.clamp(min={epsilon}), r / torch.sqrt(r.var() + {epsilon}),
                    r / (s + eps), r / max(s, {epsilon}))
    """
    assert found(body) == []


def test_norm_bounds_are_not_epsilons():
    body = """
        def clip(grads, model, max_norm=1.0):
            torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
            projected = grads * max_norm / max(grads.norm(), max_norm)
            unit_ball = grads / grads.norm().clamp(min=1.0)
            return projected, unit_ball, grads / torch.clamp(torch.linalg.vector_norm(grads), 2.0)
    """
    assert found(body) == []


def test_a_number_over_one_plus_a_spread_is_a_score_not_a_normalisation():
    """`1 / (1 + std)` maps a spread to a score, `scale / (1 + norm)` to a step size: nothing is normalised by the
    spread, so the constant beside it guards no division. Data divided the same way is reported."""
    body = """
        def group_advantages(losses, grads, scale=0.05):
            stability = 1.0 / (1.0 + losses.std())
            sigma = scale / (1 + grads.norm(dim=-1))
            return stability, sigma, (losses - losses.mean()) / (1.0 + losses.std())
    """
    assert found(body) == [(5, "1.0")]


def test_a_name_is_not_a_spread_by_default_but_is_when_the_rule_is_named():
    body = """
        def named(values, sigma, var):
            return (values - values.mean()) / (sigma + 1.0), values / torch.sqrt(var + 2.0)

        def whiten(values, eps=3.0):
            return values - values.mean()

        def std(values):
            return values.max() - values.min()

        def by_function_name(values):
            return values / (std(values) + 4.0)
    """
    assert found(body) == []
    assert [text for _, text in found(body, named=True)] == ["1.0", "2.0", "3.0"]


def test_other_denominators_and_spreads_outside_a_denominator():
    body = """
        def others(x, logits, model, hidden, noise):
            a = x / (x.mean() + 1.0)
            b = logits / (0.7 + 0.3)
            c = noise * (x.std() + 1.0)
            d = x / (model.norm(hidden) + 1.0)
            return a, b, c, d, x / (x.abs().max() + 1.0)
    """
    assert found(body) == []


@pytest.mark.parametrize("root", ["np.sqrt(len(by_step[s]))", "math.sqrt(len(by_step[s]))", "len(by_step[s]) ** 0.5"])
def test_the_root_of_a_count_is_a_scale_not_a_spread(root):
    """A standard error divides a std by `sqrt(n)`, floored at one: the floor guards no spread (here in the
    metrics of an RL script, whose advantages are normalised right)."""
    body = f"""
        def group_advantages(rollout_rewards):
            return (rollout_rewards - rollout_rewards.mean()) / (rollout_rewards.std() + 1e-6)

        def standard_errors(rows):
            by_step = {{}}
            for row in rows:
                by_step.setdefault(row["step"], []).append(row["score"])
            return [float(np.std(by_step[s]) / max(1, {root})) for s in sorted(by_step)]
    """
    assert found(body) == []


@pytest.mark.parametrize("root", ["np.sqrt(np.var(r))", "torch.sqrt(((r - r.mean()) ** 2).mean())", "math.sqrt(v)"])
def test_the_root_of_a_variance_floored_large_is_still_reported(root):
    body = f"""
        def group_advantages(r, v):
            return (r - r.mean()) / max({root}, 1.0)
    """
    assert found(body) == [(3, "1.0")]
