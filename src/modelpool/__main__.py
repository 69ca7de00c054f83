"""`python -m modelpool …` runs the `modelpool` command line."""

from modelpool.cli.main import run

if __name__ == "__main__":
    run()
