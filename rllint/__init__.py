"""rllint: a linter for reinforcement-learning post-training code.

This module imports nothing: `python -m rllint` imports it before `rllint.__main__` has taken the
working folder off `sys.path`, and a project's own `pathlib.py` must not be imported in its place.
"""

__version__ = "0.2.0"
