"""RL404: strict=True added to zips of per-completion lists."""


def accuracy_reward(completions, solutions, **kwargs):
    return [1.0 if c == s else 0.0 for c, s in zip(completions, solutions)]


def format_reward(completions, answers, **kwargs):
    rewards = []
    for completion, answer in zip(
        completions,
        answers,
    ):
        rewards.append(float(answer in completion))
    return rewards
