"""`rllint logs`: lint a training run's logged metrics for failures that source code cannot show.

Readers turn each supported format into a `Run` of records (`readers`, `tensorboard`); a
mapping per framework names the metrics the checks read (`metrics`); `series` smooths a
metric and finds the episodes of a condition; the RL7xx rules (`rllint.rules.runlogs`) ask
a run for its series and word the findings; `lint` ties these together and `plot` draws them.

Nothing here is imported by the source linter: `rllint check` never pays for it.
"""
