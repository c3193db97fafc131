"""The chrf-components command line: score, request, invoke; their error paths and exit codes."""

import io
import json
import os
import random
import subprocess
import sys

import chrf_core
import pytest
from in_process import run
from jsonschema import Draft202012Validator
from support import CONTRACT, ROOT, contract_part

DATA = ROOT / "tests" / "data" / "popovic"
HYP_EN, REF_EN = DATA / "example.hyp.en", DATA / "example.ref.en"
CORPUS_SCHEMA = Draft202012Validator(json.loads((ROOT / "spec" / "corpus-report.schema.json").read_text()))
CONSOLE_SCRIPT = os.path.join(os.path.dirname(sys.executable), "chrf-components")
SIGNATURE = "chrf-components:1.0.0|chrF2++|nc:6|nw:2|space:no|case:mixed|avg:precision_recall|hyp:all"


def lines(path):
    return path.read_text(encoding="utf-8").splitlines()


def write(path, text):
    path.write_text(text, encoding="utf-8")
    return path


def test_score_prints_a_table_with_every_order_a_signature_and_a_diagnosis(capsys):
    code, out, err = run(capsys, "score", HYP_EN, REF_EN, "--word-order", "2")
    assert code == 0 and err == ""
    assert out.startswith("chrF2++ = 54.948318   (10 segments, 8 effective orders)")
    for label in ("char 1", "char 6", "word 1", "word 2"):
        assert f"\n  {label} " in out
    assert f"signature: {SIGNATURE}" in out
    assert "What stands out:" in out and "Weakest orders: word 2" in out
    header = next(line for line in out.splitlines() if line.lstrip().startswith("order"))
    assert header.split().count("F") == 1 and "F, 0 to 1" in header


def test_the_signature_cannot_be_taken_for_a_sacrebleu_one():
    signature = chrf_core.CHRF(word_order=2).signature
    assert signature == SIGNATURE and "version:" not in signature and "nrefs" not in signature


def test_score_json_is_the_corpus_report_equal_to_scoring_in_one_request(capsys):
    code, out, _ = run(capsys, "score", HYP_EN, REF_EN, "--word-order", "2", "--beta", "3", "--json")
    report = contract_part(json.loads(out))
    request = {"hypotheses": lines(HYP_EN), "references": lines(REF_EN), "word_order": 2, "beta": 3}
    assert code == 0 and report == chrf_core.score(request)
    CORPUS_SCHEMA.validate(report)


def test_score_reproduces_the_published_chrf_plus_plus_figure_with_per_order_f(capsys):
    code, out, _ = run(capsys, "score", HYP_EN, REF_EN, "--word-order", "2", "--averaging", "per_order_f", "--json")
    assert code == 0 and json.loads(out)["score"].startswith("54.9482")


def corpus(tmp_path, count, seed=3):
    rng = random.Random(seed)
    pairs = []
    for language in ("en", "cs", "ru", "zh"):
        pairs += zip(lines(DATA / f"example.hyp.{language}"), lines(DATA / f"example.ref.{language}"))
    chosen = [pairs[rng.randrange(len(pairs))] for _ in range(count)]
    chosen = [(h + f" {i}", r + f" {i % 7}") for i, (h, r) in enumerate(chosen)]
    hyp = write(tmp_path / "hyp.txt", "\n".join(h for h, _ in chosen) + "\n")
    ref = write(tmp_path / "ref.txt", "\n".join(r for _, r in chosen) + "\n")
    return hyp, ref, chosen


def test_score_streams_many_chunks_to_exactly_the_single_pass_result_without_progress_in_a_pipe(
    capsys, tmp_path, monkeypatch
):
    from chrf_components_cli import lines as line_reader

    monkeypatch.setattr(line_reader, "CHUNK_BYTES", 9000)  # many chunks, one of them partial
    hyp, ref, chosen = corpus(tmp_path, 3000)
    code, out, err = run(capsys, "score", hyp, ref, "--word-order", "2", "--json")
    assert code == 0 and err == ""  # stderr is not a terminal: no progress written into logs
    report = contract_part(json.loads(out))
    settings = chrf_core.CHRF(word_order=2)
    single_pass = chrf_core.counts.count_segments([h for h, _ in chosen], [r for _, r in chosen], settings)
    assert report == chrf_core.report.report_of(single_pass).to_dict()
    CORPUS_SCHEMA.validate(report)


def test_score_shows_progress_only_on_a_terminal(capsys, tmp_path, monkeypatch):
    from chrf_components_cli import corpus as corpus_module

    hyp, _, _ = corpus(tmp_path, 50)
    terminal = io.StringIO()
    terminal.isatty = lambda: True
    monkeypatch.setattr(sys, "stderr", terminal)
    progress = corpus_module.progress_printer([corpus_module.LineFile(str(hyp), "HYP_FILE")])
    progress(50)
    assert "\rscored 50 segments (0%)" in terminal.getvalue()
    assert corpus_module.progress_printer([], stream=io.StringIO()) is None


def test_score_accepts_a_line_as_long_as_a_whole_request_and_refuses_a_longer_one_naming_it(capsys, tmp_path):
    longest = "xy " * 21845 + "z"  # 65536 bytes
    hyp = write(tmp_path / "h", "a\n" + longest + "\n")
    ref = write(tmp_path / "r", "a\n" + "xy " * 20000 + "\n")
    code, out, err = run(capsys, "score", hyp, ref, "--json")
    assert code == 0, err
    expected = chrf_core.counts.count_segments(["a", longest], ["a", ("xy " * 20000).rstrip()], chrf_core.CHRF())
    assert contract_part(json.loads(out)) == chrf_core.report.report_of(expected).to_dict()
    write(tmp_path / "h", "a\n" + longest + "zz\nb\n")
    code, out, err = run(capsys, "score", hyp, ref)
    assert code == 2 and out == "" and err.count("\n") == 1
    assert f"HYP_FILE {hyp}: line 2 is longer than 65536 bytes (the contract's whole request)" in err


def test_score_reads_standard_input_for_dash(monkeypatch, capsys):
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(HYP_EN.read_bytes()), encoding="utf-8"))
    code, out, _ = run(capsys, "score", "-", REF_EN, "--json")
    assert code == 0
    assert contract_part(json.loads(out)) == chrf_core.score({"hypotheses": lines(HYP_EN), "references": lines(REF_EN)})


def test_score_reads_lines_as_sacrebleu_does_separators_kept_trailing_whitespace_stripped_bom_kept(capsys, tmp_path):
    (tmp_path / "h").write_bytes("\ufeffa\u2028b\r\nc\x85d \t\u3000\r\n".encode())
    (tmp_path / "r").write_bytes(b"a b\nc d\n")
    code, out, _ = run(capsys, "score", tmp_path / "h", tmp_path / "r", "--json")
    assert code == 0 and contract_part(json.loads(out)) == chrf_core.score({"hypotheses": ["\ufeffa\u2028b", "c\x85d"],
                                                              "references": ["a b", "c d"]})


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["score", HYP_EN, str(REF_EN) + ".missing"], "REF_FILE " + str(REF_EN) + ".missing: cannot read"),
        (["score", "-", "-"], "only one input can be standard input"),
        (["score", HYP_EN, REF_EN, "--beta", "0"], "--beta: must be an integer from 1 to 16, got 0"),
        (["score", HYP_EN, REF_EN, "--char-order", "0"], "--char-order and --word-order cannot both be 0"),
        (["score", HYP_EN, REF_EN, "--word-order", "9"], "--word-order: must be an integer from 0 to 4, got 9"),
        (["score", HYP_EN, REF_EN, "--char-order", "x"], "argument --char-order/--chrf-char-order/-cc: invalid int "
                                                          "value: 'x'"),
        (["score", HYP_EN], "give at least one reference file: HYP_FILE REF_FILE [REF_FILE ...], or REF_FILE"),
        (["score", HYP_EN, REF_EN, "--json", "--html", "-"], "--html - and --json both write to standard output"),
        (["invoke", "no-such-event.json", "--template", ROOT / "template.yaml"], "cannot read"),
        (["request", "/nonexistent/request.json"], "cannot read"),
    ],
)
def test_errors_are_one_line_on_stderr_with_exit_code_2(capsys, argv, message):
    code, out, err = run(capsys, *argv)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and message in err and "Traceback" not in err, err


def test_files_with_different_line_counts_are_rejected_with_both_counts(capsys, tmp_path):
    hyp = write(tmp_path / "h", "a\nb\nc\nd\n")
    ref = write(tmp_path / "r", "a\nb\n")
    code, _, err = run(capsys, "score", hyp, ref)
    assert code == 2 and "HYP_FILE has 4 lines, REF_FILE has 2 lines; files must be line-aligned" in err
    assert "blank" not in err


def test_a_trailing_blank_line_is_pointed_out(capsys, tmp_path):
    hyp = write(tmp_path / "h", "a\nb\n\n")
    ref = write(tmp_path / "r", "a\nb\n")
    code, _, err = run(capsys, "score", hyp, ref)
    assert code == 2 and "HYP_FILE has 3 lines, REF_FILE has 2 lines" in err
    assert "the last 1 line of HYP_FILE is blank: remove the trailing blank line?" in err


def test_files_that_are_not_utf8_or_empty_are_rejected(capsys, tmp_path):
    (tmp_path / "h").write_bytes(b"ok\ncaf\xe9\n")
    write(tmp_path / "r", "ok\ncafe\n")
    code, _, err = run(capsys, "score", tmp_path / "h", tmp_path / "r")
    assert code == 2 and "not UTF-8 (line 2, byte 6)" in err
    empty = write(tmp_path / "e", "")
    code, _, err = run(capsys, "score", empty, empty)
    assert code == 2 and "empty" in err


def test_messages_count_in_the_singular_for_one(capsys, tmp_path):
    code, out, _ = run(capsys, "score", write(tmp_path / "h", "a b c\n"), write(tmp_path / "r", "a b d\n"))
    assert code == 0 and "(1 segment, " in out and "1 segments" not in out


@pytest.mark.parametrize(
    ("hyp", "ref", "flags", "expected", "absent"),
    [
        ("\nthe cat\n", "a dog\nthe cat\n", [], "1 hypothesis line of 2 is empty", "too short"),
        ("\n", "a dog\n", [], "Every hypothesis line is empty", "too short"),
        ("the cat\n", "the cat\n", [], "Every hypothesis is identical to its reference", "Weakest"),
        ("\n", "\n", [], "Every line of both files is empty: there is nothing to match, so the score is 0.",
         "every n-gram matches"),  # 72c9660 said every n-gram matches, over a 0.000000 score
        ("我们今天去公园散步\n他喜欢看书\n", "我们明天去公园散步\n她喜欢读书\n", ["--word-order", "2"],
         "have a side without spaces, which is then one word", "the wording differs"),
    ],
)
def test_the_diagnosis_is_true_for_empty_lines_texts_without_spaces_and_identical_pairs(
    capsys, tmp_path, hyp, ref, flags, expected, absent
):
    code, out, _ = run(capsys, "score", write(tmp_path / "h", hyp), write(tmp_path / "r", ref), *flags)
    assert code == 0 and expected in out and absent not in out, out


def test_request_prints_the_contract_output_or_the_error_envelope(capsys, tmp_path):
    example = CONTRACT["examples"][0]
    code, out, _ = run(capsys, "request", write(tmp_path / "ok.json", json.dumps(example["input"])))
    assert code == 0 and out == json.dumps(example["output"]) + "\n"
    bad = write(tmp_path / "bad.json", '{"hypotheses": ["a"], "references": ["a"], "beta": 99}')
    code, out, _ = run(capsys, "request", bad)
    assert code == 1
    assert json.loads(out) == {"error": {"code": "invalid_input", "field": "beta",
                                         "message": "beta: must be an integer from 1 to 16, got 99"}}
    code, out, _ = run(capsys, "request", write(tmp_path / "junk.json", "{not json"))
    assert code == 1 and json.loads(out)["error"]["field"] is None


def test_request_with_a_lone_surrogate_key_prints_a_deliverable_error(capsys, tmp_path):
    path = write(tmp_path / "r.json", '{"\\ud800": 1, "hypotheses": ["a"], "references": ["a"]}')
    code, out, _ = run(capsys, "request", path)
    assert code == 1 and json.loads(out)["error"]["field"] == "\\ud800"
    out.encode("utf-8")


def test_request_reads_at_most_the_api_payload_limit(capsys, monkeypatch):
    from chrf_components_local import template as sam_template

    monkeypatch.setattr(sam_template, "API_GATEWAY_PAYLOAD_LIMIT", 1000)
    code, out, err = run(capsys, "request", "/dev/zero")
    assert code == 2 and out == "" and "larger than 1000 bytes" in err and err.count("\n") == 1


def test_request_from_unbounded_standard_input_stops_at_the_limit():
    completed = subprocess.run(f"head -c 11000000 /dev/zero | {CONSOLE_SCRIPT} request -", shell=True,
                               capture_output=True, text=True, timeout=60, check=False)
    assert completed.returncode == 2 and "larger than 10485760 bytes" in completed.stderr
    assert "Traceback" not in completed.stderr


def test_invoke_prints_exactly_what_the_handler_returns_for_an_event_file(capsys, monkeypatch):
    monkeypatch.chdir(ROOT)
    for name in ("http-v2-valid", "rest-v1-valid", "direct-invoke-invalid", "stepfunctions-task"):
        code, out, _ = run(capsys, "invoke", ROOT / "events" / f"{name}.json")
        expected = json.loads((ROOT / "events" / f"{name}.expected.json").read_text(encoding="utf-8"))
        answer = json.loads(out)
        if "errorType" in answer:  # as Lambda's runtime (and sam local invoke) reports a function error
            assert list(answer) == ["errorMessage", "errorType", "requestId", "stackTrace"] and answer["stackTrace"]
            answer = {key: answer[key] for key in ("errorType", "errorMessage")}
        assert code == 0 and answer == expected, name


@pytest.mark.parametrize(("name", "change", "status"), [
    ("http-v2-valid", {"rawPath": "/v1/tools/other/execute"}, 404),
    ("rest-v1-valid", {"path": "/v1/tools/chrf-components/versions/2.0.0/execute"}, 404),
    ("rest-v1-valid", {"httpMethod": "GET"}, 404),
])
def test_invoke_answers_an_event_for_another_route_with_404(capsys, monkeypatch, tmp_path, name, change, status):
    monkeypatch.chdir(ROOT)
    event = json.loads((ROOT / "events" / f"{name}.json").read_text(encoding="utf-8"))
    event.update(change)
    (tmp_path / "event.json").write_text(json.dumps(event), encoding="utf-8")
    code, out, _ = run(capsys, "invoke", tmp_path / "event.json")
    assert code == 0 and json.loads(out)["statusCode"] == status


def test_invoke_names_the_templates_functions_when_asked_for_another(capsys, monkeypatch):
    monkeypatch.chdir(ROOT)
    code, out, err = run(capsys, "invoke", ROOT / "events" / "direct-invoke.json", "--function", "Nope")
    assert code == 2 and out == "" and err.count("\n") == 1
    assert "no function Nope in the template; it has ChrfComponentsFunction, MergeReportFunction, " \
           "ScoreBatchFunction" in err


def test_invoke_and_serve_without_a_template_say_where_they_looked(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for argv in (["invoke", ROOT / "events" / "direct-invoke.json"], ["serve", "--port", "0"]):
        code, _, err = run(capsys, *argv)
        assert code == 2 and f"no template.yaml in {tmp_path}" in err and "--template PATH" in err
    code, _, err = run(capsys, "invoke", ROOT / "events" / "direct-invoke.json", "--template", tmp_path / "x.yaml")
    assert code == 2 and "--template" in err and "no such file" in err


def test_invoke_finds_the_template_given_with_template_from_anywhere(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, out, _ = run(capsys, "invoke", ROOT / "events" / "direct-invoke.json", "--template", ROOT / "template.yaml")
    assert code == 0 and json.loads(out)["score"] == "25.000000"


def test_installed_console_script_runs_request_from_standard_input():
    example = CONTRACT["examples"][1]
    completed = subprocess.run([CONSOLE_SCRIPT, "request", "-"], input=json.dumps(example["input"]),
                               capture_output=True, text=True, timeout=60, check=False)
    assert completed.returncode == 0, completed.stderr
    assert json.loads(completed.stdout) == example["output"]


def test_a_closed_pipe_ends_quietly(tmp_path):
    hyp, ref, _ = corpus(tmp_path, 2000)
    completed = subprocess.run(f"{CONSOLE_SCRIPT} segments {hyp} {ref} | head -n 1", shell=True,
                               capture_output=True, text=True, timeout=60, check=False)
    assert completed.stdout.startswith("1\t") and "Traceback" not in completed.stderr


AWS_EXTRA = "aws_lambda_powertools,yaml,boto3,botocore,waitress"


def test_without_the_aws_extra_the_researchers_commands_work_and_the_service_commands_say_what_to_install():
    paths = os.pathsep.join(str(ROOT / folder) for folder in ("tests/without", "cli", "layers/chrf_core", "local"))

    def run_cli(*argv, without=AWS_EXTRA):
        return subprocess.run([sys.executable, "-m", "chrf_components_cli.main", *map(str, argv)], cwd=ROOT,
                              env={**os.environ, "PYTHONPATH": paths, "CHRF_WITHOUT": without},
                              capture_output=True, text=True, timeout=120)

    for argv in (["score", HYP_EN, REF_EN], ["segments", HYP_EN, REF_EN],
                 ["compare", REF_EN, HYP_EN, REF_EN, "--bootstrap", "10"]):
        # The research commands import nothing of the local emulator either: it is missing too while they run.
        result = run_cli(*argv, without=AWS_EXTRA + ",chrf_components_local")
        assert result.returncode == 0, result.stderr
    for argv in (["serve"], ["invoke", "events/direct-invoke.json"], ["request", "-", "--function", "f"],
                 ["pipeline", "run", HYP_EN, REF_EN, "--stack", "s"]):
        result = run_cli(*argv)
        assert result.returncode == 2 and result.stderr.count("\n") == 1, result.stderr
        assert "pip install 'chrf-components[aws]'" in result.stderr and "Traceback" not in result.stderr
