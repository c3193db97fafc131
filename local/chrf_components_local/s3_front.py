"""What `serve` checks and decodes of an S3 request before moto's S3 sees it, as S3 itself checks it: names
(https://docs.aws.amazon.com/AmazonS3/latest/userguide/bucketnamingrules.html, object keys of at most 1,024 bytes:
https://docs.aws.amazon.com/AmazonS3/latest/userguide/object-keys.html), aws-chunked bodies (decoded here, in linear
time, against the declared decoded length: https://docs.aws.amazon.com/AmazonS3/latest/API/sigv4-streaming.html),
XML bodies (no DOCTYPE or entity, bounded depth: S3's MalformedXML), and the store's size. Errors are S3's
(https://docs.aws.amazon.com/AmazonS3/latest/API/ErrorResponses.html), answered before moto allocates anything.

moto is kept behind it for what it does well (every S3 operation's semantics and XML); what it would do badly with a
hostile request (allocate a declared length, decode by repeated concatenation, answer a malformed body with a 500)
never reaches it, and a request moto fails on (a POST to an object without an action, /moto-api/reset among them)
is answered 501 NotImplemented, never a 500. Where the bytes live is s3_store's: every object and part on disk, in
serve's own temporary folder (removed when it ends), streamed on GET; STORE_LIMIT counts them all.
"""

from __future__ import annotations

import re
from typing import NamedTuple
from urllib.parse import parse_qsl, unquote

MAX_KEY_BYTES = 1024  # S3's own limit
MAX_XML_DEPTH = 32  # S3's XML bodies (DeleteObjects, CompleteMultipartUpload, configurations) are a few levels deep
STORE_LIMIT = 8 * 1024**3  # bytes in all the buckets: a local cap (S3 has none); an upload past it is refused
BUCKET_NAME = re.compile(r"[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$")
STREAMING = ("STREAMING-AWS4-HMAC-SHA256-PAYLOAD", "STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER",
             "STREAMING-UNSIGNED-PAYLOAD-TRAILER")


class S3Error(Exception):
    """An S3 error answer: HTTP status, S3's code, its message."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status, self.code = status, code


class Decoded(NamedTuple):
    """An aws-chunked body decoded: the object's bytes, the trailer's headers, each chunk's signature (signed
    streaming), and the trailer's signature."""

    data: bytes
    trailers: dict[str, str]
    signatures: list[tuple[str, bytes]]
    trailer_signature: str | None


def check_names(path: str) -> tuple[str, str]:
    """The bucket and the key of a path-style request (``/bucket/key``), each checked as S3 checks it."""
    bucket, _, key = path.lstrip("/").partition("/")
    bucket, key = unquote(bucket), unquote(key)
    if bucket and not (BUCKET_NAME.match(bucket) and ".." not in bucket and not re.fullmatch(r"[\d.]+", bucket)):
        raise S3Error(400, "InvalidBucketName", "The specified bucket is not valid.")
    if len(key.encode("utf-8", "surrogatepass")) > MAX_KEY_BYTES:
        raise S3Error(400, "KeyTooLongError", "Your key is too long")
    if "\x00" in key:
        raise S3Error(400, "InvalidArgument", "Object keys holding U+0000 cannot be listed in S3's XML (XML 1.0 has no "
                                              "such character); serve refuses them")
    return bucket, key


def decode_chunked(content_sha256: str, decoded_length: str | None, body: bytes) -> Decoded:
    """An aws-chunked body decoded in one pass over it (slices joined once), every chunk size checked against what
    arrived and the total against ``x-amz-decoded-content-length``: nothing is allocated for a length the bytes do
    not bear out."""
    if decoded_length is None:
        raise S3Error(411, "MissingContentLength", "You must provide the x-amz-decoded-content-length header with an "
                                                   "aws-chunked body")
    if not decoded_length.isdigit():
        raise S3Error(400, "InvalidArgument", "x-amz-decoded-content-length must be a number of bytes from 0")
    expected = int(decoded_length)
    if expected > len(body):
        raise S3Error(400, "IncompleteBody", "You did not provide the number of bytes specified by the "
                                             "x-amz-decoded-content-length HTTP header")
    signed = not content_sha256.startswith("STREAMING-UNSIGNED")
    pieces: list[bytes] = []
    signatures: list[tuple[str, bytes]] = []
    position = total = 0
    while True:
        end = body.find(b"\r\n", position, position + 200)
        if end < 0:
            raise S3Error(400, "IncompleteBody", "The aws-chunked body ends inside a chunk header")
        header = body[position:end].decode("latin-1")
        size_text, _, extension = header.partition(";")
        if not re.fullmatch(r"[0-9a-fA-F]{1,16}", size_text):
            raise S3Error(400, "InvalidChunkSizeError", "Only the last chunk is allowed to have a size less than 8192 "
                                                        "bytes, and every chunk size is hexadecimal")
        size = int(size_text, 16)
        signature = extension.partition("chunk-signature=")[2] if signed else ""
        if signed and not re.fullmatch(r"[0-9a-f]{64}", signature):
            raise S3Error(400, "IncompleteSignature", "Each chunk of a signed aws-chunked body carries its "
                                                      "chunk-signature")
        start = end + 2
        if size == 0:
            if signed:
                signatures.append((signature, b""))
            position = start
            break
        if start + size + 2 > len(body) or body[start + size:start + size + 2] != b"\r\n":
            raise S3Error(400, "IncompleteBody", "A chunk of the aws-chunked body is shorter than its declared size")
        data = body[start:start + size]
        pieces.append(data)
        if signed:
            signatures.append((signature, data))
        total += size
        if total > expected:
            break
        position = start + size + 2
    if total != expected:
        raise S3Error(400, "IncompleteBody", "You did not provide the number of bytes specified by the "
                                             "x-amz-decoded-content-length HTTP header")
    trailers: dict[str, str] = {}
    trailer_signature = None
    for line in body[position:].split(b"\r\n"):
        if not line:
            continue
        name, separator, value = line.decode("latin-1").partition(":")
        if not separator:
            raise S3Error(400, "MalformedTrailerError", "The request contained trailing data that was not well-formed")
        if name.strip().lower() == "x-amz-trailer-signature":
            trailer_signature = value.strip()
        else:
            trailers[name.strip().lower()] = value.strip()
    return Decoded(b"".join(pieces), trailers, signatures, trailer_signature)


def check_xml(body: bytes) -> None:
    """An XML request body S3 would parse: well-formed, no DOCTYPE (so no entity), at most MAX_XML_DEPTH levels."""
    import xml.parsers.expat

    malformed = S3Error(400, "MalformedXML", "The XML you provided was not well-formed or did not validate against "
                                             "our published schema")
    parser = xml.parsers.expat.ParserCreate()
    depth = [0]

    def refuse(*_: object) -> None:
        raise malformed

    def start(*_: object) -> None:
        depth[0] += 1
        if depth[0] > MAX_XML_DEPTH:
            raise malformed

    def end(*_: object) -> None:
        depth[0] -= 1

    parser.StartDoctypeDeclHandler = refuse
    parser.EntityDeclHandler = refuse
    parser.StartElementHandler = start
    parser.EndElementHandler = end
    try:
        parser.Parse(body, True)
    except xml.parsers.expat.ExpatError:
        raise malformed from None


def xml_bodied(method: str, query: str) -> bool:
    """Whether S3 reads this request's body as XML (DeleteObjects, CompleteMultipartUpload, a configuration PUT)."""
    names = {name for name, _ in parse_qsl(query, keep_blank_values=True)}
    return (method == "POST" and bool(names & {"delete", "uploadId"})) or (
        method == "PUT" and bool(names & {"tagging", "acl", "cors", "lifecycle", "policy", "versioning",
                                          "notification", "encryption", "website", "logging"}))


def error_body(error: S3Error) -> bytes:
    from xml.sax.saxutils import escape

    return (f'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>{error.code}</Code>'
            f"<Message>{escape(str(error))}</Message></Error>").encode()
