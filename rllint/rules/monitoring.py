"""RL607: the static twin of `rllint logs`: a hand-written RL training loop that nobody can watch.

The rule asks `Purpose` (is this an RL run), `Flow.training_loops` (the loops that take a
policy-gradient step on every pass: a backward of a loss that weights the policy's log-probs) and `LoggedMetrics` (which watched metrics the file
reports, and whether it logs metrics it does not show), and only words the finding.
"""
from __future__ import annotations

import libcst as cst

from rllint.analysis.logged import LoggedMetrics
from rllint.analysis.flow import Flow
from rllint.analysis.purpose import Purpose
from rllint.diagnostic import Severity, Tier
from rllint.registry import CSTRule


class UnmonitoredTrainingLoop(CSTRule):
    """
    ## What it does
    Reports a hand-written RL training loop (a `for` or `while` loop that runs a backward
    step of a policy-gradient loss on every pass, directly or through the functions it
    calls) in a file that logs none of the KL to the reference, the policy's entropy and
    the clip fraction: under no name a tracker, an f-string or a stats dict would show.

    Not reported: trainers of TRL, verl or OpenRLHF (they log all three themselves, and
    a `compute_loss` override has no loop); loops that log any of the three; SFT,
    reward-model, DPO and critic loops (no policy-gradient loss); files that hand a
    logger metrics they do not show (`wandb.log(stats)` with `stats` built elsewhere).

    ## Why is this bad?
    These three metrics are how an RL run is watched: the KL says whether the policy is
    running away from the reference or not moving at all, entropy whether it is
    collapsing onto few answers, the clip fraction whether updates leave the trust
    region. A loop that logs only the loss and the reward shows none of these failures
    until an evaluation, days later; `rllint logs` (RL701-RL711) can judge only what was
    logged.

    ## Example
    ```python
    for step, batch in enumerate(loader):
        logps = token_logps(policy, batch)
        ratio = torch.exp(logps - batch["old_logps"])
        loss = -torch.min(ratio * batch["advantages"], ratio.clamp(0.8, 1.2) * batch["advantages"]).mean()
        loss.backward()
        optimizer.step()
        wandb.log({"loss": loss.item()})
    ```

    ## Use instead
    ```python
        clip_fraction = ((ratio - 1).abs() > 0.2).float().mean()
        wandb.log({"loss": loss.item(), "kl": kl.mean().item(), "entropy": entropy.mean().item(),
                   "clip_fraction": clip_fraction.item()})
    ```

    ## Options
    Pedantic: off by default; turn it on with `extend-select = ["RL607"]`.
    """

    code = "RL607"
    name = "unmonitored-training-loop"
    severity = Severity.INFO
    tier = Tier.PEDANTIC
    message = ("this loop trains the policy with a policy-gradient loss, and the file logs none of KL, entropy and "
               "clip fraction: a KL explosion, an entropy collapse or runaway updates will go unseen; log them "
               "so that `rllint logs` can watch the run")
    triggers = ("backward",)

    def visit_Module(self, node: cst.Module) -> None:
        if not self.file.fact(Purpose).rl_run:
            return
        flow = self.file.fact(Flow)
        flow.analyze_all()
        loops = flow.training_loops()
        if not loops:
            return
        logged = self.file.fact(LoggedMetrics)
        if logged.reported or logged.opaque:
            return
        for loop in loops:
            self.report(loop)
