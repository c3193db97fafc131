"""What a researcher does after scoring: segment scores, the worst segments, comparing systems, the HTML report."""

import json
import os
import random
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ElementTree
from html.parser import HTMLParser

import chrf_core
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from in_process import run
from support import ROOT, SEGMENT_TEXT, settings_strategy

from chrf_components_cli import pages, text
from chrf_components_cli.main import main

DATA = ROOT / "tests" / "data" / "popovic"
HYP_EN, REF_EN = DATA / "example.hyp.en", DATA / "example.ref.en"


def write_lines(path, texts):
    path.write_text("".join(text + "\n" for text in texts), encoding="utf-8")
    return path


def write_pairs(folder, pairs):
    return write_lines(folder / "h", [h for h, _ in pairs]), write_lines(folder / "r", [r for _, r in pairs])


def flags(request_settings):
    out = ["--char-order", request_settings["char_order"], "--word-order", request_settings["word_order"],
           "--beta", request_settings["beta"], "--averaging", request_settings["averaging"]]
    out += ["--lowercase"] if request_settings["lowercase"] else []
    return out + (["--include-whitespace"] if request_settings["include_whitespace"] else [])


LINE_TEXT = SEGMENT_TEXT.map(lambda text: text.replace("\n", " ").replace("\r", " ").rstrip())


def segments_output(argv):
    import contextlib
    import io

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main([str(arg) for arg in argv]) == 0
    return out.getvalue().splitlines()


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.lists(st.tuples(LINE_TEXT, LINE_TEXT), min_size=1, max_size=60), settings_strategy())
def test_segment_scores_equal_scoring_each_segment_alone_through_the_layer(tmp_path_factory, pairs, request_settings):
    hyp, ref = write_pairs(tmp_path_factory.mktemp("segments"), pairs)
    rows = segments_output(["segments", hyp, ref, *flags(request_settings)])
    assert len(rows) == len(pairs)
    for number, (row, (h, r)) in enumerate(zip(rows, pairs), start=1):
        expected = chrf_core.score({"hypotheses": [h], "references": [r], **request_settings})["score"]
        assert row == f"{number}\t{expected}"


def test_segments_prints_line_tab_score_for_thousands_of_generated_lines(capsys, tmp_path):
    rng = random.Random(9)
    alphabet = list("abcdeé中 ,.(😀") + ["the", " cat", " sat"]
    pairs = [("".join(rng.choice(alphabet) for _ in range(rng.randint(0, 30))),
              "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 30)))) for _ in range(3000)]
    hyp, ref = write_pairs(tmp_path, pairs)
    for request_settings in ({"word_order": 2}, {"char_order": 3, "lowercase": True, "averaging": "per_order_f"}):
        argv = [f"--{key.replace('_', '-')}" if value is True else f"--{key.replace('_', '-')}={value}"
                for key, value in request_settings.items()]
        code, out, err = run(capsys, "segments", hyp, ref, *argv)
        assert code == 0 and err == ""
        rows = out.splitlines()
        assert len(rows) == 3000
        for number, (row, (h, r)) in enumerate(zip(rows, pairs), start=1):
            expected = chrf_core.score({"hypotheses": [h], "references": [r], **request_settings})["score"]
            assert row == f"{number}\t{expected}"


def test_segments_json_writes_what_dumping_each_report_writes_byte_for_byte(capsys, tmp_path, monkeypatch):
    from chrf_components_cli import lines

    monkeypatch.setattr(lines, "CHUNK_BYTES", 4096)  # lines numbered on across chunks
    rng = random.Random(10)
    alphabet = list("abcdeé中 ,.(😀\u3000") + ["the", " cat", " sat", "«", "\\", '"']
    pairs = [("".join(rng.choice(alphabet) for _ in range(rng.randint(0, 25))),
              "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 25)))) for _ in range(2000)]
    hyp, ref = write_pairs(tmp_path, pairs)
    for request_settings in ({"word_order": 2, "beta": 3},
                             {"char_order": 10, "word_order": 4, "averaging": "per_order_f"},
                             {"char_order": 0, "word_order": 1, "include_whitespace": True}):
        settings_object = chrf_core.CHRF(**request_settings)
        code, out, err = run(capsys, "segments", hyp, ref, "--json", *flags(settings_object.as_dict()))
        assert code == 0 and err == ""
        expected = [json.dumps({"line": number, **chrf_core.report.report_of(chrf_core.counts.count_segments(
            [h], [r], settings_object)).to_dict()}) for number, (h, r) in enumerate(pairs, start=1)]
        assert out.splitlines() == expected


@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.lists(st.tuples(LINE_TEXT, LINE_TEXT), min_size=1, max_size=30), settings_strategy())
def test_segments_json_lines_are_each_segments_contract_output_plus_its_line(tmp_path_factory, pairs, request_settings):
    hyp, ref = write_pairs(tmp_path_factory.mktemp("json"), pairs)
    rows = segments_output(["segments", hyp, ref, "--json", *flags(request_settings)])
    assert len(rows) == len(pairs)
    for number, (line, (h, r)) in enumerate(zip(rows, pairs), start=1):
        request = {"hypotheses": [h], "references": [r], **request_settings}
        assert json.loads(line) == {"line": number, **chrf_core.score(request)}


def test_worst_segments_come_lowest_first_with_unmatched_words_in_brackets(capsys):
    code, out, _ = run(capsys, "segments", HYP_EN, REF_EN, "--word-order", "2", "--worst", "3")
    assert code == 0
    assert "signature: chrf-components:1.0.0|chrF2++|" in out
    blocks = out.split("\nline ")[1:]
    assert len(blocks) == 3
    scores = [float(block.split("score ")[1].split("\n")[0]) for block in blocks]
    everything = sorted(float(line.split("\t")[1]) for line in
                        _segment_rows(capsys, "segments", HYP_EN, REF_EN, "--word-order", "2"))
    assert scores == everything[:3]
    assert blocks[0].startswith("3\tscore 21.547010")
    assert "[The] most [sad] is" in blocks[0] and "\x1b[" not in out


def _segment_rows(capsys, *argv):
    code, out, _ = run(capsys, *argv)
    assert code == 0
    return out.splitlines()


def test_unmatched_words_are_clipped_like_word_unigrams_and_coloured_on_a_terminal():
    marked_h, marked_r = text.marked_tokens("the cat the cat", "The cat sat", lowercase=True)
    assert marked_h == [("the", True), ("cat", True), ("the", False), ("cat", False)]
    assert marked_r == [("The", True), ("cat", True), ("sat", False)]
    assert text.marked_text(marked_r, colour=True) == "The cat \x1b[31msat\x1b[0m"
    assert text.marked_text(marked_r, colour=False) == "The cat [sat]"


# ---- compare ------------------------------------------------------------------------------------------------


def systems(tmp_path, count=1200):
    """A baseline of real MT output, a much worse system, a slightly worse one and an identical copy."""
    rng = random.Random(4)
    pairs = []
    for language in ("en", "cs", "ru"):
        hyps = (DATA / f"example.hyp.{language}").read_text(encoding="utf-8").splitlines()
        refs = (DATA / f"example.ref.{language}").read_text(encoding="utf-8").splitlines()
        pairs += zip(hyps, refs)
    chosen = [pairs[rng.randrange(len(pairs))] for _ in range(count)]

    def drop(text, share):
        words = text.split()
        kept = [word for word in words if rng.random() > share]
        return " ".join(kept or words[:1])

    texts = {
        "ref": [r for _, r in chosen],
        "base": [h for h, _ in chosen],
        "worse": [drop(h, 0.35) for h, _ in chosen],
        "slightly": [drop(h, 0.02) for h, _ in chosen],
    }
    texts["copy"] = list(texts["base"])
    return {name: write_lines(tmp_path / f"{name}.txt", lines) for name, lines in texts.items()}, texts


def test_compare_scores_are_the_corpus_scores_and_its_p_values_separate_clear_cases(capsys, tmp_path):
    files, texts = systems(tmp_path)
    code, out, err = run(capsys, "compare", files["ref"], files["base"], files["worse"], files["copy"], "--json")
    assert code == 0, err
    result = json.loads(out)
    assert result["baseline"] == str(files["base"]) and result["signature"].startswith("chrf-components:1.0.0|")
    names = [system["name"] for system in result["systems"]]
    assert names == [str(files["base"]), str(files["worse"]), str(files["copy"])]
    for system, key in zip(result["systems"], ("base", "worse", "copy")):
        assert system["score"] == float(_corpus_score(texts[key], texts["ref"]))
        low, high = system["ci"]
        assert low <= system["score"] <= high
    assert {type(value) for system in result["systems"] for key, value in system.items()
            if key != "name" and value is not None} == {float, list}
    assert all(type(bound) is float for system in result["systems"] for bound in system["ci"])
    base, worse, copy = result["systems"]
    assert base["p_value"] is None and base["delta"] is None
    assert worse["p_value"] < 0.05 and worse["delta"] < -5
    assert copy["p_value"] == 1.0 and copy["delta"] == 0.0


def test_compare_counts_each_reference_once_for_all_systems(capsys, tmp_path, monkeypatch):
    files, texts = systems(tmp_path, 300)
    expected = [float(_corpus_score(texts[key], texts["ref"])) for key in ("base", "worse", "copy")]
    chosen_kernel = chrf_core.kernel.chosen()
    calls = []

    def counting(hypothesis_sets, references, *settings):
        calls.append((len(hypothesis_sets), list(references)))
        return raw_count(hypothesis_sets, references, *settings)

    raw_count = chosen_kernel.raw_count
    monkeypatch.setattr(chosen_kernel, "raw_count", counting)
    monkeypatch.setattr("chrf_components_cli.lines.CHUNK_BYTES", 4096)  # several chunks
    code, out, err = run(capsys, "compare", files["ref"], files["base"], files["worse"], files["copy"], "--json",
                         "--bootstrap", 10)
    assert code == 0, err
    assert len(calls) > 3 and {count for count, _ in calls} == {3}
    assert [line for _, references in calls for line in references] == texts["ref"]
    assert [system["score"] for system in json.loads(out)["systems"]] == expected


def _corpus_score(hypotheses, references):
    counts = chrf_core.counts.count_segments(hypotheses, references, chrf_core.CHRF())
    return chrf_core.report.report_of(counts).to_dict()["score"]


def test_compare_with_the_same_seed_gives_the_same_numbers_and_another_seed_other_intervals(capsys, tmp_path):
    files, _ = systems(tmp_path, 300)
    argv = ["compare", files["ref"], files["base"], files["slightly"], "--json", "--bootstrap", "200"]
    first, second = run(capsys, *argv)[1], run(capsys, *argv)[1]
    other = run(capsys, *argv, "--seed", "7")[1]
    assert first == second and json.loads(first)["systems"][1]["ci"] != json.loads(other)["systems"][1]["ci"]


def test_compare_p_values_agree_with_sacrebleus_paired_bootstrap_and_randomization(capsys, tmp_path):
    from sacrebleu.metrics import CHRF
    from sacrebleu.significance import PairedTest

    files, texts = systems(tmp_path, 800)
    for method, ours_flag in (("bs", []), ("ar", ["--randomization", "2000"])):
        _, out, _ = run(capsys, "compare", files["ref"], files["base"], files["slightly"], files["worse"],
                        "--json", *ours_flag)
        ours = json.loads(out)["systems"]
        named = [("base", texts["base"]), ("slightly", texts["slightly"]), ("worse", texts["worse"])]
        test = PairedTest(named, {"chrF": CHRF()}, references=[texts["ref"]], test_type=method,
                          n_samples=2000 if method == "ar" else 1000)
        _, results = test()
        theirs = next(value for key, value in results.items() if key != "System")
        for our, their in zip(ours[1:], theirs[1:]):
            assert our["p_value"] == pytest.approx(their.p_value, abs=0.03), (method, our, their)
            assert our["score"] == pytest.approx(their.score, abs=1e-4)
        if method == "bs":
            for our, their in zip(ours, theirs):  # sacreBLEU reports mean +- half the same percentile interval
                assert (our["ci"][1] - our["ci"][0]) / 2 == pytest.approx(their.ci, abs=0.02)


def sacrebleu_paired(files, systems_, flag, samples):
    """sacreBLEU 2.6's own command line: its p-values for each system after the baseline, as it prints them."""
    sacrebleu = shutil.which("sacrebleu", path=os.path.dirname(sys.executable))
    assert sacrebleu, "sacreBLEU is a test dependency (requirements-dev.txt)"
    result = subprocess.run([sacrebleu, files["ref"], "-i", *(files[name] for name in systems_), "-m", "chrf",
                             flag, f"{flag}-n", str(samples), "-f", "text"],
                            capture_output=True, text=True, timeout=600, check=True, env={**os.environ,
                                                                                          "SACREBLEU_SEED": "12345"})
    values = re.findall(r"\(p = ([0-9.]+)\)", result.stdout)
    assert len(values) == len(systems_) - 1, result.stdout
    return values


def close_systems(tmp_path):
    """Real MT output of 3,004 segments with 2% of its words dropped, four times at random: systems so alike that
    their p-values fall anywhere between 0 and 1, where any different draw would show."""
    files, texts = systems(tmp_path, 3004)
    for seed in range(1, 5):
        rng = random.Random(seed)
        files[f"close{seed}"] = write_lines(tmp_path / f"close{seed}.txt", [
            " ".join([word for word in line.split() if rng.random() > 0.02] or line.split()[:1])
            for line in texts["base"]])
    return files, ["close1", "close2", "close3", "close4"]


@pytest.mark.parametrize("trials", [1396, 1397, 10000])
def test_compare_randomization_gives_sacrebleus_paired_ar_p_values_to_every_printed_digit(capsys, tmp_path,
                                                                                         trials):
    files, names = close_systems(tmp_path)
    theirs = sacrebleu_paired(files, names, "--paired-ar", trials)
    code, out, err = run(capsys, "compare", *(files[name] for name in ["ref", *names]), "--json",
                         "--randomization", str(trials))
    assert code == 0, err
    ours = [f"{system['p_value']:.4f}" for system in json.loads(out)["systems"][1:]]
    assert ours == theirs and len(set(theirs)) == len(theirs)


def test_compare_bootstrap_gives_sacrebleus_paired_bs_p_values_to_every_printed_digit(capsys, tmp_path):
    files, names = close_systems(tmp_path)
    theirs = sacrebleu_paired(files, names, "--paired-bs", 1000)
    code, out, err = run(capsys, "compare", *(files[name] for name in ["ref", *names]), "--json")
    assert code == 0, err
    assert [f"{system['p_value']:.4f}" for system in json.loads(out)["systems"][1:]] == theirs


def test_compare_holds_compact_counts_so_200k_segments_of_two_systems_stay_under_200_mb(tmp_path):
    _, texts = systems(tmp_path, 40)
    rng = random.Random(5)
    picks = [rng.randrange(40) for _ in range(200_000)]
    for name in ("ref", "base", "slightly"):
        write_lines(tmp_path / f"{name}.big", [texts[name][i] for i in picks])
    # VmHWM: this program's own peak (ru_maxrss would also hold the forking test process's size)
    measure = ("import sys\nfrom chrf_components_cli.main import main\ncode = main(sys.argv[1:])\n"
               "print(open('/proc/self/status').read().split('VmHWM:')[1].split()[0], file=sys.stderr)\n"
               "sys.exit(code)")
    result = subprocess.run([sys.executable, "-c", measure, "compare", *(tmp_path / f"{name}.big" for name in
                                                                         ("ref", "base", "slightly")),
                             "--bootstrap", "100", "--json"], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    peak_mb = int(result.stderr.split()[-1]) / 1024
    # 72 bytes a segment and system (~140 MB in all here); joined int64 rows and float64 copies took 340 MB
    assert peak_mb < 200, peak_mb


def test_compare_prints_a_table_with_intervals_deltas_and_marks(capsys, tmp_path):
    files, _ = systems(tmp_path, 300)
    code, out, _ = run(capsys, "compare", files["ref"], files["base"], files["worse"], files["copy"],
                       "--bootstrap", "300")
    assert code == 0
    rows = {line.split()[0]: line for line in out.splitlines() if line.startswith("  /")}
    assert rows[str(files["worse"])].rstrip().endswith("*") and not rows[str(files["copy"])].rstrip().endswith("*")
    assert "95% CI" in out and "p-value" in out and "signature: chrf-components:1.0.0|" in out


def test_vectorised_resampled_scores_equal_exact_corpus_scores(tmp_path):
    from chrf_components_cli import compare

    hyps, refs = _texts(60)
    for averaging in ("precision_recall", "per_order_f"):
        request_settings = chrf_core.CHRF(word_order=2, beta=3, averaging=averaging)
        rows = chrf_core.counts.segment_counts(hyps, refs, request_settings).reshape(60, -1)
        picks = np.random.default_rng(1).integers(0, 60, size=(20, 60))
        stats = np.stack([rows[pick].sum(axis=0) for pick in picks]).astype(np.float64)
        vectorised = compare.corpus_scores(request_settings, stats)
        for pick, score in zip(picks, vectorised):
            counts = chrf_core.counts.count_segments([hyps[i] for i in pick], [refs[i] for i in pick],
                                                       request_settings)
            assert score == pytest.approx(float(chrf_core.report.report_of(counts).exact), abs=1e-9)


def _texts(count):
    rng = random.Random(2)
    words = ["the", "cat", "sat", "on", "a", "mat", "dog", "ran", ",", "."]
    hyps = [" ".join(rng.choice(words) for _ in range(rng.randint(0, 12))) for _ in range(count)]
    refs = [" ".join(rng.choice(words) for _ in range(rng.randint(1, 12))) for _ in range(count)]
    return hyps, refs


# ---- HTML ---------------------------------------------------------------------------------------------------


class Page(HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags, self.text, self.external, self.svgs, self._svg = [], [], [], [], None

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))
        for name, value in attrs:
            if name in ("src", "href") and value and not value.startswith("#"):
                self.external.append(value)

    def handle_data(self, data):
        self.text.append(data)


def svg_documents(html_text):
    """Each inline SVG as an element tree (they are well-formed XML)."""
    out, start = [], 0
    while (begin := html_text.find("<svg", start)) >= 0:
        end = html_text.index("</svg>", begin) + len("</svg>")
        out.append(ElementTree.fromstring(html_text[begin:end]))
        start = end
    return out


def assert_inside_viewbox(svg):
    """Every text and shape lies within the drawing (text extents estimated generously, as pages places them)."""
    _, _, width, height = (float(v) for v in svg.get("viewBox").split())
    namespace = "{http://www.w3.org/2000/svg}"
    for element in svg.iter():
        tag = element.tag.replace(namespace, "")
        a = {key: float(value) for key, value in element.attrib.items()
             if key in ("x", "y", "width", "height", "x1", "x2", "y1", "y2", "cx", "cy", "r", "font-size")}
        if tag == "rect":
            boxes = [(a["x"], a["y"], a["x"] + a["width"], a["y"] + a["height"])]
        elif tag == "line":
            boxes = [(min(a["x1"], a["x2"]), min(a["y1"], a["y2"]), max(a["x1"], a["x2"]), max(a["y1"], a["y2"]))]
        elif tag == "circle":
            boxes = [(a["cx"] - a["r"], a["cy"] - a["r"], a["cx"] + a["r"], a["cy"] + a["r"])]
        elif tag == "text":
            size, length = a.get("font-size", 12), pages.text_width(element.text or "", int(a.get("font-size", 12)))
            anchor = element.get("text-anchor", "start")
            left = a["x"] - {"start": 0, "middle": length / 2, "end": length}[anchor]
            boxes = [(left, a["y"] - size, left + length, a["y"] + 0.3 * size)]
        else:
            continue
        for x0, y0, x1, y1 in boxes:
            assert x0 >= 0 and x1 <= width and y0 >= 0 and y1 <= height, (tag, element.attrib, element.text,
                                                                          width, height)


def test_score_html_is_self_contained_names_both_files_and_keeps_every_drawing_inside_its_box(capsys, tmp_path):
    target = tmp_path / "report.html"
    code, _, err = run(capsys, "score", HYP_EN, REF_EN, "--word-order", "2", "--html", target)
    assert code == 0 and f"wrote {target}" in err
    text = target.read_text(encoding="utf-8")
    page = Page()
    page.feed(text)
    assert page.external == [] and not any(tag in ("script", "link", "img", "iframe") for tag, _ in page.tags)
    body = "".join(page.text)
    assert str(HYP_EN) in body and str(REF_EN) in body and "chrF2++ = 54.948318" in body
    assert "chrf-components:1.0.0|chrF2++|nc:6|nw:2" in body
    bars = [attrs for tag, attrs in page.tags if tag == "rect" and attrs.get("class")]
    assert len(bars) == 3 * 8 and {attrs["class"] for attrs in bars} == {"precision", "recall", "f_score"}
    assert "word 2 F: 0.3286" in body
    assert "histogram of segment scores" in text and "lowest-scoring segments" in body
    assert "<mark>sad</mark>" in text
    assert '<meta name="viewport"' in text
    svgs = svg_documents(text)
    assert len(svgs) == 2
    for svg in svgs:
        assert_inside_viewbox(svg)


@pytest.mark.parametrize("orders", [(1, 0), (10, 4), (0, 1)])
def test_the_order_chart_fits_its_box_for_any_number_of_orders(orders):
    counts = chrf_core.service.compute_counts({"hypotheses": ["a b c d"], "references": ["a b"],
                                               "char_order": orders[0], "word_order": orders[1]})
    assert_inside_viewbox(ElementTree.fromstring(pages.order_chart(chrf_core.report.report_of(counts))))


def test_compare_html_shows_systems_with_intervals_inside_the_drawing(capsys, tmp_path):
    files, _ = systems(tmp_path, 300)
    target = tmp_path / "compare.html"
    code, _, _ = run(capsys, "compare", files["ref"], files["base"], files["worse"], files["copy"],
                     "--bootstrap", "200", "--html", target)
    assert code == 0
    text = target.read_text(encoding="utf-8")
    page = Page()
    page.feed(text)
    assert page.external == []
    body = "".join(page.text)
    for name in ("base.txt", "worse.txt", "copy.txt", "ref.txt"):
        assert name in body
    svgs = svg_documents(text)
    assert len(svgs) == 1
    assert_inside_viewbox(svgs[0])
    assert len(svgs[0].findall(".//{http://www.w3.org/2000/svg}circle")) == 3


def test_html_dash_writes_the_page_to_standard_output(capsys):
    code, out, err = run(capsys, "score", HYP_EN, REF_EN, "--html", "-")
    assert code == 0 and out.startswith("<!DOCTYPE html>") and out.rstrip().endswith("</html>") and err == ""
    assert not (ROOT / "-").exists()


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(LINE_TEXT, LINE_TEXT), min_size=1, max_size=30), settings_strategy())
def test_segment_score_texts_are_the_exact_scores_rounded_as_the_contract_rounds(pairs, request_settings):
    from chrf_core.report import score_texts

    settings_ = chrf_core.CHRF.of_settings(request_settings)
    counts = chrf_core.counts.segment_counts([h for h, _ in pairs], [r for _, r in pairs], settings_)
    expected = [chrf_core.report.score_text(chrf_core.formula.exact_score(settings_, orders))
                for orders in counts.tolist()]
    assert score_texts(settings_, counts) == expected


@pytest.mark.parametrize("averaging", ["precision_recall", "per_order_f"])
def test_segment_score_texts_round_a_tie_at_the_millionth_to_even_exactly(averaging):
    from chrf_core.report import score_texts

    settings_ = chrf_core.CHRF(char_order=1, beta=1, averaging=averaging)
    for matches in (123456785, 123456795, 500000005):  # scores 12.3456785, 12.3456795, 50.0000005: exact ties
        row = (10**9, 10**9, matches)
        exact = chrf_core.report.score_text(chrf_core.formula.exact_score(settings_, [row]))
        assert score_texts(settings_, np.array([[row]], dtype=np.int64)) == [exact]
        assert exact.endswith(("78", "80", "00"))  # half to even


def test_compare_shows_progress_on_a_terminal_and_nothing_in_a_pipe(capsys, tmp_path, monkeypatch):
    import io

    files, _ = systems(tmp_path, 300)
    arguments = ("compare", files["ref"], files["base"], files["worse"], "--bootstrap", "10")
    code, _, err = run(capsys, *arguments)
    assert code == 0 and err == ""
    terminal = io.StringIO()
    terminal.isatty = lambda: True
    monkeypatch.setattr(sys, "stderr", terminal)
    assert main([str(argument) for argument in arguments]) == 0
    shown = terminal.getvalue()
    assert "\rscored 300 segments (100%)" in shown and shown.endswith("\r\x1b[K")


def test_compare_says_which_system_file_is_short(capsys, tmp_path):
    files, _ = systems(tmp_path, 30)
    short = tmp_path / "short-system.txt"
    short.write_text("".join(files["worse"].read_text(encoding="utf-8").splitlines(keepends=True)[:29]),
                     encoding="utf-8")
    code, _, err = run(capsys, "compare", files["ref"], files["base"], files["worse"], short)
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert f"SYSTEM {short} has 29 lines" in err and f"SYSTEM {files['worse']} has 30 lines" in err
    assert "BASELINE has 30 lines" in err
