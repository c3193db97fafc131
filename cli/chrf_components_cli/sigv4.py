"""AWS Signature Version 4 for the API (service ``execute-api``): signing requests, and checking them the way
API Gateway's IAM authorization does (for `serve --iam` and the tests). Both use botocore's signer."""

from __future__ import annotations

import datetime
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


class SignatureError(Exception):
    """A request that is not signed, or not signed with the expected credentials."""


def region_of(url: str, fallback: str | None) -> str | None:
    """The region of an execute-api URL (https://ID.execute-api.REGION.amazonaws.com/...), else ``fallback``."""
    match = re.match(r"[^.]+\.execute-api\.([a-z0-9-]+)\.amazonaws\.com", urlsplit(url).hostname or "")
    return match.group(1) if match else fallback


def sign(method: str, url: str, body: bytes, credentials: Any, region: str,
         headers: Mapping[str, str] | None = None) -> dict[str, str]:
    """The headers to send: ``headers`` plus Host, X-Amz-Date, Authorization (and the session token)."""
    from botocore.auth import SigV4Auth
    from botocore.awsrequest import AWSRequest

    request = AWSRequest(method=method, url=url, data=body, headers=dict(headers or {}))
    SigV4Auth(credentials, SERVICE, region).add_auth(request)
    signed = dict(request.headers.items())
    signed.setdefault("Host", urlsplit(url).netloc)  # signed from the URL; sent as is by any HTTP client
    return signed


def verify(method: str, url: str, headers: Mapping[str, str], body: bytes, credentials: Any) -> None:
    """Raise SignatureError unless the request carries a valid SigV4 signature by ``credentials``."""
    from botocore.auth import SigV4Auth
    from botocore.awsrequest import AWSRequest

    lowered = {name.lower(): value for name, value in headers.items()}
    match = AUTHORIZATION.match(lowered.get("authorization", ""))
    if not match:
        raise SignatureError("Missing Authentication Token")
    if match["service"] != SERVICE or match["key"] != credentials.access_key:
        raise SignatureError("The security token included in the request is invalid")
    stamp = lowered.get("x-amz-date", "")
    try:
        when = datetime.datetime.strptime(stamp, "%Y%m%dT%H%M%SZ").replace(tzinfo=datetime.UTC)
    except ValueError:
        raise SignatureError("X-Amz-Date is missing or malformed") from None
    if abs(datetime.datetime.now(datetime.UTC) - when) > MAX_SKEW or stamp[:8] != match["date"]:
        raise SignatureError("Signature expired")
    signed = match["headers"].split(";")
    if "host" not in signed or any(name not in lowered for name in signed):
        raise SignatureError("The request signature does not cover its headers")
    request = AWSRequest(method=method, url=url, data=body, headers={name: lowered[name] for name in signed})
    request.context["timestamp"] = stamp
    signer = SigV4Auth(credentials, SERVICE, match["region"])
    expected = signer.signature(signer.string_to_sign(request, signer.canonical_request(request)), request)
    if not hmac.compare_digest(expected, match["signature"]):
        raise SignatureError("The request signature we calculated does not match the signature you provided")
