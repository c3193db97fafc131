"""Creates the evaluation state machine (evaluation.asl.json) and runs it on two systems' outputs: boto3 as you would
use it against AWS, pointed at `chrf-components serve` by AWS_ENDPOINT_URL alone.

    chrf-components serve &                        # from the project folder, or anywhere from a wheel
    AWS_ENDPOINT_URL=http://127.0.0.1:3000 python examples/evaluation-pipeline/run_evaluation.py \
        tests/data/popovic/example.hyp.en examples/lowercased.hyp.en tests/data/popovic/example.ref.en

Against AWS, leave AWS_ENDPOINT_URL unset and give --role-arn a role that may invoke the function (and name the
deployed function in the definition).
"""

from __future__ import annotations

import argparse
import json
import pathlib
import time

import boto3

HERE = pathlib.Path(__file__).parent
LOCAL_ROLE = "arn:aws:iam::123456789012:role/local"


def lines(path: str) -> list[str]:
    return pathlib.Path(path).read_text(encoding="utf-8").splitlines()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("baseline"), parser.add_argument("candidate"), parser.add_argument("references")
    parser.add_argument("--role-arn", default=LOCAL_ROLE)
    parser.add_argument("--name", default="chrf-evaluation")
    arguments = parser.parse_args()

    session = boto3.session.Session()
    sfn = session.client("stepfunctions", region_name=session.region_name or "us-east-1")
    definition = (HERE / "evaluation.asl.json").read_text(encoding="utf-8")
    machine = sfn.create_state_machine(name=arguments.name, definition=definition, roleArn=arguments.role_arn)
    execution = sfn.start_execution(stateMachineArn=machine["stateMachineArn"], input=json.dumps({
        "systems": {"baseline": lines(arguments.baseline), "candidate": lines(arguments.candidate)},
        "references": lines(arguments.references), "word_order": 2}))
    while (described := sfn.describe_execution(executionArn=execution["executionArn"]))["status"] == "RUNNING":
        time.sleep(0.2)
    if described["status"] != "SUCCEEDED":
        raise SystemExit(f"{described['status']}: {described.get('error')}: {described.get('cause')}")
    print(json.loads(described["output"])["summary"])
    events = sfn.get_paginator("get_execution_history").paginate(executionArn=execution["executionArn"],
                                                                 includeExecutionData=False)
    print(" -> ".join(event["type"] for page in events for event in page["events"]
                      if event["type"].endswith("StateEntered")))


if __name__ == "__main__":
    main()
