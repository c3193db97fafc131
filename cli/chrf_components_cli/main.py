"""Entry point placeholder, replaced by the command-line issue."""


def main() -> int:
    return 0
