"""rllint: a linter for reinforcement-learning post-training code."""

__version__ = "0.1.0"
