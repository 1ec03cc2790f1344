"""RL7xx: a training run's logged metrics, judged by `rllint logs` (never run on source files).

Each rule asks the run (`rllint.logs.lint.RunMetrics`) for the series of the metrics it
reads, builds one flag per logged point from the smoothed values, and reports the episodes
`Series.episodes` finds (sustained, never from the first steps alone, one per episode).
This module imports nothing from `rllint.logs`, so the catalogue (`rllint rules`,
`--select RL7`, the pages) costs the source linter nothing.
"""
from __future__ import annotations

from typing import ClassVar, List, Optional

from rllint.diagnostic import Severity, Tier
from rllint.registry import LogRule, Option


def _mapping_problem(entries: List[str]) -> Optional[str]:
    from rllint.logs.metrics import check_mapping  # only when a config maps metrics

    return check_mapping(entries)


LOG_WINDOW = Option(
    "log-window", int, 9,
    "Logged points in the centred running median every RL7xx check judges. A condition must hold on this "
    "many smoothed points in a row, episodes closer than this are one, and the first window of a run never "
    "makes a finding alone. The onset reported lies within half a window of the true one.",
    check=lambda value: None if value >= 3 else "must be 3 or more",
)
LOG_METRICS = Option(
    "log-metrics", list, [],
    "`NAME=KEY` entries that name the logged key of a metric (`kl=train/approx_kl`), before the built-in "
    "per-framework names; `--metric NAME=KEY` on the command line does the same. NAME is one of kl, entropy, "
    "clip_fraction, reward, response_length, truncated_fraction, zero_std_fraction, held_out, repetition.",
    check=_mapping_problem,
)
MAX_KL = Option("max-kl", float, 1.0, "The bound on the smoothed per-token KL to the reference (RL701).")
MIN_KL = Option("min-kl", float, 1e-4, "The smoothed KL below which the policy has not left the reference (RL702).")
MIN_ENTROPY_RATIO = Option(
    "min-entropy-ratio", float, 0.2, "The fraction of its early level below which entropy has collapsed (RL703).")
MIN_ENTROPY = Option("min-entropy", float, 0.01, "An absolute floor on the smoothed mean token entropy (RL703).")
MAX_CLIP_FRACTION = Option("max-clip-fraction", float, 0.3, "The bound on the smoothed clip fraction (RL704).")
MIN_LENGTH_RATIO = Option(
    "min-length-ratio", float, 0.5, "The fraction of the early mean response length below which lengths have "
    "collapsed (RL705).")
MAX_LENGTH_RATIO = Option(
    "max-length-ratio", float, 2.0, "The multiple of the early mean response length above which lengths have "
    "exploded (RL706).")
MAX_TRUNCATED_FRACTION = Option(
    "max-truncated-fraction", float, 0.1, "The bound on the smoothed fraction of responses cut at the length "
    "limit (RL707).")
MIN_HELD_OUT_DROP = Option(
    "min-held-out-drop", float, 0.1, "The fall of the held-out metric from its best, as a fraction of the best, "
    "that counts while the reward rises (RL708).")
MAX_ZERO_STD_FRACTION = Option(
    "max-zero-std-fraction", float, 0.5, "The bound on the smoothed fraction of groups whose rewards are all "
    "equal (RL710).")

# A trend counts when the smoothed level moved by this many standard errors of a window median.
_SIGNIFICANT = 3.0
# A KL growing geometrically has left its earlier level once it is this many times that level: a window median
# of a noisy KL wanders about a tenth around it, and geometric growth passes the mark within a few points.
_NEAR_BASE = 1.25
_COMMON = (LOG_WINDOW, LOG_METRICS)


def _kl_fix() -> str:
    return "lower the learning rate, raise the KL coefficient (beta), or check that the reference is frozen"


class KlExplosion(LogRule):
    """
    ## What it does
    Reports a KL divergence to the reference that explodes: the smoothed per-token KL stays
    above `max-kl`, or it grows geometrically (it doubled in each of three consecutive
    windows, starting above 1% of `max-kl`), which is caught before it crosses the bound.
    KLs logged per sequence (TRL PPO's `objective/kl`) are judged by their growth only.

    ## Why is this bad?
    The KL term is what keeps the policy near the model it started from. Once it runs away,
    the policy is optimising the reward model's blind spots, generations turn to gibberish
    or to one repeated answer, and the run rarely recovers: the checkpoint before the onset
    is the one to resume from.

    ## Example
    ```json
    {"step": 400, "kl": 0.08, "reward": 0.61}
    {"step": 420, "kl": 1.4, "reward": 0.70}
    {"step": 440, "kl": 3.9, "reward": 0.74}
    ```

    ## Use instead
    ```python
    GRPOConfig(learning_rate=1e-6, beta=0.04)  # a smaller step, a KL penalty that holds
    ```

    ## Options
    """

    code = "RL701"
    name = "kl-explosion"
    severity = Severity.WARNING
    tier = Tier.SUSPICIOUS
    metrics = ("kl",)
    options = (MAX_KL, *_COMMON)
    message = "KL `{key}` {how} from step {step} ({then} then, {now}): " + _kl_fix()

    def check(self) -> None:
        kl = self.run.series("kl")
        if kl is None:
            return
        bound = self.option(MAX_KL)
        smooth, span = kl.smooth, kl.window
        above = [not kl.sequence_level and value > bound for value in smooth]
        growing = [False] * len(smooth)
        for i in range(3 * span, len(smooth)):
            levels = [smooth[i - k * span] for k in range(4)]  # now, one, two and three windows back
            if levels[3] >= bound / 100 and (kl.sequence_level or levels[0] >= bound / 10) and all(
                    levels[k] >= 2 * levels[k + 1] for k in range(3)):
                start = _growth_start(smooth, i - 3 * span, i)
                growing[start: i + 1] = [True] * (i + 1 - start)
        for episode in kl.episodes([a or g for a, g in zip(above, growing)], skip=span):
            first = episode.first
            how = f"rose above {bound:g}" if above[first] else f"grew geometrically (doubling every {span} logs or faster)"
            self.report(kl, first, episode.last, key=kl.key, how=how, step=kl.steps[first],
                        then=kl.value(first), now=kl.describe(episode.last))


def _growth_start(smooth, base: int, end: int) -> int:
    """Where a growth detected over the smoothed points `base`..`end` began: after the last point that was
    still near the level at `base`, the one it grew from. The windows it was detected on begin earlier, on
    the flat level before it (a KL that grew from step 250 was dated to step 215)."""
    ceiling = _NEAR_BASE * smooth[base]
    return next(k for k in range(end, base, -1) if smooth[k - 1] <= ceiling)


class KlStall(LogRule):
    """
    ## What it does
    Reports a KL to the reference that stays below `min-kl` for a quarter of the run (and at
    least three windows) while the reward does not move either. A KL logged as exactly zero
    throughout is a placeholder for a KL that is switched off, and is not reported.

    ## Why is this bad?
    A policy that never leaves its reference is not learning: the optimizer does not step
    the policy, the learning rate is zero or far too small, the gradient is cut (RL505), or
    the "reference" is the policy itself (RL501). The GPU hours are spent for nothing.

    ## Example
    ```json
    {"step": 10, "kl": 0.0, "reward": 0.31}
    {"step": 200, "kl": 0.00002, "reward": 0.30}
    {"step": 400, "kl": 0.00001, "reward": 0.31}
    ```

    ## Use instead
    ```python
    optimizer = torch.optim.AdamW(policy.parameters(), lr=1e-6)  # the policy's own parameters, a real rate
    ```

    ## Options
    """

    code = "RL702"
    name = "kl-stall"
    severity = Severity.WARNING
    tier = Tier.SUSPICIOUS
    metrics = ("kl", "reward")
    options = (MIN_KL, *_COMMON)
    message = ("KL `{key}` stayed below {bound:g} from step {step} to step {end} while the reward `{reward}` did not "
               "move ({reward_then} then, {reward_now}): the policy is not learning; check that the optimizer steps "
               "the policy, the learning rate, and that the reference is not the policy itself")

    def check(self) -> None:
        kl, reward = self.run.series("kl"), self.run.series("reward")
        if kl is None or reward is None or not any(kl.values):
            return
        bound = self.option(MIN_KL)
        sustain = max(3 * kl.window, len(kl) // 4)
        for episode in kl.episodes([value < bound for value in kl.smooth], skip=0, sustain=sustain):
            start, end = reward.index_at(kl.steps[episode.first]), reward.index_at(kl.steps[episode.last])
            if end - start < reward.window or abs(reward.moved(start, end)) >= _SIGNIFICANT:
                continue
            self.report(kl, episode.first, episode.last, key=kl.key, bound=bound, step=kl.steps[episode.first],
                        end=kl.steps[episode.last], reward=reward.key,
                        reward_then=reward.value(start), reward_now=reward.describe(end))


class EntropyCollapse(LogRule):
    """
    ## What it does
    Reports the policy's entropy collapsing: the smoothed mean token entropy falls below
    `min-entropy-ratio` times its early level (the median of the first window), or below
    the absolute floor `min-entropy`.

    ## Why is this bad?
    With no entropy left the policy samples the same completion for every member of a
    group: rewards within groups are equal, advantages are zero, and exploration stops. The
    reward plateaus while the model grows more confident (DAPO, "entropy collapse").

    ## Example
    ```json
    {"step": 20, "entropy": 0.52}
    {"step": 400, "entropy": 0.09}
    {"step": 600, "entropy": 0.03}
    ```

    ## Use instead
    ```python
    GRPOConfig(temperature=1.0, epsilon_high=0.28, learning_rate=1e-6)  # clip-higher keeps exploring
    ```

    ## Options
    """

    code = "RL703"
    name = "entropy-collapse"
    severity = Severity.WARNING
    tier = Tier.SUSPICIOUS
    metrics = ("entropy",)
    options = (MIN_ENTROPY_RATIO, MIN_ENTROPY, *_COMMON)
    message = ("entropy `{key}` fell below {limit} from step {step} ({then} then, {now}): the policy is collapsing "
               "onto few answers and exploration stops; raise the temperature, lower the learning rate, or clip "
               "higher (epsilon_high)")

    def check(self) -> None:
        entropy = self.run.series("entropy")
        if entropy is None:
            return
        early = entropy.early()
        if early <= 0:
            return
        ratio, floor = self.option(MIN_ENTROPY_RATIO), self.option(MIN_ENTROPY)
        relative = [value < ratio * early for value in entropy.smooth]
        for episode in entropy.episodes([r or v < floor for r, v in zip(relative, entropy.smooth)]):
            first = episode.first
            limit = (f"{ratio:g}x its early level {entropy.format(early)}" if relative[first]
                     else f"the floor {floor:g}")
            self.report(entropy, first, episode.last, key=entropy.key, limit=limit, step=entropy.steps[first],
                        then=entropy.value(first), now=entropy.describe(episode.last))


class _AboveBound(LogRule):
    """A rule whose condition is its one metric's smoothed value above the option `bound`."""

    bound: ClassVar[Option]

    def check(self) -> None:
        series = self.run.series(self.metrics[0])
        if series is None:
            return
        bound = self.option(self.bound)
        _report_episodes(self, series, [value > bound for value in series.smooth], bound=bound)


class HighClipFraction(_AboveBound):
    """
    ## What it does
    Reports a clip fraction (the share of tokens whose importance ratio left `[1 - eps,
    1 + eps]`) that stays above `max-clip-fraction`.

    ## Why is this bad?
    A clipped token contributes no gradient. When a third of the tokens are clipped, each
    update moves the policy much further than the trust region allows, and most of the batch
    teaches nothing: the learning rate is too high, or too many PPO epochs / mini-batches
    reuse one batch of rollouts.

    ## Example
    ```json
    {"step": 100, "clip_ratio/region_mean": 0.36}
    {"step": 300, "clip_ratio/region_mean": 0.41}
    ```

    ## Use instead
    ```python
    GRPOConfig(learning_rate=1e-6, num_iterations=1)
    ```

    ## Options
    """

    code = "RL704"
    name = "high-clip-fraction"
    severity = Severity.WARNING
    tier = Tier.SUSPICIOUS
    metrics = ("clip_fraction",)
    options = (MAX_CLIP_FRACTION, *_COMMON)
    bound = MAX_CLIP_FRACTION
    message = ("clip fraction `{key}` stayed above {bound:g} from step {step} ({then} then, {now}): updates leave the "
               "trust region on most tokens; lower the learning rate or reuse each batch for fewer PPO epochs")


class ResponseLengthCollapse(LogRule):
    """
    ## What it does
    Reports the mean response length falling below `min-length-ratio` times its early
    mean (the median of the first window of logged lengths).

    ## Why is this bad?
    Responses that shrink to a few tokens mean the reward pays for brevity (or punishes
    reasoning), the loss is normalised so that short answers win (RL205), or the EOS token
    got a boost. Reasoning tasks need the tokens the model stopped spending.

    ## Example
    ```json
    {"step": 10, "completions/mean_length": 212}
    {"step": 300, "completions/mean_length": 98}
    {"step": 500, "completions/mean_length": 31}
    ```

    ## Use instead
    ```python
    def reward(completions, answer, **kwargs):
        return [1.0 if extract(c) == a else 0.0 for c, a in zip(completions, answer, strict=True)]  # no length term
    ```

    ## Options
    """

    code = "RL705"
    name = "response-length-collapse"
    severity = Severity.WARNING
    tier = Tier.SUSPICIOUS
    metrics = ("response_length",)
    options = (MIN_LENGTH_RATIO, *_COMMON)
    message = ("mean response length `{key}` fell below {ratio:g}x its early mean {early} from step {step} ({then} "
               "then, {now}): responses are collapsing; check the reward and the loss normalisation for a length "
               "shortcut")

    def check(self) -> None:
        length = self.run.series("response_length")
        if length is None:
            return
        early, ratio = length.early(), self.option(MIN_LENGTH_RATIO)
        _report_episodes(self, length, [value < ratio * early for value in length.smooth], ratio=ratio,
                         early=length.format(early))


class ResponseLengthExplosion(LogRule):
    """
    ## What it does
    Reports the mean response length rising above `max-length-ratio` times its early mean.
    Pedantic: in reasoning runs (R1-style) lengths often grow on purpose; select it where
    they should not.

    ## Why is this bad?
    Responses that keep growing run into the generation limit (RL707), cost generation time
    quadratically, and, when the reward does not ask for it, are a sign that length is
    being rewarded (padding, repetition, hedging).

    ## Example
    ```json
    {"step": 10, "response_length/mean": 180}
    {"step": 400, "response_length/mean": 410}
    ```

    ## Use instead
    ```yaml
    algorithm:
      use_kl_in_reward: true   # or an overlong penalty on the reward (DAPO)
    ```

    ## Options
    """

    code = "RL706"
    name = "response-length-explosion"
    severity = Severity.INFO
    tier = Tier.PEDANTIC
    metrics = ("response_length",)
    options = (MAX_LENGTH_RATIO, *_COMMON)
    message = ("mean response length `{key}` rose above {ratio:g}x its early mean {early} from step {step} ({then} "
               "then, {now}): watch truncation and whether the reward pays for length")

    def check(self) -> None:
        length = self.run.series("response_length")
        if length is None:
            return
        early, ratio = length.early(), self.option(MAX_LENGTH_RATIO)
        _report_episodes(self, length, [value > ratio * early for value in length.smooth], ratio=ratio,
                         early=length.format(early))


class TruncatedResponses(_AboveBound):
    """
    ## What it does
    Reports a share of responses cut at the generation limit (TRL's
    `completions/clipped_ratio`, verl's `response_length/clip_ratio`) that stays above
    `max-truncated-fraction`.

    ## Why is this bad?
    A truncated response has no final answer: it usually scores zero, and its tokens are
    pushed down although the reasoning may have been right. When many are cut, the reward
    measures the length limit instead of the task.

    ## Example
    ```json
    {"step": 40, "completions/clipped_ratio": 0.23}
    {"step": 200, "completions/clipped_ratio": 0.40}
    ```

    ## Use instead
    ```python
    GRPOConfig(max_completion_length=2048, mask_truncated_completions=True)
    ```

    ## Options
    """

    code = "RL707"
    name = "truncated-responses"
    severity = Severity.WARNING
    tier = Tier.SUSPICIOUS
    metrics = ("truncated_fraction",)
    options = (MAX_TRUNCATED_FRACTION, *_COMMON)
    bound = MAX_TRUNCATED_FRACTION
    message = ("truncated share `{key}` stayed above {bound:g} from step {step} ({then} then, {now}): responses are cut "
               "at the length limit and score as failures; raise the limit or mask truncated completions")


class RewardHackingSuspect(LogRule):
    """
    ## What it does
    Reports a held-out or accuracy metric (an `eval_*` accuracy or reward, verl's
    `val-core/...`, or one mapped as `held_out`) that falls by `min-held-out-drop` of its
    best value while the training reward keeps rising. The onset is the evaluation at
    which the held-out metric was best. Needs six evaluations or more.

    ## Why is this bad?
    A reward that rises while the measure it stands for falls is being gamed: the policy
    found a shortcut in the reward function or the reward model (format tokens, length,
    a judge's bias). Every step after the onset makes the model worse at the task.

    ## Example
    ```json
    {"step": 300, "reward": 0.55, "eval_accuracy": 0.62}
    {"step": 600, "reward": 0.83, "eval_accuracy": 0.41}
    ```

    ## Use instead
    Keep the checkpoint of the held-out peak, and close the shortcut in the reward
    (read samples from the onset on).

    ## Options
    """

    code = "RL708"
    name = "reward-hacking-suspect"
    severity = Severity.WARNING
    tier = Tier.SUSPICIOUS
    metrics = ("held_out", "reward")
    options = (MIN_HELD_OUT_DROP, *_COMMON)
    message = ("held-out `{key}` fell from {best} at step {step} (its best) to {now} while the reward `{reward}` rose "
               "from {reward_then} to {reward_now}: the reward is being gamed; keep the checkpoint of step {step} and "
               "read samples from there on")

    def check(self) -> None:
        held_out, reward = self.run.series("held_out"), self.run.series("reward")
        if held_out is None or reward is None:
            return
        drop = self.option(MIN_HELD_OUT_DROP)
        raw, smooth = held_out.values, held_out.smooth
        best: List[int] = []  # the best evaluation so far, as logged: the onset is that evaluation's step
        for i, value in enumerate(raw):
            best.append(i if not best or value > raw[best[-1]] else best[-1])
        flags = []
        for i, peak in enumerate(best):
            fell = raw[peak] > 0 and smooth[i] <= (1 - drop) * raw[peak]
            rose = fell and reward.moved(reward.index_at(held_out.steps[peak]),
                                         reward.index_at(held_out.steps[i])) >= _SIGNIFICANT
            flags.append(rose)
        for episode in held_out.episodes(flags, skip=1, sustain=2):
            peak, last = best[episode.first], episode.last
            start, end = reward.index_at(held_out.steps[peak]), reward.index_at(held_out.steps[last])
            self.report(held_out, peak, last, key=held_out.key, best=held_out.format(raw[peak]), step=held_out.steps[peak],
                        now=held_out.describe(last), reward=reward.key, reward_then=reward.value(start),
                        reward_now=reward.describe(end))


class RewardRisesWithLength(LogRule):
    """
    ## What it does
    Reports a reward that rises while the responses grow longer (or more repetitive, when a
    repetition metric is logged) and the entropy falls, each by more than noise over three
    windows. Pedantic: healthy reasoning runs can look like this too; it points at the
    steps whose samples to read.

    ## Why is this bad?
    Reward models and judges often prefer longer answers; a policy that learns this gets a
    higher reward for padding, restating and repeating, with less and less variety. Without
    a held-out metric (RL708) the curves are the only sign.

    ## Example
    ```json
    {"step": 100, "reward": 0.31, "completions/mean_length": 180, "entropy": 0.61}
    {"step": 300, "reward": 0.62, "completions/mean_length": 420, "entropy": 0.30}
    ```

    ## Use instead
    A length-controlled reward (a penalty past a target length), a held-out accuracy
    logged during training, and samples read at the onset.

    ## Options
    """

    code = "RL709"
    name = "reward-rises-with-length"
    severity = Severity.INFO
    tier = Tier.PEDANTIC
    metrics = ("reward", "response_length", "repetition", "entropy")
    options = _COMMON
    message = ("reward `{reward}` rose from {then} at step {step} to {now} while {what} rose and entropy `{entropy}` "
               "fell: if the answers are not getting better, the reward pays for {paid}; read samples from step {step} on")

    def check(self) -> None:
        reward, entropy = self.run.series("reward"), self.run.series("entropy")
        growth = [s for s in (self.run.series("response_length"), self.run.series("repetition")) if s is not None]
        if reward is None or entropy is None or not growth:
            return
        span = 3 * reward.window
        flags = [False] * len(reward)
        for i in range(span, len(reward)):
            before, now = reward.steps[i - span], reward.steps[i]
            if reward.moved(i - span, i) >= _SIGNIFICANT and _trend(entropy, before, now) <= -_SIGNIFICANT \
                    and any(_trend(s, before, now) >= _SIGNIFICANT for s in growth):
                flags[i - span: i + 1] = [True] * (span + 1)
        for episode in reward.episodes(flags):
            first, last = episode.first, episode.last
            grown = [s for s in growth if _trend(s, reward.steps[first], reward.steps[last]) >= _SIGNIFICANT] or growth
            what = " and ".join(f"`{s.key}` ({s.value(s.index_at(reward.steps[first]))} to "
                                f"{s.value(s.index_at(reward.steps[last]))})" for s in grown)
            paid = " and ".join("length" if s.metric == "response_length" else "repetition" for s in grown)
            self.report(reward, first, last, reward=reward.key, then=reward.value(first), step=reward.steps[first],
                        now=reward.describe(last), what=what, entropy=entropy.key, paid=paid)


class ZeroVarianceGroups(_AboveBound):
    """
    ## What it does
    Reports a fraction of groups whose rewards are all equal (TRL's
    `frac_reward_zero_std`) that stays above `max-zero-std-fraction`.

    ## Why is this bad?
    GRPO and RLOO compute advantages within a group: when every completion of a prompt
    scores the same, every advantage is zero and the prompt teaches nothing. Above half of
    the groups, most of the generation budget is wasted: the prompts are too easy or too
    hard for the model, or the reward is too coarse (RL402).

    ## Example
    ```json
    {"step": 50, "frac_reward_zero_std": 0.72}
    {"step": 250, "frac_reward_zero_std": 0.81}
    ```

    ## Use instead
    ```python
    GRPOConfig(num_generations=16)  # larger groups, or filter prompts the model always or never solves
    ```

    ## Options
    """

    code = "RL710"
    name = "zero-variance-groups"
    severity = Severity.WARNING
    tier = Tier.SUSPICIOUS
    metrics = ("zero_std_fraction",)
    options = (MAX_ZERO_STD_FRACTION, *_COMMON)
    bound = MAX_ZERO_STD_FRACTION
    message = ("share of all-equal groups `{key}` stayed above {bound:g} from step {step} ({then} then, {now}): those "
               "groups have zero advantage and teach nothing; use larger groups or filter prompts by difficulty")


class UnmonitoredRun(LogRule):
    """
    ## What it does
    Reports, once per run and as a hint, a log that holds none of the KL to the reference,
    the policy's entropy and the clip fraction, under any name the built-in mapping or
    `log-metrics` knows. The finding is placed at the run's first logged step.

    ## Why is this bad?
    These three are how a run's health is watched: without them KL explosion (RL701),
    stalls (RL702), entropy collapse (RL703) and runaway updates (RL704) go unseen until
    the evaluation, days later. The static twin of this hint is RL607.

    ## Example
    ```json
    {"step": 10, "loss": 0.012, "reward": 0.31}
    ```

    ## Use instead
    ```json
    {"step": 10, "loss": 0.012, "reward": 0.31, "kl": 0.004, "entropy": 0.58, "clip_fraction": 0.02}
    ```

    ## Options
    """

    code = "RL711"
    name = "unmonitored-run"
    severity = Severity.INFO
    tier = Tier.SUSPICIOUS
    metrics = ("kl", "entropy", "clip_fraction")
    options = _COMMON
    message = ("the run logs none of KL, entropy and clip fraction (it logs {logged}): RL701-RL704 cannot watch it; "
               "log them, or name their keys with `--metric kl=KEY`")

    def check(self) -> None:
        if any(self.run.series(metric) is not None for metric in self.metrics):
            return
        logged = self.run.logged()
        if logged:
            first = min(logged, key=lambda s: (s.steps[0], s.key))
            self.report(first, 0, 0, logged=", ".join(f"`{s.key}`" for s in logged))


def _report_episodes(rule: LogRule, series, flags: List[bool], **values) -> None:
    """Report each episode of `flags` on `series` with the values every such message names: the key, the
    onset step, the smoothed value then and at the episode's end."""
    for episode in series.episodes(flags):
        rule.report(series, episode.first, episode.last, key=series.key, step=series.steps[episode.first],
                    then=series.value(episode.first), now=series.describe(episode.last), **values)


def _trend(series, before: int, now: int) -> float:
    """How much `series` moved between two steps, in standard errors (see `Series.moved`)."""
    start, end = series.index_at(before), series.index_at(now)
    return series.moved(start, end) if end > start else 0.0
