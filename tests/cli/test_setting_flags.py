"""The command line's setting flags take their defaults from CHRF's fields, written once in chrf_core.settings: the
parser follows a change of them instead of restating them."""

import dataclasses

import chrf_core
from chrf_core.contract import SETTING_KEYS

from chrf_components_cli import main


def test_the_flags_defaults_are_chrfs_own():
    args = main.build_parser().parse_args(["score", "hyp.txt", "ref.txt"])
    assert {key: getattr(args, key) for key in SETTING_KEYS} == chrf_core.CHRF().as_dict()


def test_the_flags_follow_chrfs_defaults_when_they_change(monkeypatch):
    @dataclasses.dataclass(frozen=True, eq=False)
    class Other(chrf_core.CHRF):
        char_order: int = 4
        word_order: int = 1
        beta: int = 3

    monkeypatch.setattr(chrf_core, "CHRF", Other)
    args = main.build_parser().parse_args(["score", "hyp.txt", "ref.txt"])
    assert (args.char_order, args.word_order, args.beta) == (4, 1, 3)
