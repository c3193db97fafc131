"""The command line run in this process, as the tests call it: its exit code and what it wrote."""

from chrf_components_cli.main import main


def run(capsys, *argv):
    """``chrf-components ARGV...`` (each argument as a str): (exit code, stdout, stderr)."""
    code = main([str(arg) for arg in argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err
