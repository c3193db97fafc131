"""A Distributed Map over a large object on `serve`'s own S3 reads its items in a process of its own
(states.ReaderProcess): the same batches, byte for byte, and the same errors as the runner's own thread reading them,
and the process ends with the Map run, however it ends.

Issue 65: `pipeline run --local` on 10^6 lines took 33 s (4.8x `score`) with the runner's process busy 28 s of it,
half of that reading, decoding, selecting and encoding items while the functions' workers waited. With the reader
beside it: 21 s (make bench, table 10).

ItemReader with JSONL, ItemSelector and ItemBatcher as AWS documents them:
https://docs.aws.amazon.com/step-functions/latest/dg/input-output-itemreader.html,
https://docs.aws.amazon.com/step-functions/latest/dg/input-output-itemselector.html,
https://docs.aws.amazon.com/step-functions/latest/dg/input-output-itembatcher.html.
"""

import json
import multiprocessing
import threading

import boto3
import pytest
from conftest import serving_with

from chrf_components_local import distributed_map, states

KEY, SECRET, REGION, BUCKET = "AKIDEXAMPLE", "the-secret", "eu-west-3", "corpusbucket"
LAMBDA = "arn:aws:states:::lambda:invoke"


@pytest.fixture(scope="module")
def s3():
    with pytest.MonkeyPatch.context() as patch:
        running, url = serving_with(patch, False, REGION, KEY, SECRET)
        yield boto3.client("s3", endpoint_url=url, region_name=REGION, aws_access_key_id=KEY,
                           aws_secret_access_key=SECRET)
    running.shutdown()
    running.server_close()


def definition():
    return {"StartAt": "Items", "States": {"Items": {
        "Type": "Map", "End": True, "Label": "Items",
        "ItemReader": {"Resource": "arn:aws:states:::s3:getObject", "ReaderConfig": {"InputType": "JSONL"},
                       "Parameters": {"Bucket.$": "$.bucket", "Key.$": "$.key"}},
        "ItemSelector": {"line.$": "$$.Map.Item.Index", "item.$": "$$.Map.Item.Value",
                         "run.$": "$$.Execution.Name"},
        "ItemBatcher": {"MaxItemsPerBatch": 50, "MaxInputBytesPerBatch": 4096,
                        "BatchInput": {"settings.$": "$.settings"}},
        "ItemProcessor": {"ProcessorConfig": {"Mode": "DISTRIBUTED", "ExecutionType": "EXPRESS"},
                          "StartAt": "Score", "States": {"Score": {
                              "Type": "Task", "Resource": LAMBDA, "End": True,
                              "Parameters": {"FunctionName": "F", "Payload.$": "$"}}}}}}}


def run(s3, monkeypatch, key, in_process, invoke=None):
    """One execution of the Map over ``key``: its end, the payloads its tasks were sent, and whether a reader
    process read the items."""
    monkeypatch.setattr(distributed_map, "READER_PROCESS_BYTES", 1 if in_process else 1 << 40)
    started = []
    start = states.ReaderProcess.start

    def recorded(*args):
        process = start(*args)
        started.append(process is not None)
        return process

    monkeypatch.setattr(states.ReaderProcess, "start", recorded)
    sent, lock = [], threading.Lock()

    def echo(function, payload):
        with lock:
            sent.append(payload)
        return states.LambdaAnswer(b'{"ok":1}', None, "request")

    machine = states.StateMachine(definition(), "reader", states.Services(invoke or echo, s3, states.MapRuns(), 2))
    execution = machine.execute({"bucket": BUCKET, "key": key, "settings": {"beta": 2}}, "same-name")
    return execution, sorted(sent), started == [True]


def put_lines(s3, key, lines):
    s3.put_object(Bucket=BUCKET, Key=key, Body="\n".join(lines).encode("utf-8"))


def test_a_reader_process_sends_the_same_batches_byte_for_byte(s3, monkeypatch):
    lines = [json.dumps({"hypothesis": f"the cat {k} é中😀", "reference": "the \"cat\"\\\n", "k": k / 3})
             for k in range(3000)]
    lines[17] = ""  # a blank line holds no item
    put_lines(s3, "reader/items.jsonl", lines)
    alone, alone_sent, used = run(s3, monkeypatch, "reader/items.jsonl", True)
    assert used and alone.status == "SUCCEEDED", alone
    here, here_sent, used_here = run(s3, monkeypatch, "reader/items.jsonl", False)
    assert not used_here and here.status == "SUCCEEDED"
    assert alone_sent == here_sent and len(alone_sent) > 3000 // 50
    items = [item for payload in alone_sent for item in json.loads(payload)["Items"]]
    assert sorted(item["line"] for item in items) == list(range(2999))
    assert all(item["run"] == "same-name" for item in items)


@pytest.mark.parametrize(("line", "error", "cause"), [
    ("{not json", "States.ItemReaderFailed", "line 2501: not one JSON value in UTF-8"),
    (json.dumps({"text": "x" * 5000}), "States.ItemReaderFailed", "line 2501: a batch of this item alone takes"),
])
def test_a_reader_process_fails_the_map_run_as_the_runner_does(s3, monkeypatch, line, error, cause):
    lines = [json.dumps({"k": k}) for k in range(4000)]
    lines[2500] = line
    put_lines(s3, "reader/bad.jsonl", lines)
    alone, _, used = run(s3, monkeypatch, "reader/bad.jsonl", True)
    here, _, _ = run(s3, monkeypatch, "reader/bad.jsonl", False)
    assert used and alone.status == here.status == "FAILED"
    assert (alone.error, alone.cause) == (here.error, here.cause)
    assert alone.error == error and alone.cause.startswith(cause), alone.cause


def test_a_reader_process_ends_with_a_map_run_that_fails_before_it_read_everything(s3, monkeypatch):
    put_lines(s3, "reader/long.jsonl", [json.dumps({"k": k, "pad": "p" * 200}) for k in range(200_000)])

    def failing(function, payload):
        raise states.StatesError("Lambda.Unknown", "the function failed")

    execution, _, used = run(s3, monkeypatch, "reader/long.jsonl", True, failing)
    assert used and (execution.status, execution.error) == ("FAILED", "States.ExceedToleratedFailureThreshold")
    assert not [child for child in multiprocessing.active_children() if child.name == "chrf-map-reader"]


def test_a_reader_process_answers_a_missing_object_as_the_runner_does(s3, monkeypatch):
    alone, _, used = run(s3, monkeypatch, "reader/none.jsonl", True)
    assert not used  # the runner's own GET answers it
    assert alone.error == "States.ItemReaderFailed" and "NoSuchKey" in alone.cause
