"""Settings as stored forms carry them (the statistics' JSON and Arrow forms, a contract output, a metric's state),
and read back as the ``CHRF`` that made them, so that what is read back scores again as what made it.

``CHRF`` is defined above this module (chrf_core.metric is built on the modules that read settings back), so it
names itself here as it is defined: ``@reads_back_as`` on the class."""

from __future__ import annotations

from typing import Any, TypeVar

from .contract import INTEGER_RANGES, SETTING_KEYS, Settings
from .errors import InvalidInputError
from .settings import ChrfSettings

SettingsType = TypeVar("SettingsType", bound=type[ChrfSettings])
_READ_BACK_AS: list[type[ChrfSettings]] = [ChrfSettings]  # the one type settings are read back as


def reads_back_as(cls: SettingsType) -> SettingsType:
    """Class decorator: settings read back are made as ``cls`` from now on (``CHRF``, the type that scores)."""
    _READ_BACK_AS[0] = cls
    return cls


def stored(settings: Settings) -> dict[str, int | bool | str | None]:
    """Every setting that changes a count, as stored statistics carry them: the contract's, then ``normalize``."""
    return {**settings.as_dict(), "normalize": settings.normalize}


def read_back(*values: Any, **named: Any) -> ChrfSettings:
    """Settings read back (stored counts, a report's output, a metric's state) as a ``CHRF`` (the type named by
    :func:`reads_back_as`), checked by its rules (an InvalidInputError naming the setting)."""
    return _READ_BACK_AS[0](*values, **named)


def of_stored(values: Any, subject: str = "counts") -> ChrfSettings:
    """Settings read back from :func:`stored`'s form (``normalize`` may be absent: None), integers as integers: a
    ValueError naming ``subject`` and what is wrong."""
    keys = set(values) if isinstance(values, dict) else set()
    if not keys or keys - {"normalize"} != set(SETTING_KEYS) or any(
            type(values[key]) is not int for key in INTEGER_RANGES):
        raise ValueError(f"{subject}: settings must name every setting, integers as integers")
    try:
        return read_back(**values)
    except InvalidInputError as error:
        raise ValueError(f"{subject}: {error.message}") from None
