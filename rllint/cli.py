"""Command line (placeholder until the CLI lands)."""


def main() -> None:
    raise SystemExit("rllint: the command line is not built yet")
