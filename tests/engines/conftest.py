"""What the engines' tests share: the corpus (real MT output in four languages, and generated Unicode text, with up to
three references per segment, some missing, and the system each segment belongs to, unevenly), the settings tried,
the partitionings (1, 2, 7 and 64 parts, empty and skewed ones among them), one process's answers (per group too),
forged statistics rows that no texts could give, and the engines started once per session on loopback.

These tests run in .venv-engines (make test-engines, with CHRF_ENGINES=1: an engine that does not import fails).
In the suite's own environment, which has no engines, each module skips as not belonging to that run.
"""

import json
import os
import random
import shutil
import socket
import sys
import tempfile
import unicodedata

import pytest
from chrf_core import CHRF
from payloads import edited, real_pairs

IN_ENGINES_RUN = os.environ.get("CHRF_ENGINES") == "1"


def pytest_configure(config):
    # Ray Data's DataContext warns about its own deprecated fields whenever one is created: not ours to act on
    config.addinivalue_line("filterwarnings", "ignore::DeprecationWarning:ray.data.context")
    # Lightning's own use of torch's pytree API: not ours to act on
    config.addinivalue_line("filterwarnings", r"ignore:`isinstance\(treespec, LeafSpec\)` is deprecated")


def need(module):
    """An engine's module: in the engines' run it must import; elsewhere its absence skips (not this run)."""
    if IN_ENGINES_RUN:
        return __import__(module, fromlist=["_"])
    return pytest.importorskip(module, reason="not in this run: the engines' tests run in .venv-engines "
                                              "(make test-engines)")


SCRIPTS = ["abcdefghijklmnopqrstuvwxyz", "абвгдежзийклмнопрстуфхцчшщыэюя", "αβγδεζηθικλμνξοπρστυφχψω",
           "的一是不了人我在有他这中大来上个们到说", "ابتثجحخدذرزسشصضطظعغفقكلمنهوي", "ěščřžýáíéůú", "😀🙂👍🌍"]


def generated_pairs(count=160, seed=2026):
    """Segments of generated Unicode text: several scripts, combining marks (decomposed forms, so NFC changes
    them), astral characters, empty and whitespace-only lines, mixed case; each reference an edit of its
    hypothesis."""
    rng = random.Random(seed)
    pairs = []
    for index in range(count):
        letters = rng.choice(SCRIPTS)
        words = ["".join(rng.choice(letters) for _ in range(rng.randint(1, 8))) for _ in range(rng.randint(0, 12))]
        text = " ".join(word.capitalize() if rng.random() < 0.2 else word for word in words)
        if rng.random() < 0.2:
            text = unicodedata.normalize("NFD", text.replace("a", "á").replace("e", "é"))
        if index % 37 == 0:
            text = "" if index % 2 else " \t "
        reference = " ".join(word for word in text.split() if rng.random() < 0.8) + rng.choice(["", " ok", " 😀"])
        pairs.append((text, reference))
    return pairs


def corpus():
    """Every segment of the tests: columns id, hypothesis, reference, reference_2 and reference_3 (None for every
    fifth segment: that one lacks it, as in sacreBLEU's layout)."""
    pairs = real_pairs() + generated_pairs()
    rng = random.Random(7)
    vocabulary = sorted({word for pair in pairs for text in pair for word in text.split()})
    second = [edited(reference, rng, vocabulary) for _, reference in pairs]
    third = [None if index % 5 == 0 else edited(reference, rng, vocabulary)
             for index, (_, reference) in enumerate(pairs)]
    return {"id": list(range(len(pairs))), "system": [system_of(index) for index in range(len(pairs))],
            "hypothesis": [hypothesis for hypothesis, _ in pairs],
            "reference": [reference for _, reference in pairs], "reference_2": second, "reference_3": third}


def system_of(index):
    """The system a segment belongs to: skewed (most rows are A's), one system of a single row, some rows of none."""
    if index % 23 == 0:
        return None
    return "A" if index % 3 else ("B" if index % 2 else ("C" if index != 6 else "only one"))


CORPUS = corpus()
ROWS = len(CORPUS["id"])
REFERENCE_COLUMNS = ["reference", "reference_2", "reference_3"]

# (name, settings, number of reference columns): chrF, chrF++, eps smoothing, lowercase, whitespace, normalization,
# each with 1, 2 or 3 references
CASES = [
    ("chrF, 1 reference", CHRF(), 1),
    ("chrF++, 3 references", CHRF(word_order=2), 3),
    ("eps smoothing, 2 references", CHRF(word_order=2, eps_smoothing=True), 2),
    ("lowercase, 3 references", CHRF(lowercase=True, word_order=1), 3),
    ("whitespace, 1 reference", CHRF(whitespace=True, beta=3), 1),
    ("NFC, 2 references", CHRF(word_order=2, normalize="NFC"), 2),
    ("NFKC, chrF 4, 1 reference", CHRF(char_order=4, word_order=2, normalize="NFKC", lowercase=True), 1),
]


def sizes(parts, rows=ROWS):
    """The row counts of a partitioning of ``rows`` rows: 1 and 2 parts even, 7 parts one-sided (the last holds
    the rest), 64 parts skewed (half the rows in the first) with 20 empty ones."""
    if parts == 64:
        counts = [rows // 2] + [0] * 20 + [(rows - rows // 2) // 43] * 43
    elif parts == 7:
        counts = [rows // 10] * 7
    else:
        counts = [rows // parts] * parts
    counts[-1] += rows - sum(counts)
    return counts


PARTITIONINGS = [1, 2, 7, 64]


def split(columns, parts):
    """The corpus' columns cut into ``parts`` consecutive parts of :func:`sizes` rows: a list of dicts of lists."""
    out, start = [], 0
    for count in sizes(parts, len(next(iter(columns.values())))):
        out.append({name: values[start:start + count] for name, values in columns.items()})
        start += count
    assert start == len(next(iter(columns.values())))
    return out


def expected(chrf, references):
    """One process's report of the whole corpus (``references``: how many reference columns)."""
    streams = [CORPUS[name] for name in REFERENCE_COLUMNS[:references]]
    return chrf.corpus_score(CORPUS["hypothesis"], streams, references_per_segment=False)


def expected_groups(chrf, references, columns=None, by="system"):
    """One process's report of each group's rows (``by``: a column, or several: tuple keys), as JSON text."""
    columns = columns or CORPUS
    names = [by] if isinstance(by, str) else list(by)
    keys = list(zip(*(columns[name] for name in names)))
    out = {}
    for key in dict.fromkeys(keys):
        rows = [index for index, other in enumerate(keys) if other == key]
        streams = [[columns[name][index] for index in rows] for name in REFERENCE_COLUMNS[:references]]
        report = chrf.corpus_score([columns["hypothesis"][index] for index in rows], streams,
                                   references_per_segment=False)
        out[key[0] if isinstance(by, str) else key] = json.dumps(report.to_dict())
    return out


def grouped_json(grouped):
    """Per-group reports as JSON text, each key to its report."""
    return {key: json.dumps(report.to_dict()) for key, report in grouped.items()}


def expected_scores(chrf, references):
    streams = [CORPUS[name] for name in REFERENCE_COLUMNS[:references]]
    return chrf.segment_scores(CORPUS["hypothesis"], streams, references_per_segment=False)


def mbr_sets(count=24, size=12, seed=11):
    """Candidate sets of real sentences, edited (as sampled translations are), each with log-probability-like
    weights; some sets of one candidate."""
    pairs = real_pairs()
    vocabulary = sorted({word for pair in pairs for text in pair for word in text.split()})
    rng = random.Random(seed)
    sets, weights = [], []
    for index in range(count):
        reference = pairs[(index * 7) % len(pairs)][1]
        width = 1 if index % 9 == 4 else size
        sets.append([edited(reference, rng, vocabulary) for _ in range(width)])
        weights.append([round(rng.uniform(0.01, 2.0), 3) for _ in range(width)])
    return sets, weights


def loopback_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture(scope="session")
def ray_session():
    """Ray on this machine: 2 CPUs, no dashboard, every listener on 127.0.0.1 (Ray's single-machine mode: with
    RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0 its node address is the loopback one, which it otherwise replaces with the
    machine's); stopped, every process, at the end."""
    os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"  # read when ray is imported: before
    ray = need("ray")
    need("ray.data")
    folder = tempfile.mkdtemp(prefix="ray-", dir="/tmp")  # short: Ray's sockets live under it
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, logging_level="ERROR",
             _node_ip_address="127.0.0.1", _temp_dir=folder)
    context = ray.data.DataContext.get_current()
    context.enable_progress_bars = False
    context.execution_options.preserve_order = True
    try:
        yield ray
    finally:
        ray.shutdown()
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(scope="session")
def spark_session():
    """Spark local[2] on loopback, no UI; stopped at the end. Its Python workers run this interpreter."""
    need("pyspark")
    from pyspark.sql import SparkSession

    os.environ["PYSPARK_PYTHON"] = sys.executable
    session = (SparkSession.builder.master("local[2]").appName("chrf-components tests")
               .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
               .config("spark.driver.host", "127.0.0.1").config("spark.driver.bindAddress", "127.0.0.1")
               .config("spark.sql.shuffle.partitions", "2").getOrCreate())
    session.sparkContext.setLogLevel("FATAL")
    try:
        yield session
    finally:
        session.stop()


# ---- statistics rows no texts could give (issue 64: the engines summed them into plausible numbers) -------------


def genuine_statistics(chrf=None):
    """The corpus' statistics rows (Arrow tables), one per part of a 7-part split, and its one-process report."""
    from chrf_core.engines import arrow

    chrf = chrf or CHRF(word_order=2)
    pa = __import__("pyarrow")
    return [arrow.statistics(pa.table(part), chrf) for part in split(CORPUS, 7)], expected(chrf, 1)


def forged(kind, rows):
    """The genuine rows with forged ones among them: ``plus 1000`` (a row of 1000 n-grams and 1000 matches in every
    order), ``negative matches`` (a genuine row with its matches negated), ``wrapping`` (three rows of -2^62: an
    int64 sum wraps back to a plausible total)."""
    pa = __import__("pyarrow")
    row = rows[1].to_pylist()[0]
    counting = [name for name in row if name.endswith("_ngrams")]
    if kind == "plus 1000":
        bad = [{**row, "segment_count": 1, **dict.fromkeys(counting, 1000)}]
    elif kind == "negative matches":
        bad = [{**row, **{name: -row[name] for name in counting if "matching" in name}}]
    else:
        bad = [{**row, **dict.fromkeys(["segment_count", *counting], -2**62)}] * 3
    return [rows[0], pa.Table.from_pylist(bad, schema=rows[0].schema), *rows[1:]]


FORGERIES = [("plus 1000", r"statistics\[\d+\]: char 2: hypothesis n-grams do not fall from order 1 \(1000\)"),
             ("negative matches", r"statistics\[\d+\]: char1_matching_ngrams: must be an integer from 0, got the "
                                  r"number -\d+"),
             ("wrapping", r"statistics\[\d+\]: segment_count: must be an integer from 0, got a number out of range")]


def respaced(rows):
    """The same rows with their settings written as other JSON (another key order, spaces): the same settings."""
    pa = __import__("pyarrow")
    out = []
    for index, table in enumerate(rows):
        if index % 2:
            values = json.loads(table.column("settings")[0].as_py())
            text = json.dumps(dict(reversed(list(values.items()))), indent=1)
            table = table.set_column(0, pa.field("settings", pa.string(), nullable=False),
                                     pa.array([text] * table.num_rows, pa.string()))
        out.append(table)
    return out
