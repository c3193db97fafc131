"""The corpus pipeline locally, as a pipeline builder tests it before deploying: the Distributed Map stand-in's
Lambda tasks call ScoreBatchFunction and MergeReportFunction through `serve`'s Lambda Invoke API over loopback
(boto3 with endpoint_url), the functions reach S3 and Step Functions on a moto server over loopback, and the
report equals `chrf-components score` on the same files."""

import json
import socket
import threading
from unittest import mock

import boto3
import pytest
from aws_stand_ins import FAKE_ENVIRONMENT, MAP_RUNS, through_invoke_api
from botocore.config import Config
from distributed_map import run_map
from support import ROOT

from chrf_components_cli.main import main
from chrf_components_local.server import make_server

DEFINITION = json.loads((ROOT / "statemachine" / "corpus_pipeline.asl.json").read_text(encoding="utf-8"))
DATA = ROOT / "tests" / "data" / "popovic"


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture
def loopback_aws(monkeypatch):
    """A moto server on loopback, everything's AWS endpoint (the test's and, by inheritance, the functions')."""
    from moto.server import ThreadedMotoServer
    from moto.stepfunctions.models import StepFunctionBackend

    moto = ThreadedMotoServer(ip_address="127.0.0.1", port=free_port(), verbose=False)
    moto.start()
    host, port = moto.get_host_and_port()
    for name, value in {**FAKE_ENVIRONMENT, "AWS_ENDPOINT_URL": f"http://{host}:{port}"}.items():
        monkeypatch.setenv(name, value)
    try:
        with mock.patch.object(StepFunctionBackend, "describe_map_run", lambda self, arn: MAP_RUNS[arn]):
            yield
    finally:
        moto.stop()


def test_the_pipeline_through_the_local_invoke_api_reports_what_score_reports(loopback_aws, tmp_path, capsys):
    server = make_server("127.0.0.1", 0, ROOT / "template.yaml", workers=1)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        client = boto3.client("lambda", endpoint_url=f"http://127.0.0.1:{server.server_address[1]}",
                              config=Config(retries={"max_attempts": 1}, read_timeout=120))
        hypotheses, references = [], []
        for language in ("en", "cs", "ru", "zh"):
            hypotheses += (DATA / f"example.hyp.{language}").read_text(encoding="utf-8").splitlines() * 10
            references += (DATA / f"example.ref.{language}").read_text(encoding="utf-8").splitlines() * 10
        s3 = boto3.client("s3")
        s3.create_bucket(Bucket="corpus")
        lines = [json.dumps({"hypothesis": h, "reference": r}, ensure_ascii=False)
                 for h, r in zip(hypotheses, references)]
        s3.put_object(Bucket="corpus", Key="inputs/x.jsonl", Body="\n".join(lines).encode())
        execution = {"input": {"bucket": "corpus", "key": "inputs/x.jsonl"}, "settings": {"word_order": 2},
                     "output": {"bucket": "corpus", "key": "reports/x.json"}}
        map_result = run_map(s3, through_invoke_api(client, "ScoreBatchFunction"), None, execution, "corpus",
                             "map-results", DEFINITION)
        merged = through_invoke_api(client, "MergeReportFunction")({**execution, "map_result": map_result}, None)
    finally:
        server.shutdown()
        server.server_close()
    report = json.loads(s3.get_object(Bucket="corpus", Key="reports/x.json")["Body"].read())
    assert merged["segment_count"] == report["segment_count"] == 400
    (tmp_path / "hyp").write_text("\n".join(hypotheses) + "\n", encoding="utf-8")
    (tmp_path / "ref").write_text("\n".join(references) + "\n", encoding="utf-8")
    assert main(["score", str(tmp_path / "hyp"), str(tmp_path / "ref"), "--word-order", "2", "--json"]) == 0
    assert report == json.loads(capsys.readouterr().out)
