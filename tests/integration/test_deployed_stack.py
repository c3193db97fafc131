"""The command line against the deployed system (or its local stand-ins): signed API calls, direct invocation,
and a corpus pipeline run on the bundled real data."""

import json
import urllib.error
import urllib.request

import chrf_core
import pytest
from in_process import run
from support import CONTRACT, ROOT, contract_part

from chrf_components_cli import remote
from chrf_components_local import sigv4

DATA = ROOT / "tests" / "data" / "popovic"


def request_file(tmp_path, request):
    path = tmp_path / "request.json"
    path.write_text(json.dumps(request, ensure_ascii=False), encoding="utf-8")
    return path


def test_a_signed_request_to_the_api_returns_the_contract_output(capsys, tmp_path, deployed):
    example = CONTRACT["examples"][0]
    code, out, err = run(capsys, "request", request_file(tmp_path, example["input"]), "--url", deployed["url"])
    assert code == 0, err
    assert json.loads(out) == example["output"]


def test_an_invalid_request_through_the_api_prints_the_400_body_and_exits_1(capsys, tmp_path, deployed):
    code, out, _ = run(capsys, "request", request_file(tmp_path, {"hypotheses": ["a"], "references": []}),
                       "--url", deployed["url"])
    assert code == 1
    assert json.loads(out) == {"error": {"code": "invalid_input", "field": "references",
                                         "message": "references: at least 1 segment, got 0"}}


def test_an_unsigned_or_tampered_request_is_refused_with_403(deployed):
    body = json.dumps({"hypotheses": ["a"], "references": ["a"]}).encode()
    unsigned = urllib.request.Request(deployed["url"], data=body, method="POST")
    with pytest.raises(urllib.error.HTTPError) as caught:
        urllib.request.urlopen(unsigned, timeout=30)
    assert caught.value.code == 403
    import botocore.session

    credentials = botocore.session.get_session().get_credentials().get_frozen_credentials()
    headers = sigv4.sign("POST", deployed["url"], body, credentials, sigv4.region_of(deployed["url"], "us-east-1"))
    tampered = urllib.request.Request(deployed["url"], data=body.replace(b'"a"]', b'"b"]'), method="POST",
                                      headers=headers)
    with pytest.raises(urllib.error.HTTPError) as caught:
        urllib.request.urlopen(tampered, timeout=30)
    assert caught.value.code == 403


def test_the_signature_verifies_on_the_receiving_side(deployed):
    if not deployed["local"]:
        pytest.skip("the deployed API checks signatures itself (IAM authorization)")
    import botocore.session

    credentials = botocore.session.get_session().get_credentials().get_frozen_credentials()
    body = b'{"hypotheses": ["x"], "references": ["y"]}'
    headers = sigv4.sign("POST", deployed["url"], body, credentials, "us-east-1", {"Content-Type": "application/json"})
    sigv4.verify("POST", deployed["url"], headers, body, credentials, "us-east-1")
    with pytest.raises(sigv4.SignatureError, match="does not match"):
        sigv4.verify("POST", deployed["url"], headers, body + b" ", credentials, "us-east-1")


def test_plain_http_is_refused_for_anything_but_loopback(capsys, tmp_path):
    code, _, err = run(capsys, "request", request_file(tmp_path, {"hypotheses": ["a"], "references": ["a"]}),
                       "--url", "http://example.com/v1/tools/chrf-components/versions/1.0.0/execute")
    assert code == 3 and "plain http is allowed only for loopback addresses" in err and err.count("\n") == 1


def test_invoking_the_function_directly_returns_the_output_or_the_invalid_input_error(capsys, tmp_path, deployed):
    example = CONTRACT["examples"][1]
    code, out, err = run(capsys, "request", request_file(tmp_path, example["input"]), "--function",
                         deployed["function"])
    assert code == 0, err
    assert json.loads(out) == example["output"]
    code, out, _ = run(capsys, "request", request_file(tmp_path, {"hypotheses": ["a"], "references": ["a"],
                                                                  "beta": 0}), "--function", deployed["function"])
    assert code == 1
    error = json.loads(out)
    assert error["errorType"] == "InvalidInputError"
    assert json.loads(error["errorMessage"])["field"] == "beta"


def test_a_pipeline_run_on_the_bundled_real_data_prints_the_corpus_report(capsys, deployed, monkeypatch):
    monkeypatch.setattr(remote, "POLL_SECONDS", 0.05 if deployed["local"] else 2.0)
    hypotheses, references = [], []
    for language in ("en", "cs", "ru", "zh"):
        hypotheses += (DATA / f"example.hyp.{language}").read_text(encoding="utf-8").splitlines()
        references += (DATA / f"example.ref.{language}").read_text(encoding="utf-8").splitlines()
    merged_hyp, merged_ref = deployed_files = (ROOT / ".cache" / "pipeline.hyp", ROOT / ".cache" / "pipeline.ref")
    merged_hyp.parent.mkdir(exist_ok=True)
    merged_hyp.write_text("\n".join(hypotheses) + "\n", encoding="utf-8")
    merged_ref.write_text("\n".join(references) + "\n", encoding="utf-8")
    code, out, err = run(capsys, "pipeline", "run", *deployed_files, "--stack", deployed["stack"], "--word-order",
                         "2", "--json")
    assert code == 0, err
    assert contract_part(json.loads(out)) == chrf_core.score({"hypotheses": hypotheses, "references": references,
                                                              "word_order": 2})
    assert json.loads(out)["files"] == {"hypotheses": str(merged_hyp), "references": [str(merged_ref)]}
    code, out, err = run(capsys, "pipeline", "run", *deployed_files, "--stack", deployed["stack"])
    assert code == 0 and out.startswith("chrF2 = ") and "signature: chrf-components:1.0.0|" in out


def test_a_failed_pipeline_run_prints_its_error_and_cause_in_one_line(capsys, deployed, monkeypatch, tmp_path):
    from chrf_components_cli.lines import LineFile

    monkeypatch.setattr(remote, "POLL_SECONDS", 0.05 if deployed["local"] else 2.0)
    (tmp_path / "h").write_text("a b\nc d\n", encoding="utf-8")
    (tmp_path / "r").write_text("a b\nc e\n", encoding="utf-8")
    # Settings the command line would refuse, sent anyway: the batches reject them and the execution fails.
    files = [LineFile(str(tmp_path / "h"), "HYP_FILE"), LineFile(str(tmp_path / "r"), "REF_FILE")]
    unchecked = type("Unchecked", (), {"as_dict": lambda self: {**chrf_core.CHRF().as_dict(), "beta": 0},
                                       "word_order": 0})()
    code = remote.run_pipeline(deployed["stack"], files, unchecked)
    err = capsys.readouterr().err
    assert code == 1
    failure = [line for line in err.splitlines() if "execution" in line and "FAILED" in line]
    assert failure == ["chrf-components pipeline run: execution FAILED: InvalidInputError: "
                       "beta: must be an integer from 1 to 16, got 0"]


def test_an_unknown_stack_is_one_line_with_exit_code_3(capsys, tmp_path, deployed):
    (tmp_path / "h").write_text("a\n", encoding="utf-8")
    code, _, err = run(capsys, "pipeline", "run", tmp_path / "h", tmp_path / "h", "--stack", "no-such-stack-xyz")
    assert code == 3 and err.count("\n") == 1 and "no-such-stack-xyz" in err
