"""`chrf-components serve`: real HTTP over loopback, and schemathesis against the OpenAPI document."""

import http.client
import json
import threading

import pytest
import schemathesis
from chrf_components_cli.server import make_server
from hypothesis import HealthCheck, settings
from schemathesis.specs.openapi.checks import positive_data_acceptance
from support import CONTRACT, ROOT

OPENAPI_PATH = ROOT / "spec" / "openapi.json"
OPENAPI = json.loads(OPENAPI_PATH.read_text(encoding="utf-8"))
EXECUTE = CONTRACT["execute_url"]
schema = schemathesis.openapi.from_path(str(OPENAPI_PATH))


@pytest.fixture(scope="module")
def base_url():
    server = make_server("127.0.0.1", 0)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def request(base_url, method, path, body=None, headers=None):
    host, port = base_url.removeprefix("http://").split(":")
    connection = http.client.HTTPConnection(host, int(port), timeout=30)
    connection.request(method, path, body=body, headers=headers or {"Content-Type": "application/json"})
    response = connection.getresponse()
    data = response.read()
    connection.close()
    return response.status, dict(response.getheaders()), json.loads(data)


def test_serve_answers_a_valid_request_with_the_contract_output(base_url):
    example = CONTRACT["examples"][0]
    status, headers, body = request(base_url, "POST", EXECUTE, json.dumps(example["input"]))
    assert status == 200 and headers["Content-Type"] == "application/json" and body == example["output"]


def test_serve_answers_invalid_input_with_400_and_the_error_envelope(base_url):
    status, _, body = request(base_url, "POST", EXECUTE, '{"hypotheses": ["a"], "references": []}')
    assert status == 400
    assert body == {"error": {"code": "invalid_input", "field": "references",
                              "message": "references: at least 1 segment, got 0"}}
    status, _, body = request(base_url, "POST", EXECUTE, b"\xff\xfe not utf-8")
    assert status == 400 and body["error"]["message"].startswith("body: not valid UTF-8")


def test_serve_answers_unknown_paths_with_404_and_other_methods_with_405(base_url):
    status, _, body = request(base_url, "POST", "/v1/tools/chrf-components/versions/2.0.0/execute", "{}")
    assert status == 404 and body["error"]["code"] == "not_found"
    status, headers, body = request(base_url, "GET", EXECUTE)
    assert status == 405 and headers["Allow"] == "POST"


def test_openapi_document_carries_the_contracts_schemas_unchanged():
    assert OPENAPI["openapi"].startswith("3.1")
    assert OPENAPI["components"]["schemas"]["Request"] == CONTRACT["input_schema"]
    assert OPENAPI["components"]["schemas"]["Output"] == CONTRACT["output_schema"]
    assert list(OPENAPI["paths"]) == [EXECUTE]


@schema.parametrize()
@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
def test_serve_conforms_to_the_openapi_document(case, base_url):
    # Every check but "schema-valid data is accepted": the contract has rules JSON Schema cannot state (equal
    # segment counts, total UTF-8 size, lone surrogates, char_order and word_order not both 0), and the document
    # declares the 400 they produce. No 5xx, and every response matches its declared schema.
    case.call_and_validate(base_url=base_url, excluded_checks=[positive_data_acceptance])
