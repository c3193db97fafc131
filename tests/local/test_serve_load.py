"""`chrf-components serve` under load, slow clients and signals: bounded loops on loopback only.

Figures pinned here (and quoted in the README): 200 concurrent keep-alive clients x 5 requests with no reset and
every answer right; 40 slowloris connections while 20 normal requests each succeed within 2 s; a keep-alive
request within 2x the time of a request on a new connection; SIGTERM, SIGINT and a terminal's Ctrl-C stop the
server and every worker within 5 s with no traceback.
"""

import http.client
import json
import os
import signal
import socket
import statistics
import threading
import time

import pytest
from processes import alive, children_of, serving_process
from support import CONTRACT

EXECUTE = CONTRACT["execute_url"]
EXAMPLE = CONTRACT["examples"][0]
BODY = json.dumps(EXAMPLE["input"])


def post(connection):
    connection.request("POST", EXECUTE, body=BODY, headers={"Content-Type": "application/json"})
    response = connection.getresponse()
    return response.status, json.loads(response.read())


def test_200_concurrent_keep_alive_clients_get_every_answer_right_with_no_reset(running):
    port = running.server_address[1]
    start = threading.Barrier(200, timeout=30)
    failures, answers = [], []

    def client():
        try:
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
            start.wait()
            for _ in range(5):
                answers.append(post(connection))
            connection.close()
        except Exception as error:  # a reset, a timeout, a broken barrier: all count
            failures.append(repr(error))

    threads = [threading.Thread(target=client) for _ in range(200)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert failures == []
    assert len(answers) == 1000 and all(answer == (200, EXAMPLE["output"]) for answer in answers)


def test_40_slowloris_connections_do_not_delay_20_normal_requests(running):
    port = running.server_address[1]
    stop = threading.Event()
    slow = []
    for _ in range(40):
        connection = socket.create_connection(("127.0.0.1", port), timeout=10)
        connection.sendall(f"POST {EXECUTE} HTTP/1.1\r\nHost: x\r\n".encode())
        slow.append(connection)

    def trickle():  # one more header line per connection every half second, until the test ends
        for line in range(100):
            if stop.wait(0.5):
                return
            for connection in slow:
                connection.sendall(f"X-Slow-{line}: still coming\r\n".encode())

    trickler = threading.Thread(target=trickle, daemon=True)
    trickler.start()
    try:
        durations = []
        for _ in range(20):
            started = time.monotonic()
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
            assert post(connection) == (200, EXAMPLE["output"])
            connection.close()
            durations.append(time.monotonic() - started)
        assert max(durations) < 2.0, durations
    finally:
        stop.set()
        trickler.join(5)
        for connection in slow:
            connection.close()


def test_a_keep_alive_request_takes_at_most_twice_a_new_connections_request(running):
    port = running.server_address[1]
    for _ in range(10):  # warm both workers
        post(http.client.HTTPConnection("127.0.0.1", port, timeout=10))
    fresh, kept = [], []
    kept_connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    post(kept_connection)
    for _ in range(40):  # interleaved, so both see the same machine
        started = time.perf_counter()
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        post(connection)
        connection.close()
        fresh.append(time.perf_counter() - started)
        started = time.perf_counter()
        post(kept_connection)
        kept.append(time.perf_counter() - started)
    kept_connection.close()
    assert statistics.median(kept) <= 2 * statistics.median(fresh), (statistics.median(kept), statistics.median(fresh))


@pytest.mark.parametrize("how", ["SIGTERM", "SIGINT", "Ctrl-C to the process group"])
def test_a_signal_stops_the_server_and_every_worker_within_5_seconds_without_a_traceback(how, tmp_path):
    with serving_process(tmp_path / "stderr", "--workers", "2") as (process, port):
        assert post(http.client.HTTPConnection("127.0.0.1", port, timeout=10)) == (200, EXAMPLE["output"])
        descendants = children_of(process.pid)
        assert len(descendants) >= 2  # the workers (and multiprocessing's resource tracker)
        if how == "SIGTERM":
            process.send_signal(signal.SIGTERM)
        elif how == "SIGINT":
            process.send_signal(signal.SIGINT)
        else:
            os.killpg(process.pid, signal.SIGINT)
        process.wait(5)
        deadline = time.monotonic() + 5
        while any(alive(pid) for pid in descendants) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert [pid for pid in descendants if alive(pid)] == []
        output = (tmp_path / "stderr").read_text(encoding="utf-8")
        assert "Traceback" not in output and "Error" not in output, output


def test_sigterm_answers_every_request_already_received_before_the_server_exits(tmp_path):
    """Issue 57 item 3: on 72c9660, SIGTERM with 200 invocations queued left 136 clients with no HTTP response. Now
    the server stops accepting, stops the functions (in flight and queued invocations are answered at once with
    Lambda's error, Runtime.ExitError) and writes every answer before it exits."""
    import random

    import boto3
    from botocore.config import Config
    from botocore.exceptions import EndpointConnectionError

    rng = random.Random(1)
    words = [" ".join("".join(rng.choice("abcdefghij") for _ in range(rng.randint(1, 8))) for _ in range(6000))[:30000]
             for _ in range(2)]
    heavy = json.dumps({"hypotheses": [words[0]], "references": [words[1]], "word_order": 2})  # valid, a few ms
    with serving_process(tmp_path / "stderr", "--workers", "1") as (process, port):
        client = boto3.client("lambda", endpoint_url=f"http://127.0.0.1:{port}", region_name="us-east-1",
                              aws_access_key_id="x", aws_secret_access_key="y",
                              config=Config(retries={"mode": "standard", "max_attempts": 1}, read_timeout=60,
                                            max_pool_connections=220))  # one try: a dropped request shows
        outcomes = []

        def call():
            try:
                response = client.invoke(FunctionName="ChrfComponentsFunction", Payload=heavy)
                response["Payload"].read()
                outcomes.append(response.get("FunctionError", "answered"))
            except EndpointConnectionError:  # refused: not received (the server had stopped accepting)
                outcomes.append("not received")
            except Exception as error:  # received, and no answer: what must not happen
                outcomes.append(f"no answer: {type(error).__name__}")

        threads = [threading.Thread(target=call) for _ in range(200)]
        for thread in threads:
            thread.start()
        while len(outcomes) < 5:  # the single environment is busy; the rest wait in its queue
            time.sleep(0.005)
        process.send_signal(signal.SIGTERM)
        for thread in threads:
            thread.join(60)
        process.wait(15)
    dropped = [outcome for outcome in outcomes if outcome.startswith("no answer")]
    assert len(outcomes) == 200 and outcomes.count("not received") < 100 and not dropped, outcomes
    assert "answered" in outcomes and "Unhandled" in outcomes  # the queued ones: Lambda's error, not silence
