"""`serve` keeps each function's concurrency its own, as Lambda's is per function: a function's invocations run in
its own execution environments (--workers of them), and its backlog waits in its own queue, holding no server
thread, so that another function's requests are answered meanwhile. Before, one pool of server threads served every
function: slow invocations of one held the threads another function's requests waited for."""

import json
import threading
import time
import urllib.request

import boto3
import pytest
from botocore.config import Config
from functions_on_disk import function_folder, serving

TEMPLATE = """
Resources:
  SlowFunction:
    Type: AWS::Serverless::Function
    Properties:
      CodeUri: code/
      Handler: functions.slow
      Timeout: 60
      Events:
        Slow:
          Type: HttpApi
          Properties:
            Path: /slow
            Method: post
  FastFunction:
    Type: AWS::Serverless::Function
    Properties:
      CodeUri: code/
      Handler: functions.fast
      Timeout: 60
"""
HANDLERS = """
import time

def slow(event, context):
    time.sleep(3)
    return {"statusCode": 200, "body": "slow"} if "requestContext" in event else {"slow": True}

def fast(event, context):
    return {"fast": True}
"""
WORKERS = 2


@pytest.fixture(scope="module")
def endpoint(tmp_path_factory):
    template = function_folder(tmp_path_factory.mktemp("concurrency"), TEMPLATE, {"functions": HANDLERS})
    with serving(template, workers=WORKERS, warm=()) as server:
        yield f"http://127.0.0.1:{server.server_address[1]}"


def test_a_functions_backlog_waits_in_its_own_queue_while_another_function_is_answered(endpoint):
    lambda_client = boto3.client("lambda", endpoint_url=endpoint, region_name="us-east-1", aws_access_key_id="x",
                                 aws_secret_access_key="x",
                                 config=Config(retries={"max_attempts": 1}, read_timeout=60, max_pool_connections=20))
    answers, finished = [], []

    def slow_invocation():
        answers.append(json.loads(lambda_client.invoke(FunctionName="SlowFunction", Payload=b"{}")["Payload"].read()))
        finished.append(time.monotonic())

    def slow_request():
        request = urllib.request.Request(f"{endpoint}/slow", data=b"{}", method="POST")
        with urllib.request.urlopen(request, timeout=60) as response:
            answers.append(response.read().decode())
        finished.append(time.monotonic())

    threads = [threading.Thread(target=call) for call in [slow_invocation, slow_request] * 3]  # 3 rounds of 2
    for thread in threads:
        thread.start()
    time.sleep(0.5)  # all six have arrived: two running, four waiting for an environment
    fast = []
    for _ in range(5):
        answer = lambda_client.invoke(FunctionName="FastFunction", Payload=b"{}")
        fast.append(json.loads(answer["Payload"].read()))
    fast_done = time.monotonic()
    for thread in threads:
        thread.join(60)
    assert fast == [{"fast": True}] * 5
    assert sorted(answers, key=str) == sorted([{"slow": True}] * 3 + ["slow"] * 3, key=str)  # every one ran
    assert fast_done < min(finished)  # answered before the first slow invocation ended
