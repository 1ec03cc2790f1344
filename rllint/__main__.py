"""`python -m rllint`, and the `rllint` console script (`rllint.__main__:main`).

Run from inside a project, Python puts the working folder first on `sys.path` (`python -m`, or an
empty entry of `PYTHONPATH=:`), so that the project's own `pathspec.py`, `difflib.py` or `json.so`
would be imported in place of the libraries rllint uses: code of the linted tree would run. So the
working folder and empty entries leave `sys.path` before rllint imports anything else (the `rllint`
package itself imports nothing).
"""
import os
import sys


def _drop_working_folder(entries):
    """`entries` without '' and the working folder, which Python reads as the working folder."""
    here = os.path.realpath(os.getcwd())
    return [entry for entry in entries if entry and os.path.realpath(entry) != here]


sys.path[:] = _drop_working_folder(sys.path)

try:
    from rllint.cli import main  # noqa: E402  (imported once the path is safe)
except KeyboardInterrupt:  # Ctrl-C while rllint loads ends the run as it does later: 130
    sys.stderr.write("rllint: interrupted\n")
    sys.exit(130)

if __name__ == "__main__":
    main()
