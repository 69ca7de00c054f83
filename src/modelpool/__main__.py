"""`python -m modelpool …` runs the `modelpool` command line."""

from modelpool.cli.main import app

if __name__ == "__main__":
    # The program name, not "python -m modelpool": help, errors and shell completion name the command.
    app(prog_name="modelpool")
