"""Rules about the linter itself: files that do not parse, suppressions that suppress nothing."""
from rllint.diagnostic import Severity, Tier
from rllint.files import KINDS
from rllint.registry import Rule


class SyntaxErrorRule(Rule):
    """
    ## What it does
    Reports a file that Python cannot parse, at the line and column, and with the
    message, that CPython's own parser gives.

    ## Why is this bad?
    A file that does not parse cannot be checked by any other rule, and a training
    script that does not parse fails only when the job starts, after the queue wait.

    ## Example
    ```python
    if boxed_answer(completion) == gold.strip()
        rewards.append(1.0)
    ```

    ## Use instead
    ```python
    if boxed_answer(completion) == gold.strip():
        rewards.append(1.0)
    ```

    ## Options
    None. The other files of the run are still linted.
    """

    code = "RL000"
    name = "syntax-error"
    severity = Severity.ERROR
    tier = Tier.CORRECTNESS
    message = "syntax error: {detail}"
    file_kinds = KINDS


class UnusedSuppression(Rule):
    """
    ## What it does
    Reports, on the comment's line, each rllint code or rule name in a `# noqa: ...`,
    `# rllint: ignore[...]` or file-level `# rllint: noqa: ...` comment that suppressed
    no finding, and each that names no rule at all (`# noqa: RL999`,
    `# rllint: ignore[not-a-rule]`). Codes in `# noqa:` are whole codes, as in ruff:
    `# noqa: RL2` is not a prefix and suppresses nothing. A bare `# noqa` is never
    reported, and neither are codes of other tools or of rules that did not run.

    ## Why is this bad?
    A stale suppression hides the next real finding on that line: once the code is
    fixed, the comment should go.

    ## Example
    ```python
    ratio = torch.exp(logps - old_logps)  # noqa: RL101
    ```

    ## Use instead
    ```python
    ratio = torch.exp(logps - old_logps)
    ```

    ## Options
    Off by default; turn it on with `extend-select = ["RL001"]`.
    """

    code = "RL001"
    name = "unused-suppression"
    severity = Severity.INFO
    tier = Tier.PEDANTIC
    file_kinds = KINDS
    message = "unused suppression of `{selector}`: {reason}"
