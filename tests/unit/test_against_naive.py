"""The layer against an independent naive implementation, over generated requests in many scripts."""

import copy
import json

import chrf_core
from hypothesis import HealthCheck, given, settings
from jsonschema import Draft202012Validator
from naive_chrf import naive_score
from support import CONTRACT, requests_strategy

OUTPUT_VALIDATOR = Draft202012Validator(CONTRACT["output_schema"])


@settings(max_examples=2000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(requests_strategy())
def test_layer_equals_naive_implementation_on_generated_unicode_requests(request):
    original = copy.deepcopy(request)
    output = chrf_core.score(request)
    assert request == original, "the request was mutated"
    assert json.dumps(output) == json.dumps(naive_score(request))
    OUTPUT_VALIDATOR.validate(output)


@settings(max_examples=300, deadline=None)
@given(requests_strategy(max_segments=40))
def test_layer_equals_naive_implementation_on_longer_requests(request):
    assert chrf_core.score(request) == naive_score(request)
