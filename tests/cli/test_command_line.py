"""The chrf-components command line: every subcommand, its error paths and exit codes."""

import json
import os
import random
import subprocess
import sys
from html.parser import HTMLParser

import chrf_core
import pytest
from chrf_components_cli import local_lambda
from chrf_components_cli.main import main
from jsonschema import Draft202012Validator
from support import CONTRACT, ROOT

DATA = ROOT / "tests" / "data" / "popovic"
HYP_EN, REF_EN = DATA / "example.hyp.en", DATA / "example.ref.en"
CORPUS_SCHEMA = Draft202012Validator(json.loads((ROOT / "spec" / "corpus-report.schema.json").read_text()))
CONSOLE_SCRIPT = os.path.join(os.path.dirname(sys.executable), "chrf-components")


def run(capsys, *argv):
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def lines(path):
    return path.read_text(encoding="utf-8").splitlines()


def test_score_prints_a_table_with_every_order_a_signature_and_a_diagnosis(capsys):
    code, out, err = run(capsys, "score", str(HYP_EN), str(REF_EN), "--word-order", "2")
    assert code == 0 and err == ""
    assert out.startswith("chrF2++ = 54.948318   (10 segments, 8 effective orders)")
    for label in ("char 1", "char 6", "word 1", "word 2"):
        assert f"\n  {label} " in out
    assert "signature: chrF2++|nc:6|nw:2|space:no|case:mixed|avg:precision_recall|version:1.0.0" in out
    assert "What stands out:" in out and "Weakest orders: word 2" in out
    assert "█" in out


def test_score_json_is_the_corpus_report_equal_to_scoring_in_one_request(capsys):
    code, out, _ = run(capsys, "score", str(HYP_EN), str(REF_EN), "--word-order", "2", "--beta", "3", "--json")
    report = json.loads(out)
    request = {"hypotheses": lines(HYP_EN), "references": lines(REF_EN), "word_order": 2, "beta": 3}
    assert code == 0 and report == chrf_core.score(request)
    CORPUS_SCHEMA.validate(report)


def test_score_reproduces_the_published_chrf_plus_plus_figure_with_per_order_f(capsys):
    code, out, _ = run(capsys, "score", str(HYP_EN), str(REF_EN), "--word-order", "2", "--averaging", "per_order_f",
                       "--json")
    assert code == 0 and json.loads(out)["score"].startswith("54.9482")


def test_score_of_3000_segments_chunks_and_merges_to_the_single_pass_result_with_progress_on_stderr(
    capsys, tmp_path
):
    rng = random.Random(3)
    pairs = []
    for language in ("en", "cs", "ru", "zh"):
        pairs += zip(lines(DATA / f"example.hyp.{language}"), lines(DATA / f"example.ref.{language}"))
    chosen = [pairs[rng.randrange(len(pairs))] for _ in range(3000)]
    chosen = [(h + f" {i}", r + f" {i % 7}") for i, (h, r) in enumerate(chosen)]
    (tmp_path / "hyp.txt").write_text("\n".join(h for h, _ in chosen) + "\n", encoding="utf-8")
    (tmp_path / "ref.txt").write_text("\n".join(r for _, r in chosen) + "\n", encoding="utf-8")
    code, out, err = run(capsys, "score", str(tmp_path / "hyp.txt"), str(tmp_path / "ref.txt"), "--word-order", "2",
                         "--json")
    assert code == 0
    report = json.loads(out)  # nothing but the report on stdout
    settings = chrf_core.parse_settings({"word_order": 2})
    single_pass = chrf_core.count_segments([h for h, _ in chosen], [r for _, r in chosen], settings)
    assert report == chrf_core.build_report(single_pass)
    assert report["segment_count"] == 3000
    CORPUS_SCHEMA.validate(report)
    assert "scored 3000/3000 segments" in err


def test_score_reads_standard_input_for_dash(monkeypatch, capsys):
    import io

    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(HYP_EN.read_bytes()), encoding="utf-8"))
    code, out, _ = run(capsys, "score", "-", str(REF_EN), "--json")
    assert code == 0
    assert json.loads(out) == chrf_core.score({"hypotheses": lines(HYP_EN), "references": lines(REF_EN)})


def test_score_keeps_unicode_line_separators_inside_lines_and_accepts_crlf(capsys, tmp_path):
    (tmp_path / "h").write_bytes("a\u2028b\r\nc\x85d\r\n".encode())
    (tmp_path / "r").write_bytes(b"a b\nc d\n")
    code, out, _ = run(capsys, "score", str(tmp_path / "h"), str(tmp_path / "r"), "--json")
    assert code == 0 and json.loads(out)["segment_count"] == 2


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["score", str(HYP_EN), str(DATA / "example.ref.ru") + ".missing"], "cannot read"),
        (["score", "-", "-"], "only one of HYP_FILE and REF_FILE can be standard input"),
        (["score", str(HYP_EN), str(REF_EN), "--beta", "0"], "beta: must be an integer from 1 to 16, got 0"),
        (["score", str(HYP_EN), str(REF_EN), "--char-order", "0"], "char_order and word_order cannot both be 0"),
        (["score", str(HYP_EN), str(REF_EN), "--word-order", "9"], "word_order: must be an integer from 0 to 4"),
        (["invoke", "no-such-event.json"], "cannot read"),
    ],
)
def test_errors_are_one_line_on_stderr_with_exit_code_2(capsys, argv, message):
    code, out, err = run(capsys, *argv)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and message in err and "Traceback" not in err


def test_files_with_different_line_counts_are_rejected(capsys, tmp_path):
    (tmp_path / "h").write_text("a\nb\nc\n", encoding="utf-8")
    (tmp_path / "r").write_text("a\nb\n", encoding="utf-8")
    code, _, err = run(capsys, "score", str(tmp_path / "h"), str(tmp_path / "r"))
    assert code == 2 and "HYP_FILE has 3 lines but REF_FILE has 2" in err


def test_files_that_are_not_utf8_or_empty_are_rejected(capsys, tmp_path):
    (tmp_path / "h").write_bytes(b"caf\xe9\n")
    (tmp_path / "r").write_text("cafe\n", encoding="utf-8")
    code, _, err = run(capsys, "score", str(tmp_path / "h"), str(tmp_path / "r"))
    assert code == 2 and "not UTF-8 (byte 3)" in err
    (tmp_path / "e").write_text("", encoding="utf-8")
    code, _, err = run(capsys, "score", str(tmp_path / "e"), str(tmp_path / "e"))
    assert code == 2 and "empty" in err


def test_a_segment_larger_than_a_request_is_named_by_its_line(capsys, tmp_path):
    (tmp_path / "h").write_text("a\n" + "x" * 70000 + "\n", encoding="utf-8")
    (tmp_path / "r").write_text("a\nb\n", encoding="utf-8")
    code, _, err = run(capsys, "score", str(tmp_path / "h"), str(tmp_path / "r"))
    assert code == 2 and "line 2: its texts take 70001 UTF-8 bytes" in err


def test_request_prints_the_contract_output_or_the_error_envelope(capsys, tmp_path):
    example = CONTRACT["examples"][0]
    (tmp_path / "ok.json").write_text(json.dumps(example["input"]), encoding="utf-8")
    code, out, _ = run(capsys, "request", str(tmp_path / "ok.json"))
    assert code == 0 and out == json.dumps(example["output"]) + "\n"
    (tmp_path / "bad.json").write_text('{"hypotheses": ["a"], "references": ["a"], "beta": 99}', encoding="utf-8")
    code, out, _ = run(capsys, "request", str(tmp_path / "bad.json"))
    assert code == 1
    assert json.loads(out) == {"error": {"code": "invalid_input", "field": "beta",
                                         "message": "beta: must be an integer from 1 to 16, got 99"}}
    (tmp_path / "junk.json").write_text("{not json", encoding="utf-8")
    code, out, _ = run(capsys, "request", str(tmp_path / "junk.json"))
    assert code == 1 and json.loads(out)["error"]["field"] is None


def test_invoke_prints_the_handler_response_for_an_event_file_like_sam_local_invoke(capsys):
    event_path = ROOT / "events" / "http-v2-valid.json"
    code, out, _ = run(capsys, "invoke", str(event_path))
    expected = json.loads((ROOT / "events" / "http-v2-valid.expected.json").read_text(encoding="utf-8"))
    assert code == 0 and local_lambda.comparable(json.loads(out)) == expected


def test_invoke_reports_a_direct_invoke_error_as_lambda_does(capsys):
    code, out, _ = run(capsys, "invoke", str(ROOT / "events" / "direct-invoke-invalid.json"))
    assert code == 0 and json.loads(out)["errorType"] == "InvalidInputError"


def test_installed_console_script_runs_request_from_standard_input():
    example = CONTRACT["examples"][1]
    completed = subprocess.run([CONSOLE_SCRIPT, "request", "-"], input=json.dumps(example["input"]),
                               capture_output=True, text=True, timeout=60, check=False)
    assert completed.returncode == 0, completed.stderr
    assert json.loads(completed.stdout) == example["output"]


class _Collector(HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags, self.text, self.external = [], [], []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))
        for name, value in attrs:
            if name in ("src", "href") and value and not value.startswith("#"):
                self.external.append(value)

    def handle_data(self, data):
        self.text.append(data)


def test_html_report_is_self_contained_with_a_chart_and_the_table(capsys, tmp_path):
    target = tmp_path / "report.html"
    code, _, err = run(capsys, "score", str(HYP_EN), str(REF_EN), "--word-order", "2", "--html", str(target))
    assert code == 0 and f"wrote {target}" in err
    parser = _Collector()
    parser.feed(target.read_text(encoding="utf-8"))
    text = "".join(parser.text)
    assert parser.external == [] and not any(tag in ("script", "link", "img") for tag, _ in parser.tags)
    bars = [attrs for tag, attrs in parser.tags if tag == "rect" and attrs.get("class")]
    assert len(bars) == 3 * 8  # precision, recall and F for each of the 8 orders
    assert {attrs["class"] for attrs in bars} == {"precision", "recall", "f_score"}
    assert "chrF2++ = 54.948318" in text
    assert len([tag for tag, _ in parser.tags if tag == "tr"]) == 1 + 8
    assert "word 2 f_score: 0.3286" in text
