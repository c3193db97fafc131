"""The contract's names and limits: the one place every other module and tool reads them from.

chrf-components 1.0.0 (spec/chrf-components.json). The settings themselves, their defaults and their rules are the
fields of :class:`chrf_core.CHRF`. The SAM template and the OpenAPI document cannot import Python, so the suite
checks that they say the same.
"""

from __future__ import annotations

from typing import Protocol

TOOL = "chrf-components"
VERSION = "1.0.0"
EXECUTE_PATH = f"/v1/tools/{TOOL}/versions/{VERSION}/execute"

MAX_SEGMENTS = 256
MAX_TEXT_BYTES = 65536

TEXT_KEYS = ("hypotheses", "references")
ITEM_KEYS = ("hypothesis", "reference")  # one segment's sides: a corpus line's keys (JSON Lines)
TEXT_SIDES = dict(zip(TEXT_KEYS, ITEM_KEYS))  # contract key -> one segment's side
AVERAGINGS = ("precision_recall", "per_order_f")
NORMALIZATIONS = ("NFC", "NFKC")  # the library's opt-in Unicode normalization (no setting of the contract)
INTEGER_RANGES = {"char_order": (0, 10), "word_order": (0, 4), "beta": (1, 16)}
BOOLEAN_KEYS = ("lowercase", "include_whitespace")
SETTING_KEYS: tuple[str, ...] = (*INTEGER_RANGES, *BOOLEAN_KEYS, "averaging")  # the output's key order
REQUEST_KEYS: tuple[str, ...] = TEXT_KEYS + SETTING_KEYS


class Settings(Protocol):
    """What the modules below :class:`chrf_core.CHRF` read of the scoring settings (CHRF is the one
    implementation): typing against this keeps them free of an import of the class that calls them."""

    @property
    def char_order(self) -> int: ...
    @property
    def word_order(self) -> int: ...
    @property
    def beta(self) -> int: ...
    @property
    def lowercase(self) -> bool: ...
    @property
    def include_whitespace(self) -> bool: ...
    @property
    def averaging(self) -> str: ...
    @property
    def normalize(self) -> str | None: ...
    @property
    def orders(self) -> int: ...
    @property
    def name(self) -> str: ...
    @property
    def signature(self) -> str: ...
    def __hash__(self) -> int: ...
    def as_dict(self) -> dict[str, int | bool | str]: ...
