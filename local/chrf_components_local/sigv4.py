"""AWS Signature Version 4 for the API (service ``execute-api``): signing requests, and checking them the way
API Gateway's IAM authorization does (for `serve --iam` and the tests). Both use botocore's signer.

A request is accepted only when everything a signature binds holds on the receiving side: the credential scope
names this server's region and service and an acceptable day, the access key is the server's, the time is
within 15 minutes, a session token is exactly the server's (and absent when the server has none), the payload
hash is recomputed from the body that arrived (never taken from ``X-Amz-Content-SHA256``), and the signature
recomputed over the headers it names matches.
"""

from __future__ import annotations

import datetime
import hashlib
import hmac
import re
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

SERVICE = "execute-api"
AUTHORIZATION = re.compile(
    r"AWS4-HMAC-SHA256 Credential=(?P<key>[^/]+)/(?P<date>\d{8})/(?P<region>[^/]+)/(?P<service>[^/]+)/aws4_request,"
    r"\s*SignedHeaders=(?P<headers>[a-z0-9;-]+),\s*Signature=(?P<signature>[0-9a-f]{64})$"
)
MAX_SKEW = datetime.timedelta(minutes=15)
INVALID_TOKEN = "The security token included in the request is invalid"


class SignatureError(Exception):
    """A request that is not signed, or not signed with the expected credentials, scope or body; ``code`` is the
    error type AWS answers it with (``x-amzn-ErrorType``)."""

    def __init__(self, message: str, code: str = "InvalidSignatureException") -> None:
        super().__init__(message)
        self.code = code


def region_of(url: str, fallback: str | None) -> str | None:
    """The region of an execute-api URL (https://ID.execute-api.REGION.amazonaws.com/...), else ``fallback``."""
    match = re.match(r"[^.]+\.execute-api\.([a-z0-9-]+)\.amazonaws\.com", urlsplit(url).hostname or "")
    return match.group(1) if match else fallback


def sign(method: str, url: str, body: bytes, credentials: Any, region: str,
         headers: Mapping[str, str] | None = None, service: str = SERVICE) -> dict[str, str]:
    """The headers to send: ``headers`` plus Host, X-Amz-Date, Authorization (and the session token)."""
    from botocore.auth import SigV4Auth
    from botocore.awsrequest import AWSRequest

    request = AWSRequest(method=method, url=url, data=body, headers=dict(headers or {}))
    SigV4Auth(credentials, service, region).add_auth(request)
    signed = dict(request.headers.items())
    signed.setdefault("Host", urlsplit(url).netloc)  # signed from the URL; sent as is by any HTTP client
    return signed


def _signing_time(lowered: Mapping[str, str], scope_date: str, now: datetime.datetime) -> str:
    stamp = lowered.get("x-amz-date", "")
    try:
        when = datetime.datetime.strptime(stamp, "%Y%m%dT%H%M%SZ").replace(tzinfo=datetime.UTC)
    except ValueError:
        raise SignatureError("X-Amz-Date is missing or malformed", "IncompleteSignatureException") from None
    if stamp[:8] != scope_date:
        raise SignatureError("Date in Credential scope does not match YYYYMMDD from ISO-8601 version of date")
    if when < now - MAX_SKEW:
        raise SignatureError(f"Signature expired: {stamp} is now earlier than "
                             f"{(now - MAX_SKEW).strftime('%Y%m%dT%H%M%SZ')}")
    if when > now + MAX_SKEW:
        raise SignatureError(f"Signature not yet current: {stamp} is still later than "
                             f"{(now + MAX_SKEW).strftime('%Y%m%dT%H%M%SZ')}")
    return stamp


def verify(method: str, url: str, headers: Mapping[str, str], body: bytes, credentials: Any, region: str,
           service: str = SERVICE, now: datetime.datetime | None = None) -> None:
    """Raise SignatureError unless the request carries a valid SigV4 signature by ``credentials`` for
    ``service`` in ``region`` over exactly this ``body``."""
    from botocore.auth import SigV4Auth
    from botocore.awsrequest import AWSRequest
    from botocore.compat import HTTPHeaders

    lowered = {name.lower(): value for name, value in headers.items()}
    match = AUTHORIZATION.match(lowered.get("authorization", ""))
    if not match:
        raise SignatureError("Missing Authentication Token", "MissingAuthenticationTokenException")
    if match["service"] != service:
        raise SignatureError(f"Credential should be scoped to correct service: '{service}'")
    if match["region"] != region:
        raise SignatureError(f"Credential should be scoped to a valid region: '{region}'")
    if not hmac.compare_digest(match["key"].encode(), credentials.access_key.encode()):
        raise SignatureError(INVALID_TOKEN, "UnrecognizedClientException")
    token, expected_token = lowered.get("x-amz-security-token"), getattr(credentials, "token", None)
    if (token is None) != (expected_token is None) or (
            token is not None and not hmac.compare_digest(token.encode(), str(expected_token).encode())):
        raise SignatureError(INVALID_TOKEN, "UnrecognizedClientException")
    stamp = _signing_time(lowered, match["date"], now or datetime.datetime.now(datetime.UTC))
    payload_hash = hashlib.sha256(body).hexdigest()
    declared_hash = lowered.get("x-amz-content-sha256")
    if declared_hash is not None and declared_hash != payload_hash:
        raise SignatureError("X-Amz-Content-SHA256 does not match the body received (UNSIGNED-PAYLOAD is not "
                             "accepted)" if declared_hash == "UNSIGNED-PAYLOAD" else
                             "X-Amz-Content-SHA256 does not match the body received")
    signed = match["headers"].split(";")
    if "host" not in signed or any(name not in lowered for name in signed):
        raise SignatureError("The request signature does not cover its headers")

    class ReceivedSignature(SigV4Auth):  # type: ignore[misc]
        """botocore's canonical request over exactly the headers the client signed, and the body received."""

        def headers_to_sign(self, request: Any) -> Any:
            chosen = HTTPHeaders()
            for name in signed:
                chosen[name] = lowered[name]
            return chosen

        def payload(self, request: Any) -> str:
            return payload_hash

    request = AWSRequest(method=method, url=url, data=body, headers={})
    request.context["timestamp"] = stamp
    signer = ReceivedSignature(credentials, service, region)
    expected = signer.signature(signer.string_to_sign(request, signer.canonical_request(request)), request)
    if not hmac.compare_digest(expected, match["signature"]):
        raise SignatureError("The request signature we calculated does not match the signature you provided")
