"""A stand-in for what Step Functions does around our functions in the corpus pipeline, for tests.

It follows the definition in statemachine/corpus_pipeline.asl.json: read the JSON Lines object from S3, apply
the ItemSelector ({line, item}), batch like ItemBatcher (MaxItemsPerBatch, MaxInputBytesPerBatch over the
serialized items), run the child workflow per batch (ScoreBatch, with InvalidInputError caught into
{"invalid_input": {Error, Cause}}), and write results the way ResultWriter does (a manifest.json plus
SUCCEEDED_n.json files of execution records whose Output is a JSON string).
"""

import json
import uuid

from aws_stand_ins import MAP_RUNS

DEFINITION_PATH = "statemachine/corpus_pipeline.asl.json"


def read_jsonl(s3, bucket, key):
    text = s3.get_object(Bucket=bucket, Key=key)["Body"].read().decode("utf-8")
    return [json.loads(line) for line in text.split("\n") if line.strip()]  # JSON Lines: "\n" only


def batches(items, max_items, max_bytes):
    batch, size = [], 0
    for index, item in enumerate(items):
        selected = {"line": index, "item": item}
        item_size = len(json.dumps(selected, ensure_ascii=False).encode("utf-8", "surrogatepass"))
        if batch and (len(batch) == max_items or size + item_size > max_bytes):
            yield batch
            batch, size = [], 0
        batch.append(selected)
        size += item_size
    if batch:
        yield batch


def run_child(score_batch, context, batch, settings):
    try:
        return score_batch({"BatchInput": {"settings": settings}, "Items": batch}, context)
    except Exception as error:
        if type(error).__name__ != "InvalidInputError":
            raise
        cause = {"errorMessage": str(error), "errorType": "InvalidInputError", "requestId": "local", "stackTrace": []}
        return {"invalid_input": {"Error": "InvalidInputError", "Cause": json.dumps(cause)}}


def run_map(s3, score_batch, context, execution_input, results_bucket, results_prefix, definition):
    """Run the Map state; returns its output as ResultPath puts it ($.map_result)."""
    batcher = definition["States"]["ScoreSegments"]["ItemBatcher"]
    items = read_jsonl(s3, execution_input["input"]["bucket"], execution_input["input"]["key"])
    outputs = [
        run_child(score_batch, context, batch, execution_input["settings"])
        for batch in batches(items, batcher["MaxItemsPerBatch"], batcher["MaxInputBytesPerBatch"])
    ]
    run_id = str(uuid.uuid4())
    map_run_arn = f"arn:aws:states:us-east-1:123456789012:mapRun:corpus-pipeline/ScoreSegments:{run_id}"
    MAP_RUNS[map_run_arn] = {"mapRunArn": map_run_arn, "status": "SUCCEEDED",
                             "itemCounts": {"total": len(items), "succeeded": len(items), "failed": 0,
                                            "pending": 0, "running": 0, "timedOut": 0, "aborted": 0}}
    prefix = f"{results_prefix}/{run_id}"
    records = [
        {"ExecutionArn": f"arn:aws:states:us-east-1:123456789012:execution:child:{i}", "Status": "SUCCEEDED",
         "Input": "{}", "Output": json.dumps(output)}
        for i, output in enumerate(outputs)
    ]
    files = {"SUCCEEDED": [], "FAILED": [], "PENDING": []}
    for part, start in enumerate(range(0, len(records), 3)):  # several files, as ResultWriter may write
        key = f"{prefix}/SUCCEEDED_{part}.json"
        s3.put_object(Bucket=results_bucket, Key=key, Body=json.dumps(records[start : start + 3]).encode())
        files["SUCCEEDED"].append({"Key": key, "Size": 1})
    manifest = {"DestinationBucket": results_bucket, "MapRunArn": map_run_arn, "ResultFiles": files}
    s3.put_object(Bucket=results_bucket, Key=f"{prefix}/manifest.json", Body=json.dumps(manifest).encode())
    return {"MapRunArn": manifest["MapRunArn"],
            "ResultWriterDetails": {"Bucket": results_bucket, "Key": f"{prefix}/manifest.json"}}
