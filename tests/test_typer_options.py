"""A typer command's parameters declared `= typer.Option(default, "--flag")` hold what the command line passes:
the flag's value from every launch script of the project that runs the file, else the declared default. A
command called from Python code in sight holds what that code passes; a required option (`...`) is unknown."""
from engine import Engine

CLI = """
    import typer
    from typer import Option

    app = typer.Typer()


    def rollout(model, ids, group_size):
        return model.generate(ids, do_sample=True, num_return_sequences=group_size)


    @app.command()
    def train(
        lr: float = Option(1e-6, "--lr"),
        group_size: int = typer.Option(1, "-G", "--group-size", help="rollouts per prompt"),
        temperature: float = typer.Option(..., "--temperature"),
    ):
        rollout(None, None, group_size)
        return lr, temperature


    if __name__ == "__main__":
        app()
"""


def test_an_option_holds_its_declared_default_in_the_command_and_its_helpers():
    engine = Engine(CLI)
    assert engine.facts("group_size", "number", "origin") == {"number": 1.0, "origin": "default of --group-size"}
    assert engine.facts("lr", "number") == {"number": 1e-6}
    assert engine.facts("temperature", "type", "number") == {"type": None, "number": None}


def test_a_launch_script_that_passes_the_flag_decides_the_value(tmp_path):
    files = {"cli.py": CLI, "run.sh": "python cli.py --group-size 8 --lr 2e-6\n"}
    engine = Engine.project(tmp_path, files, "cli.py")
    assert engine.facts("group_size", "number") == {"number": 8.0}
    assert engine.facts("lr", "number") == {"number": 2e-6}


def test_a_command_called_from_python_holds_what_the_call_passes():
    engine = Engine(CLI.replace('        app()', '        train(lr=3e-6, group_size=4, temperature=0.7)'))
    assert engine.facts("group_size", "number") == {"number": 4.0}
    assert engine.facts("temperature", "number") == {"number": 0.7}
