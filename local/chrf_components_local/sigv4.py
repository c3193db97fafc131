"""AWS Signature Version 4 for the API (service ``execute-api``): signing requests, and checking them the way
API Gateway's IAM authorization does (for `serve --iam` and the tests). Both use botocore's signer.

A request is accepted only when everything a signature binds holds on the receiving side: the credential scope
names this server's region and service and an acceptable day, the access key is the server's, the time is
within 15 minutes, a session token is exactly the server's (and absent when the server has none), the payload
hash is recomputed from the body that arrived (never taken from ``X-Amz-Content-SHA256``), every ``x-amz-*``
header sent is among those signed (as AWS requires: an unsigned one could change what the request does), and the
signature recomputed over the headers it names matches. A presigned URL (the signature in the query: SigV4's
``X-Amz-Signature``, or S3's SigV2 ``AWSAccessKeyId``/``Signature``/``Expires``, boto3's default form for S3) is
checked the same way, until it expires.
"""

from __future__ import annotations

import datetime
import hashlib
import hmac
import re
from collections.abc import Mapping
from typing import Any
from urllib.parse import parse_qsl, urlsplit

SERVICE = "execute-api"
AUTHORIZATION = re.compile(
    r"AWS4-HMAC-SHA256 Credential=(?P<key>[^/]+)/(?P<date>\d{8})/(?P<region>[^/]+)/(?P<service>[^/]+)/aws4_request,"
    r"\s*SignedHeaders=(?P<headers>[a-z0-9;-]+),\s*Signature=(?P<signature>[0-9a-f]{64})$"
)
CREDENTIAL = re.compile(r"(?P<key>[^/]+)/(?P<date>\d{8})/(?P<region>[^/]+)/(?P<service>[^/]+)/aws4_request$")
MAX_SKEW = datetime.timedelta(minutes=15)
INVALID_TOKEN = "The security token included in the request is invalid"


class SignatureError(Exception):
    """A request that is not signed, or not signed with the expected credentials, scope or body; ``code`` is the
    error type AWS answers it with (``x-amzn-ErrorType``)."""

    def __init__(self, message: str, code: str = "InvalidSignatureException", s3_code: str | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.s3_code = s3_code  # S3's own name for it, where S3 answers with another than the one code maps to


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
           service: str = SERVICE, now: datetime.datetime | None = None, chunks: Any = None) -> None:
    """Raise SignatureError unless the request carries a valid SigV4 signature by ``credentials`` for
    ``service`` in ``region`` over exactly this ``body`` (in its Authorization header, or a presigned URL's
    query: :func:`verify_presigned`)."""
    lowered = {name.lower(): value for name, value in headers.items()}
    if "authorization" not in lowered and presigned(urlsplit(url).query):
        verify_presigned(method, url, headers, credentials, region, service, now)
        return
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
    if chunks is not None and declared_hash in STREAMING:  # the seed signature is over the literal, AWS's rule
        signed = match["headers"].split(";")
        _check_signed_headers(signed, lowered)
        _check_signature(method, url, lowered, signed, declared_hash, stamp, match["signature"], credentials, region,
                         service)
        if declared_hash != "STREAMING-UNSIGNED-PAYLOAD-TRAILER":
            _check_chunks(chunks, match["signature"], stamp, credentials, region, service)
        return
    if declared_hash is not None and declared_hash != payload_hash:
        raise SignatureError("X-Amz-Content-SHA256 does not match the body received (UNSIGNED-PAYLOAD is not "
                             "accepted)" if declared_hash == "UNSIGNED-PAYLOAD" else
                             "X-Amz-Content-SHA256 does not match the body received")
    signed = match["headers"].split(";")
    _check_signed_headers(signed, lowered)
    _check_signature(method, url, lowered, signed, payload_hash, stamp, match["signature"], credentials, region,
                     service)


STREAMING = ("STREAMING-AWS4-HMAC-SHA256-PAYLOAD", "STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER",
             "STREAMING-UNSIGNED-PAYLOAD-TRAILER")  # aws-chunked bodies (s3_front decodes them)
EMPTY_HASH = hashlib.sha256(b"").hexdigest()


def _check_chunks(chunks: Any, seed: str, stamp: str, credentials: Any, region: str, service: str) -> None:
    """Each chunk's signature of a signed aws-chunked body, chained from the seed signature, and the trailer's
    (https://docs.aws.amazon.com/AmazonS3/latest/API/sigv4-streaming.html,
    https://docs.aws.amazon.com/AmazonS3/latest/API/sigv4-streaming-trailers.html)."""
    from botocore.auth import SigV4Auth
    from botocore.awsrequest import AWSRequest

    signer = SigV4Auth(credentials, service, region)
    request = AWSRequest(method="PUT", url="http://localhost/", data=b"", headers={})
    request.context["timestamp"] = stamp
    scope = f"{stamp[:8]}/{region}/{service}/aws4_request"
    previous = seed
    for given, data in chunks.signatures:
        expected = signer.signature("\n".join(["AWS4-HMAC-SHA256-PAYLOAD", stamp, scope, previous, EMPTY_HASH,
                                               hashlib.sha256(data).hexdigest()]), request)
        if not hmac.compare_digest(expected, given):
            raise SignatureError("The request signature we calculated does not match the signature you provided "
                                 "(a chunk of the aws-chunked body)")
        previous = given
    if chunks.trailers or chunks.trailer_signature is not None:
        trailer = "".join(f"{name}:{value}\n" for name, value in chunks.trailers.items())
        expected = signer.signature("\n".join(["AWS4-HMAC-SHA256-TRAILER", stamp, scope, previous,
                                               hashlib.sha256(trailer.encode()).hexdigest()]), request)
        if not hmac.compare_digest(expected, chunks.trailer_signature or ""):
            raise SignatureError("The request signature we calculated does not match the signature you provided "
                                 "(the aws-chunked body's trailer)")


def _check_signed_headers(signed: list[str], lowered: Mapping[str, str]) -> None:
    """The signed headers are there, Host among them, and every x-amz-* header sent is signed (AWS's rule: "any
    x-amz-* headers that you plan to add to the request" are signed headers,
    https://docs.aws.amazon.com/AmazonS3/latest/API/sig-v4-header-based-auth.html)."""
    if "host" not in signed or any(name not in lowered for name in signed):
        raise SignatureError("The request signature does not cover its headers")
    unsigned = sorted(name for name in lowered if name.startswith("x-amz-") and name not in signed)
    if unsigned:
        raise SignatureError(f"There were headers present in the request which were not signed: "
                             f"{', '.join(unsigned)}", s3_code="AccessDenied")


def _check_signature(method: str, url: str, lowered: Mapping[str, str], signed: list[str], payload_hash: str,
                     stamp: str, signature: str, credentials: Any, region: str, service: str) -> None:
    """The SigV4 signature recomputed with botocore over exactly the headers the client signed (and the URL's
    query, a presigned URL's own parameters included), matches the one given."""
    from botocore.auth import SigV4Auth
    from botocore.awsrequest import AWSRequest
    from botocore.compat import HTTPHeaders

    class ReceivedSignature(SigV4Auth):  # type: ignore[misc]
        """botocore's canonical request over exactly the headers the client signed, and the body received."""

        def headers_to_sign(self, request: Any) -> Any:
            chosen = HTTPHeaders()
            for name in signed:
                chosen[name] = lowered[name]
            return chosen

        def payload(self, request: Any) -> str:
            return payload_hash

    request = AWSRequest(method=method, url=url, data=b"", headers={})
    request.context["timestamp"] = stamp
    signer = ReceivedSignature(credentials, service, region)
    expected = signer.signature(signer.string_to_sign(request, signer.canonical_request(request)), request)
    if not hmac.compare_digest(expected, signature):
        raise SignatureError("The request signature we calculated does not match the signature you provided")


def presigned(query: str) -> str | None:
    """The form of a presigned URL's query: "sigv4" (X-Amz-Signature), "sigv2" (S3's AWSAccessKeyId, Signature
    and Expires: boto3's default for S3), or None."""
    names = {name for name, _ in parse_qsl(query, keep_blank_values=True)}
    if "X-Amz-Signature" in names:
        return "sigv4"
    if {"AWSAccessKeyId", "Signature", "Expires"} <= names:
        return "sigv2"
    return None


def verify_presigned(method: str, url: str, headers: Mapping[str, str], credentials: Any, region: str,
                     service: str, now: datetime.datetime | None = None) -> None:
    """Raise SignatureError unless a presigned URL's query holds a valid signature by ``credentials`` (SigV4 for
    ``service`` in ``region``, or S3's SigV2) that has not expired
    (https://docs.aws.amazon.com/AmazonS3/latest/API/sigv4-query-string-auth.html and
    https://docs.aws.amazon.com/AmazonS3/latest/userguide/RESTAuthentication.html#RESTAuthenticationQueryStringAuth)."""
    now = now or datetime.datetime.now(datetime.UTC)
    query = dict(parse_qsl(urlsplit(url).query, keep_blank_values=True))
    lowered = {name.lower(): value for name, value in headers.items()}
    if presigned(urlsplit(url).query) == "sigv2":
        _verify_sigv2(method, url, query, lowered, credentials, now)
        return
    if query.get("X-Amz-Algorithm") != "AWS4-HMAC-SHA256":
        raise SignatureError("X-Amz-Algorithm only supports \"AWS4-HMAC-SHA256\"", "AuthorizationQueryParametersError")
    match = CREDENTIAL.match(query.get("X-Amz-Credential", ""))
    if not match:
        raise SignatureError("X-Amz-Credential is malformed", "AuthorizationQueryParametersError")
    if match["service"] != service or match["region"] != region:
        raise SignatureError(f"Credential should be scoped to a valid region and service: '{region}', '{service}'",
                             "AuthorizationQueryParametersError")
    if not hmac.compare_digest(match["key"].encode(), credentials.access_key.encode()):
        raise SignatureError(INVALID_TOKEN, "UnrecognizedClientException")
    token, expected_token = query.get("X-Amz-Security-Token"), getattr(credentials, "token", None)
    if (token is None) != (expected_token is None) or (
            token is not None and not hmac.compare_digest(token.encode(), str(expected_token).encode())):
        raise SignatureError(INVALID_TOKEN, "UnrecognizedClientException")
    stamp = query.get("X-Amz-Date", "")
    try:
        when = datetime.datetime.strptime(stamp, "%Y%m%dT%H%M%SZ").replace(tzinfo=datetime.UTC)
        lifetime = int(query.get("X-Amz-Expires", ""))
    except ValueError:
        raise SignatureError("X-Amz-Date or X-Amz-Expires is missing or malformed",
                             "AuthorizationQueryParametersError") from None
    if stamp[:8] != match["date"] or not 1 <= lifetime <= 604800:
        raise SignatureError("X-Amz-Expires must be from 1 to 604800 seconds, and X-Amz-Date on the credential's day",
                             "AuthorizationQueryParametersError")
    if when > now + MAX_SKEW:
        raise SignatureError("Request is not valid yet", s3_code="AccessDenied")
    if now > when + datetime.timedelta(seconds=lifetime):
        raise SignatureError("Request has expired", s3_code="AccessDenied")
    signed = query.get("X-Amz-SignedHeaders", "").split(";")
    _check_signed_headers(signed, lowered)
    without_signature = urlsplit(url)._replace(query="&".join(
        part for part in urlsplit(url).query.split("&") if not part.startswith("X-Amz-Signature="))).geturl()
    _check_signature(method, without_signature, lowered, signed, "UNSIGNED-PAYLOAD", stamp,
                     query.get("X-Amz-Signature", ""), credentials, region, service)


def _verify_sigv2(method: str, url: str, query: Mapping[str, str], lowered: Mapping[str, str], credentials: Any,
                  now: datetime.datetime) -> None:
    """S3's SigV2 query authentication, recomputed with botocore's HMAC-SHA1 signer."""
    from botocore.auth import HmacV1Auth
    from botocore.compat import HTTPHeaders

    if not hmac.compare_digest(query["AWSAccessKeyId"].encode(), credentials.access_key.encode()):
        raise SignatureError(INVALID_TOKEN, "UnrecognizedClientException")
    try:
        expires = int(query["Expires"])
    except ValueError:
        raise SignatureError("Expires is malformed", s3_code="AccessDenied") from None
    if now.timestamp() > expires:
        raise SignatureError("Request has expired", s3_code="AccessDenied")
    headers = HTTPHeaders()
    for name, value in lowered.items():
        if name.startswith("x-amz-") or name in ("content-md5", "content-type"):
            headers[name] = value
    split = urlsplit(url)
    kept = "&".join(part for part in split.query.split("&")
                    if part.partition("=")[0] not in ("AWSAccessKeyId", "Signature", "Expires"))
    class ReceivedSignature(HmacV1Auth):  # type: ignore[misc]
        """botocore's SigV2 string to sign, with the URL's Expires where a header request has its Date."""

        def _get_date(self) -> str:
            return str(expires)

    expected = ReceivedSignature(credentials).get_signature(method, split._replace(query=kept), headers)
    if not hmac.compare_digest(expected, query["Signature"]):
        raise SignatureError("The request signature we calculated does not match the signature you provided")
