"""awslambdaric, with a function error's payload as SAM CLI recognises it.

awslambdaric 4 adds ``requestId`` to the payload of a function error; SAM CLI's start-lambda then does not recognise
the payload as an error and answers without ``X-Amz-Function-Error``, where AWS answers ``Unhandled``. Dropping the
key restores what AWS's callers see (``errorMessage``, ``errorType``, ``stackTrace``).
"""

import sys

from awslambdaric import __main__, bootstrap

make_error = bootstrap.make_error


def without_request_id(*args, **kwargs):  # type: ignore[no-untyped-def]
    error = make_error(*args, **kwargs)
    error.pop("requestId", None)
    return error


bootstrap.make_error = without_request_id
__main__.main(sys.argv)
