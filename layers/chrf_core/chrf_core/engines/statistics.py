"""The statistics' Arrow form, and its exact sums with every row checked, for every engine.

A part's :class:`Counts` is one row (version 1, docs/at-scale.md): ``settings`` (every setting as compact JSON),
``segment_count``, then three int64 columns per order, ``char1_hypothesis_ngrams`` ... ``word2_matching_ngrams``;
scored per group, the group's columns come first and there is a row per group and part. Rows add up column by
column, but only rows some texts could give: :func:`sums` reads any table of them and sums it in Python integers
(exact, never wrapped), each row checked first as :meth:`Counts.checked` checks it (no negative count, nothing no
texts could give), the settings compared as values (key order and spacing in the JSON do not matter), every
malformed table one line naming what is wrong. The engines check and sum each partition's rows with it where the
rows lie, and pass on what it gives (:func:`partials`, :func:`merged`) to their own reduction.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..contract import Settings
from ..counts import SIDES, STATISTICS_VERSION, Counts, order_labels
from ..errors import InvalidInputError, describe, shown
from ..settings import ChrfSettings, difference
from ..stored import of_stored, stored

if TYPE_CHECKING:
    import pyarrow

    from ..metric import CHRF
    from ..report import Report

SETTINGS_COLUMN = "settings"
SEGMENTS_COLUMN = "segment_count"
PARTIAL_COLUMN = "counts"  # a partial sum as its JSON form (Counts.to_dict), where an engine's reduction needs one
SCORE_COLUMN = "score"  # each group's score, in Grouped.to_arrow
VERSION_KEY = b"chrf_components.statistics"
INT64_END = 2**63  # an int64 column holds every count below it

Key = tuple[Any, ...]  # a group's values, one per group column (() without groups)


# ---- the form -----------------------------------------------------------------------------------------------


def statistic_columns(settings: Settings) -> list[str]:
    """The int64 columns of the statistics of these settings, in order: ``segment_count``, then three per order."""
    return [SEGMENTS_COLUMN] + [f"{kind}{n}_{side}_ngrams" for kind, n in
                                order_labels(settings.char_order, settings.word_order) for side in SIDES]


def settings_text(settings: Settings) -> str:
    """The ``settings`` column's value: every setting as compact JSON, in one key order (equal settings, equal
    text, so that an engine may group rows by it once they are read as :func:`sums` reads them)."""
    return json.dumps(stored(settings), separators=(",", ":"))


def schema(settings: Settings, keys: Sequence[pyarrow.Field] = ()) -> pyarrow.Schema:
    """The Arrow schema of these settings' statistics (the group columns ``keys`` first), its version in the
    metadata."""
    import pyarrow as pa

    return pa.schema([*keys, pa.field(SETTINGS_COLUMN, pa.string(), nullable=False)] +
                     [pa.field(name, pa.int64(), nullable=False) for name in statistic_columns(settings)],
                     metadata={VERSION_KEY: str(STATISTICS_VERSION).encode()})


def table(settings: Settings, groups: Mapping[Key, Counts], keys: Sequence[pyarrow.Field] = ()) -> pyarrow.Table:
    """Statistics rows: one per group (``groups``: the group's values, in the order of ``keys``, to its counts), or
    one row (the key ``()``) without groups. A count past int64 is an OverflowError naming its column."""
    import pyarrow as pa

    columns = statistic_columns(settings)
    rows = [(key, [counts.segment_count, *(value for order in counts.orders for value in order)])
            for key, counts in groups.items()]
    for _, values in rows:
        for name, value in zip(columns, values):
            if value >= INT64_END:
                raise OverflowError(f"statistics: {name}: {value} does not fit in an int64 column; keep the counts "
                                    f"in their JSON form (Counts.to_dict), which has no bound")
    arrays = [pa.array([key[index] for key, _ in rows], field.type) for index, field in enumerate(keys)]
    arrays.append(pa.array([settings_text(settings)] * len(rows), pa.string()))
    arrays += [pa.array([values[index] for _, values in rows], pa.int64()) for index in range(len(columns))]
    return pa.Table.from_arrays(arrays, schema=schema(settings, keys))


def to_arrow(counts: Counts) -> pyarrow.Table:
    """One part's statistics row (:func:`table` of one part without groups)."""
    return table(counts.settings, {(): counts})


# ---- groups ---------------------------------------------------------------------------------------------------


def group_names(by: str | Sequence[str] | None) -> tuple[str, ...]:
    """The group columns ``by`` names: none (None), one (a str) or several (a sequence of distinct str)."""
    if by is None:
        return ()
    names = (by,) if isinstance(by, str) else tuple(by) if isinstance(by, Sequence) else None
    if names is None or not all(isinstance(name, str) for name in names):
        raise TypeError(f"by: expected a column name or a sequence of column names, got {type(by).__name__}")
    if not names:
        raise InvalidInputError("by", "name at least one column to group by (or None: one score)")
    for name in names:
        if names.count(name) > 1 or name in (SETTINGS_COLUMN, PARTIAL_COLUMN, SEGMENTS_COLUMN, SCORE_COLUMN) or \
                name.endswith("_ngrams"):
            problem = "is named twice" if names.count(name) > 1 else "is the name of a statistics or score column"
            raise InvalidInputError(shown(name), f"{problem}: group by other columns (rename this one)",
                                    caller_key=True)
    return names


def check_group_column(name: str, kind: pyarrow.DataType) -> pyarrow.DataType:
    """A group column holds values that compare as themselves: strings, integers, booleans, dates, times, decimals,
    binary (dictionary-encoded or not); its value type is returned. Floats (NaN is not equal to itself) and nested
    values are refused, naming the column."""
    import pyarrow as pa

    value_type = kind.value_type if pa.types.is_dictionary(kind) else kind
    if pa.types.is_floating(value_type) or pa.types.is_nested(value_type) or not (
            pa.types.is_string(value_type) or pa.types.is_large_string(value_type) or pa.types.is_integer(value_type)
            or pa.types.is_boolean(value_type) or pa.types.is_temporal(value_type) or pa.types.is_decimal(value_type)
            or pa.types.is_binary(value_type) or pa.types.is_large_binary(value_type) or pa.types.is_null(value_type)
            or pa.types.is_string_view(value_type)):
        raise InvalidInputError(shown(name), f"a group column must hold strings, integers, booleans, dates or times "
                                             f"(values equal to themselves), got {kind}", caller_key=True)
    return value_type


class Grouped(dict[Any, "Report"]):
    """Scores per group: each group's key (its value for ``by="col"``, a tuple for ``by=[...]``; None where the
    group's value is null) to its :class:`Report`, byte for byte ``corpus_score`` of that group's rows, in the order
    of the keys. :meth:`to_arrow` gives them as a table of keys, scores and statistics."""

    def __init__(self, reports: Mapping[Any, Report], by: str | Sequence[str], keys: Sequence[pyarrow.Field]):
        super().__init__(sorted(reports.items(), key=lambda item: _order(item[0])))
        self.by, self.key_fields = by, list(keys)

    def to_arrow(self) -> pyarrow.Table:
        """One row per group: the group columns, ``score`` (float64, 0..100), then the group's statistics row."""
        import pyarrow as pa

        if not self:
            return pa.table({field.name: pa.array([], field.type) for field in self.key_fields} | {
                SCORE_COLUMN: pa.array([], pa.float64())})
        settings = next(iter(self.values())).settings
        rows = table(settings, {((key,) if isinstance(self.by, str) else key): Counts(
            report.settings, report.segment_count, tuple((o.hypothesis_ngrams, o.reference_ngrams, o.matching_ngrams)
                                                          for o in report.orders)) for key, report in self.items()},
                     self.key_fields)
        return rows.add_column(len(self.key_fields), pa.field(SCORE_COLUMN, pa.float64(), nullable=False),
                               pa.array([report.score for report in self.values()], pa.float64()))

    def to_pandas(self) -> Any:
        """:meth:`to_arrow` as a pandas DataFrame."""
        return self.to_arrow().to_pandas()

    def __repr__(self) -> str:
        shown = ", ".join(f"{key!r}: {report}" for key, report in self.items())
        return f"Grouped(by={self.by!r}, {{{shown}}})"


def _order(key: Any) -> tuple[Any, ...]:
    """Keys sorted with nulls first, each value beside values of its own type."""
    values = key if isinstance(key, tuple) else (key,)
    return tuple((value is not None, type(value).__name__, value) for value in values)


def scored(chrf: CHRF, summed: Counts | Mapping[Any, Counts], by: str | Sequence[str] | None,
           keys: Sequence[pyarrow.Field] = ()) -> Report | Grouped:
    """The report of summed counts (:meth:`CHRF.report`, refusing counts of other settings), or with ``by`` the
    report of each group's (``summed``: each group's key, as the engines' ``counts`` gives it, to its counts)."""
    if by is None:
        assert isinstance(summed, Counts)
        return chrf.report(summed)
    assert isinstance(summed, Mapping)
    return Grouped({key: chrf.report(counts) for key, counts in summed.items()}, by, keys)


# ---- reading and summing --------------------------------------------------------------------------------------


def keyed(summed: Mapping[Key, Counts], by: str | Sequence[str] | None) -> Counts | dict[Any, Counts]:
    """What an engine's ``counts`` gives: without ``by`` the one sum (an InvalidInputError if there were no rows at
    all), else each group's key (the value itself for ``by`` a str, else a tuple) to its sum."""
    if by is not None:
        return {key[0] if isinstance(by, str) else key: total for key, total in summed.items()}
    if () not in summed:
        raise InvalidInputError("hypotheses", "at least 1 segment, got 0")
    return summed[()]


def sums(data: Any, by: str | Sequence[str] | None = None) -> dict[Key, Counts]:
    """The statistics rows of ``data`` (a Table, a RecordBatch, or an iterable of them: any number of rows) summed
    exactly per group (the key ``()`` without groups), every row checked first: a malformed table, a row no texts
    could give (a negative count, more matches than n-grams, ...) or of other settings is an InvalidInputError
    naming the column or the row (``statistics[3]: char 1: 5 matches but 2 hypothesis and 2 reference n-grams``)
    and no sum. Rows are numbered from the first of ``data``."""
    return summed(data, group_names(by))


def summed(data: Any, names: tuple[str, ...]) -> dict[Key, Counts]:
    """:func:`sums` of the group columns ``names`` (checked: :func:`group_names`)."""
    import pyarrow as pa

    totals: dict[Key, list[int]] = {}
    settings: ChrfSettings | None = None
    offset = 0
    parts = [data] if isinstance(data, (pa.Table, pa.RecordBatch)) else data
    if isinstance(parts, (Mapping, str, bytes)) or not isinstance(parts, Iterable):
        raise TypeError(f"statistics: expected a pyarrow Table or RecordBatch of statistics rows (or an iterable of "
                        f"them), got a {type(data).__name__}")
    for part in parts:
        if not isinstance(part, (pa.Table, pa.RecordBatch)):
            raise TypeError(f"statistics: expected pyarrow Tables or RecordBatches of statistics rows, got a "
                            f"{type(part).__name__}")
        settings = _add(totals, part, names, settings, offset)
        offset += part.num_rows
    if settings is None:
        return {}
    return {key: Counts(settings, values[0], tuple((values[k], values[k + 1], values[k + 2])
                                                   for k in range(1, len(values), 3)))
            for key, values in totals.items()}


def _add(totals: dict[Key, list[int]], part: Any, names: tuple[str, ...], settings: ChrfSettings | None,
         offset: int) -> ChrfSettings | None:
    """One table's rows checked and added to ``totals``; the settings of every row so far (None before any)."""
    columns = _checked_schema(part.schema, names)
    if not part.num_rows:
        return settings
    parsed: dict[str, ChrfSettings] = {}
    for index, text in enumerate(part.column(SETTINGS_COLUMN).to_pylist(), offset):  # each distinct text read once
        if text in parsed:
            continue
        parsed[text] = row_settings = settings_of(text, f"statistics[{index}]")
        if settings is None:
            settings = row_settings
        elif row_settings != settings:  # compared as values: key order and spacing do not matter
            raise InvalidInputError(None, f"statistics of other settings ({difference(settings, row_settings)})",
                                    subject=f"statistics[{index}]")
    assert settings is not None
    expected = statistic_columns(settings)
    present = [name for name in columns if name not in names and name != SETTINGS_COLUMN]
    if present != expected:
        missing = [name for name in expected if name not in present]
        unexpected = [name for name in present if name not in expected]
        found = "; ".join(filter(None, [f"missing: {', '.join(missing[:6])}" if missing else "",
                                        f"unexpected: {', '.join(shown(name, 32) for name in unexpected[:6])}"
                                        if unexpected else "", "" if missing or unexpected else "out of order"]))
        raise InvalidInputError(None, f"the columns of {settings.name} statistics are {SETTINGS_COLUMN}, "
                                      f"{expected[0]}, {expected[1]}, ..., {expected[-1]} ({len(expected) + 1}), "
                                      f"besides the group columns ({found})", subject="statistics")
    keys = zip(*(part.column(name).to_pylist() for name in names)) if names else iter(lambda: (), None)
    values = zip(*(part.column(name).to_pylist() for name in expected))
    for index, (key, row) in enumerate(zip(keys, values), offset):
        _check_row(settings, row, expected, index)
        total = totals.get(key)
        if total is None:
            totals[key] = list(row)
        else:
            for position, value in enumerate(row):
                total[position] += value
    return settings


def _checked_schema(part_schema: pyarrow.Schema, names: tuple[str, ...]) -> list[str]:
    """A statistics table's column names, once its version, its column names and their types are checked."""
    import pyarrow as pa

    version = (part_schema.metadata or {}).get(VERSION_KEY)
    if version is not None and version != str(STATISTICS_VERSION).encode():
        raise InvalidInputError(None, f"version {shown(version.decode(errors='replace'))} is not one this library "
                                      f"reads ({STATISTICS_VERSION})", subject="statistics")
    columns = list(part_schema.names)
    for name in columns:
        if columns.count(name) > 1:
            raise InvalidInputError(None, f"the column {shown(name, 32)} appears {columns.count(name)} times",
                                    subject="statistics")
    if SETTINGS_COLUMN not in columns:
        there = ", ".join(shown(name, 32) for name in columns[:8]) or "none"
        raise InvalidInputError(None, f"no {SETTINGS_COLUMN} column (the columns: {there})", subject="statistics")
    for name in names:
        if name not in columns:
            raise InvalidInputError(shown(name), "no such group column in the statistics", caller_key=True)
        check_group_column(name, part_schema.field(name).type)
    for field in part_schema:
        if field.name == SETTINGS_COLUMN and not (pa.types.is_string(field.type) or
                                                  pa.types.is_large_string(field.type)):
            raise InvalidInputError(None, f"{SETTINGS_COLUMN} must be a column of strings, got {field.type}",
                                    subject="statistics")
        if field.name not in names and field.name != SETTINGS_COLUMN and not pa.types.is_integer(field.type):
            raise InvalidInputError(None, f"{shown(field.name, 32)} must be a column of integers (int64), got "
                                          f"{field.type}", subject="statistics")
    return columns


def settings_of(text: Any, where: str = "statistics") -> ChrfSettings:
    """Settings read as a value from a ``settings`` column's text (``where``: the row, for an error)."""
    try:
        values = json.loads(text) if isinstance(text, str) else None
    except ValueError:
        values = None
    if not isinstance(values, dict):
        raise InvalidInputError(None, f"{SETTINGS_COLUMN}: must be the settings as a JSON object, got "
                                      f"{describe(values if text is None else text)}", subject=where)
    try:
        return of_stored(values, where)
    except ValueError as error:
        raise InvalidInputError.relayed(None, str(error), None) from None


def _check_row(settings: ChrfSettings, row: tuple[Any, ...], names: list[str], index: int) -> None:
    """A statistics row is counts some texts could give (:meth:`Counts.checked`)."""
    for name, value in zip(names, row):
        if type(value) is not int or value < 0:
            raise InvalidInputError(None, f"{name}: must be an integer from 0, got {describe(value)}",
                                    subject=f"statistics[{index}]")
    try:
        Counts.checked(settings, row[0], [list(row[k:k + 3]) for k in range(1, len(row), 3)])
    except ValueError as error:
        raise InvalidInputError(None, str(error).removeprefix("counts: "), subject=f"statistics[{index}]") from None


# ---- partial sums between an engine's tasks -----------------------------------------------------------------


def merged(parts: Iterable[Mapping[Key, Counts]]) -> dict[Key, Counts]:
    """Partial sums of several tasks added up per group (exactly); parts of other settings are refused by name."""
    total: dict[Key, Counts] = {}
    for part in parts:
        add(total, part)
    return total


def add(total: dict[Key, Counts], part: Mapping[Key, Counts]) -> None:
    """One task's partial sums added to ``total``, in place, group by group; parts of other settings than those
    already there are refused by name."""
    settings = next(iter(total.values())).settings if total else None
    for key, counts in part.items():
        if settings is not None and counts.settings != settings:
            raise InvalidInputError(None, f"statistics of other settings ({difference(settings, counts.settings)})",
                                    subject="merge")
        settings = counts.settings
        before = total.get(key)
        total[key] = counts if before is None else Counts.merge([before, counts])


def partial_text(counts: Counts) -> str:
    """A partial sum as the text an engine carries between tasks: its JSON form (:meth:`Counts.to_dict`)."""
    return json.dumps(counts.to_dict(), separators=(",", ":"))


def of_partial_text(text: Any) -> Counts:
    """A partial sum read back from :func:`partial_text`, checked again (:meth:`Counts.from_dict`)."""
    try:
        return Counts.from_dict(json.loads(text))
    except (TypeError, ValueError) as error:
        raise InvalidInputError(None, str(error), subject="statistics") from None


def partials(groups: Mapping[Key, Counts], keys: Sequence[pyarrow.Field]) -> pyarrow.Table:
    """Partial sums as a table: the group columns, then ``counts``, each group's :func:`partial_text`."""
    import pyarrow as pa

    arrays = [pa.array([key[index] for key in groups], field.type) for index, field in enumerate(keys)]
    arrays.append(pa.array([partial_text(counts) for counts in groups.values()], pa.string()))
    return pa.Table.from_arrays(arrays, schema=pa.schema([*keys, pa.field(PARTIAL_COLUMN, pa.string())]))


def fields(part_schema: pyarrow.Schema, names: tuple[str, ...]) -> list[pyarrow.Field]:
    """The group columns' fields (their value types), checked: present and comparable."""
    import pyarrow as pa

    found = []
    for name in names:
        if name not in part_schema.names:
            there = ", ".join(shown(column, 32) for column in part_schema.names[:20]) or "none"
            raise InvalidInputError(shown(name), f"no such column (the columns: {there})", caller_key=True)
        found.append(pa.field(name, check_group_column(name, part_schema.field(name).type)))
    return found
