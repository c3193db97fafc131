"""The settings of chrF / chrF++ as a frozen value (:class:`ChrfSettings`, which :class:`chrf_core.CHRF` is and
scores with): the contract's rules and defaults, sacreBLEU's spellings (``whitespace``, ``eps_smoothing``), the
library's ``normalize`` and the one way in from an object of settings (a request's, an execution's, a stored one).
The defaults are written here once; the command line's flags and the mbrs backend's Config read them from here.
Settings read back from a stored form are in :mod:`chrf_core.stored`."""

from __future__ import annotations

import math
from dataclasses import InitVar, dataclass
from typing import Any, Self

from .contract import AVERAGINGS, INTEGER_RANGES, NORMALIZATIONS, SETTING_KEYS, TOOL, VERSION, Settings
from .errors import InvalidInputError, describe, unknown_key_error


class Signature(str):
    """A signature as sacreBLEU's ``get_signature()`` returns one: ``format()`` and ``str()`` give the text (which
    has no shorter form)."""

    def format(self, short: bool = False) -> str:  # type: ignore[override]
        return str(self)


class _Unset:
    """A setting left out (so that sacreBLEU's spelling of it may give it)."""

    def __repr__(self) -> str:
        return "<unset>"


_UNSET: Any = _Unset()


@dataclass(frozen=True, eq=False)
class ChrfSettings:
    """The settings of a :class:`CHRF` as a frozen value: the contract's rules, sacreBLEU's spellings and the way in
    from an object of settings. :class:`CHRF` is this value with everything scored with it."""

    char_order: int = 6
    word_order: int = 0
    beta: int = 2
    lowercase: bool = False
    include_whitespace: bool = _UNSET  # False unless given (here or as whitespace)
    averaging: str = _UNSET  # "precision_recall" unless given (here or as eps_smoothing)
    normalize: str | None = None  # the library's and command line's opt-in Unicode normalization (not the contract's)
    whitespace: InitVar[bool | None] = None  # sacreBLEU's name for include_whitespace
    eps_smoothing: InitVar[bool | None] = None  # sacreBLEU's switch between the two averagings

    def __post_init__(self, whitespace: bool | None, eps_smoothing: bool | None) -> None:
        self._resolve("include_whitespace", "whitespace", whitespace, {True: True, False: False}, False)
        self._resolve("averaging", "eps_smoothing", eps_smoothing, {True: AVERAGINGS[1], False: AVERAGINGS[0]},
                      AVERAGINGS[0])
        for key, (low, high) in INTEGER_RANGES.items():
            object.__setattr__(self, key, _integer(key, getattr(self, key), low, high))
            if key == "word_order" and self.char_order == 0 and self.word_order == 0:
                raise InvalidInputError("word_order", "char_order and word_order cannot both be 0")
        for key in ("lowercase", "include_whitespace"):
            if type(getattr(self, key)) is not bool:
                raise InvalidInputError(key, f"must be a boolean (true or false), got {describe(getattr(self, key))}")
        if type(self.averaging) is not str or self.averaging not in AVERAGINGS:
            raise InvalidInputError("averaging",
                                    f"must be one of {', '.join(AVERAGINGS)}, got {describe(self.averaging)}")
        if self.normalize is not None and (type(self.normalize) is not str or self.normalize not in NORMALIZATIONS):
            raise InvalidInputError("normalize", f"must be one of {', '.join(NORMALIZATIONS)} or None, got "
                                                 f"{describe(self.normalize)}")

    def _resolve(self, key: str, alias: str, alias_value: Any, meaning: dict[bool, Any], default: Any) -> None:
        """A setting given as itself, as sacreBLEU's spelling (``alias``), both (which must agree) or neither."""
        given = getattr(self, key)
        if alias_value is None:
            if given is _UNSET:
                object.__setattr__(self, key, default)
            return
        if type(alias_value) is not bool:
            raise InvalidInputError(alias, f"must be a boolean (True or False), got {describe(alias_value)}")
        if given is not _UNSET and given != meaning[alias_value]:
            raise InvalidInputError(alias, f"sacreBLEU's {alias}={alias_value} means {key}={meaning[alias_value]!r}, "
                                           f"but {key}={given!r} was given too")
        object.__setattr__(self, key, meaning[alias_value])

    @classmethod
    def of_settings(cls, values: Any, subject: str = "settings") -> Self:
        """An object of settings alone (a request's once its texts are taken out, a pipeline execution's or batch's,
        a stored one): nothing but setting keys, each by its rule, defaults for the missing ones."""
        if not isinstance(values, dict):
            raise InvalidInputError("settings", "must be an object of scoring settings")
        for key in values:
            if key not in SETTING_KEYS:
                raise unknown_key_error(key, SETTING_KEYS, subject=subject)
        return cls(**values)

    def _values(self) -> tuple[Any, ...]:
        return (*(getattr(self, key) for key in SETTING_KEYS), self.normalize)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ChrfSettings) and self._values() == other._values()

    def __hash__(self) -> int:
        return hash(self._values())

    def as_dict(self) -> dict[str, int | bool | str]:
        """The contract's settings as the output echoes them, in its key order."""
        return {key: getattr(self, key) for key in SETTING_KEYS}

    @property
    def orders(self) -> int:
        return self.char_order + self.word_order

    @property
    def name(self) -> str:
        """chrF2, chrF2+ (word unigrams), chrF2++ (word bigrams) as sacreBLEU names them; chrF2+w3 beyond."""
        suffix = {0: "", 1: "+", 2: "++"}.get(self.word_order, f"+w{self.word_order}")
        return f"chrF{self.beta}{suffix}" if self.char_order else f"wordF{self.beta}"

    @property
    def signature(self) -> str:
        """Every setting that changes the number, sacreBLEU-style but not to be taken for a sacreBLEU signature:
        this tool counts every hypothesis n-gram (``hyp:all``), where sacreBLEU drops those of orders a reference
        lacks."""
        return "|".join([f"{TOOL}:{VERSION}", self.name, f"nc:{self.char_order}", f"nw:{self.word_order}",
                         f"space:{'yes' if self.include_whitespace else 'no'}",
                         f"case:{'lc' if self.lowercase else 'mixed'}", f"avg:{self.averaging}", "hyp:all",
                         *([f"norm:{self.normalize}"] if self.normalize else [])])

    def get_signature(self) -> Signature:
        """:attr:`signature` under sacreBLEU's method name, as an object like sacreBLEU's ``Signature`` (a str
        with ``format(short=False)``)."""
        return Signature(self.signature)


# sacreBLEU's attribute names read back what they mean (CHRF(whitespace=True).whitespace is True)
for _spelling, _reading in (("whitespace", lambda self: self.include_whitespace),
                            ("eps_smoothing", lambda self: self.averaging == AVERAGINGS[1])):
    setattr(ChrfSettings, _spelling, property(_reading))  # after @dataclass: it keeps the InitVar's default


def _integer(key: str, value: Any, low: int, high: int) -> int:
    """An integer setting under JSON Schema rules: 6.0 is the integer 6, booleans and non-finite numbers are not."""
    if type(value) is float and math.isfinite(value) and value.is_integer():
        value = int(value)
    if type(value) is not int:
        raise InvalidInputError(key, f"must be an integer from {low} to {high}, got {describe(value)}")
    if not low <= value <= high:
        shown_value = value if abs(value) < 10**15 else "a number out of range"
        raise InvalidInputError(key, f"must be an integer from {low} to {high}, got {shown_value}")
    return value


def difference(settings: Settings, other: Settings) -> str:
    """The settings that differ between two, named with both values: ``beta 2 vs 3``."""
    return ", ".join(f"{key} {getattr(settings, key)!r} vs {getattr(other, key)!r}"
                     for key in (*SETTING_KEYS, "normalize") if getattr(settings, key) != getattr(other, key))
