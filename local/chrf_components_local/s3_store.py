"""moto's S3 with its objects on disk and streamed: what keeps `serve`'s memory flat whatever it stores.

moto keeps every object in a SpooledTemporaryFile (in memory up to 5 MB, each holding a descriptor past that),
answers a GET with the whole object as one bytes value, and completes a multipart upload by joining the parts in
memory (about three times the object at once). Installed once per process (:func:`install`), three narrow changes
keep moto's semantics (every operation, its checks, headers and XML) and change where the bytes live:

* an object's (and a part's) bytes are a file in serve's own temporary folder (removed when the process ends),
  opened only while read or written, so no descriptor is held per object; rewriting an object starts a new file,
  so a GET under way keeps reading the version it began with (as S3's read-after-write allows);
* a GET streams the object (or its Range) from that file in chunks of CHUNK bytes, and CopyObject copies the file;
* completing a multipart upload copies the parts into the new object's file a chunk at a time, with the ETag and
  checksums computed on the way as moto computes them.

What still passes through memory whole is one request's body (moto reads a PUT's or an UploadPart's body as one
value): server.py bounds it (MAX_REQUEST_BODY, and at most BODY_BUDGET bytes of bodies at once) before moto sees it.
The moto version this is made for is pinned (requirements.txt); :func:`install` checks the shapes it changes.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import hashlib
import os
import shutil
import tempfile
import threading
import types
import uuid
from collections.abc import Iterator
from typing import Any

CHUNK = 1 << 20  # bytes a GET answers at a time, and a multipart completion copies at a time
_state = threading.local()  # .streaming: a GET is being answered in this thread
_installed: list[tempfile.TemporaryDirectory[str]] = []
ORIGINAL: dict[str, Any] = {}  # moto's own functions replaced here (the tests compare their answers)


FOLDER_PREFIX = "chrf-serve-s3-"  # then the serving process's id, a dash and tempfile's random part


def remove_abandoned(directory: str) -> list[str]:
    """Remove the folders of serve processes that ended without removing theirs (killed: SIGKILL, the OOM killer),
    so that what a killed serve stored does not stay on disk for good: a folder is removed only when the process its
    name gives is gone (a live one's, or another user's, is left alone). Returns the folders removed."""
    removed: list[str] = []
    try:
        names = os.listdir(directory)
    except OSError:
        return removed
    for name in names:
        pid, dash, _ = name[len(FOLDER_PREFIX):].partition("-")
        if not name.startswith(FOLDER_PREFIX) or not dash or not pid.isdigit():
            continue
        path = os.path.join(directory, name)
        try:
            os.kill(int(pid), 0)
            continue  # alive (or not ours to signal): left alone
        except ProcessLookupError:
            pass
        except (PermissionError, OverflowError, ValueError):
            continue
        try:
            if os.stat(path).st_uid != os.getuid():
                continue
        except OSError:
            continue
        shutil.rmtree(path, ignore_errors=True)
        removed.append(path)
    return removed


def folder() -> str:
    """serve's own temporary folder for object bytes (made at install, removed when the process ends)."""
    return _installed[0].name


class DiskValue:
    """An object's bytes as a file in :func:`folder`, with the file interface moto's FakeKey uses of its buffer
    (seek, tell, read, write, truncate, close). No descriptor is held between calls; truncating to 0 (moto's
    rewrite) starts a new file, so a snapshot being streamed still reads the old one."""

    def __init__(self, max_size: int = 0, *args: Any, **kwargs: Any) -> None:  # SpooledTemporaryFile's signature
        self.path: str | None = None
        self.position = 0
        self.size = 0
        self.offset = 0  # where these bytes start in the file: a completed upload's part is a view of the object's
        self.owner = True  # whether the file is these bytes' own (removed with them), not a view of another's

    def _file(self, mode: str) -> Any:
        if self.path is None:
            self.path = os.path.join(folder(), uuid.uuid4().hex)
            open(self.path, "wb").close()
        return open(self.path, mode)

    def seek(self, offset: int, whence: int = 0) -> int:
        self.position = offset if whence == 0 else self.position + offset if whence == 1 else self.size + offset
        return self.position

    def tell(self) -> int:
        return self.position

    def read(self, amount: int | None = -1) -> bytes:
        if self.path is None or self.position >= self.size:
            return b""
        wanted = self.size - self.position if amount is None or amount < 0 else min(amount, self.size - self.position)
        with open(self.path, "rb") as file:
            file.seek(self.offset + self.position)
            data = file.read(wanted)
        self.position += len(data)
        return data

    def write(self, data: bytes) -> int:
        if not self.owner:  # a view written to (moto does not): the bytes become a file of their own first
            self.owner, self.path = True, None
            self.size = self.offset = 0
        with self._file("r+b") as file:
            file.seek(self.position)
            file.write(data)
        self.position += len(data)
        self.size = max(self.size, self.position)
        return len(data)

    def truncate(self, size: int | None = None) -> int:
        size = self.position if size is None else size
        if size == 0:
            self._drop()
        elif self.path is not None:
            if self.owner:
                os.truncate(self.path, size)
            self.size = min(self.size, size)
        return size

    def adopt(self, path: str, size: int) -> None:
        """Take a finished file (a completed multipart upload) as these bytes."""
        self._drop()
        self.path, self.size, self.position = path, size, size

    def view(self, path: str, offset: int, size: int) -> None:
        """Become bytes offset..offset+size of another's file (a part of the completed object it was copied into:
        a GET with partNumber still reads it, and it takes no disk space of its own)."""
        self._drop()
        self.path, self.offset, self.size, self.owner = path, offset, size, False

    def open_snapshot(self) -> tuple[Any, int, int]:
        """The bytes as they are now: a file opened for reading (it stays readable if they are rewritten), where
        they start in it and their size."""
        if self.path is None:
            return None, 0, 0
        try:
            return open(self.path, "rb"), self.offset, self.size
        except FileNotFoundError:  # a view of an object rewritten since: its parts went with it
            return None, 0, 0

    def close(self) -> None:
        self._drop()

    def _drop(self) -> None:
        if self.path is not None and self.owner:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self.path)
        self.path, self.size, self.position, self.offset, self.owner = None, 0, 0, 0, True


class Streamed:
    """A GET's body: bytes ``start``..``stop`` of an object's file, as moto's GET and Range handling use a bytes
    value (len, a slice, truthiness), iterated by the WSGI server a CHUNK at a time; closed when the answer ends."""

    def __init__(self, file: Any, start: int, stop: int) -> None:
        self.file, self.start, self.stop = file, start, stop

    def __len__(self) -> int:
        return self.stop - self.start

    def __getitem__(self, part: slice) -> Streamed:
        start, stop, _ = part.indices(len(self))
        return Streamed(self.file, self.start + start, self.start + max(start, stop))

    def __iter__(self) -> Iterator[bytes]:
        if self.file is None:
            return
        position = self.start
        while position < self.stop:
            data = os.pread(self.file.fileno(), min(CHUNK, self.stop - position), position)
            if not data:
                return
            position += len(data)
            yield data

    def close(self) -> None:
        if self.file is not None:
            self.file.close()


class Joined:
    """A completed multipart upload's bytes, already in a file of :func:`folder`."""

    def __init__(self, path: str, size: int) -> None:
        self.path, self.size = path, size


def install() -> None:
    """Change moto's S3 (once per process) as the module says. Refuses a moto whose shapes differ."""
    if _installed:
        return
    import moto
    from moto.s3 import models, responses

    if not (hasattr(models.FakeKey, "value") and hasattr(models.FakeMultipart, "complete") and
            hasattr(responses.S3Response, "get_object") and hasattr(models.S3Backend, "copy_object") and
            hasattr(models, "tempfile")):
        raise RuntimeError(f"moto {moto.__version__}: not the S3 model serve's store was made for (moto 5.2)")
    remove_abandoned(tempfile.gettempdir())
    _installed.append(tempfile.TemporaryDirectory(prefix=f"{FOLDER_PREFIX}{os.getpid()}-"))
    ORIGINAL["complete"] = models.FakeMultipart.complete
    setattr(models, "tempfile", types.SimpleNamespace(SpooledTemporaryFile=DiskValue))  # noqa: B010 (a patch)
    setattr(models.FakeKey, "value", property(_value, _set_value))  # noqa: B010
    setattr(models.FakeMultipart, "complete", _complete)  # noqa: B010
    get_object = responses.S3Response.get_object

    def streamed_get_object(self: Any) -> Any:
        _state.streaming = getattr(_state, "answering", False)  # moto's in-process mock (mock_aws) wants bytes
        try:
            return get_object(self)
        finally:
            _state.streaming = False

    setattr(responses.S3Response, "get_object", streamed_get_object)  # noqa: B010
    copy_object = models.S3Backend.copy_object

    def copied_copy_object(self: Any, *args: Any, **kwargs: Any) -> Any:
        _state.copying = True
        try:
            return copy_object(self, *args, **kwargs)
        finally:
            _state.copying = False

    setattr(models.S3Backend, "copy_object", copied_copy_object)  # noqa: B010


class answering:
    """Marks this thread as answering a request through moto's WSGI application (serve), where a GET streams."""

    def __enter__(self) -> None:
        _state.answering = True

    def __exit__(self, *exc: object) -> None:
        _state.answering = False


def _value(key: Any) -> Any:
    """FakeKey.value: the bytes (read whole, as moto reads them for a copy), or while a GET is answered, a
    :class:`Streamed` snapshot of them."""
    with key.lock:
        if getattr(_state, "streaming", False):
            file, start, size = key._value_buffer.open_snapshot()
            return Streamed(file, start, start + size)
        if getattr(_state, "copying", False):  # CopyObject: the new object gets a copy of the file
            path = os.path.join(folder(), uuid.uuid4().hex)
            source, start, size = key._value_buffer.open_snapshot()
            with open(path, "wb") as target:
                if source is not None:
                    with source:
                        source.seek(start)
                        _copy(source, target, size)
            return Joined(path, size)
        key._value_buffer.seek(0)
        return key._value_buffer.read()


def _set_value(key: Any, new_value: Any) -> None:
    if isinstance(new_value, Joined):
        key._value_buffer.adopt(new_value.path, new_value.size)
        key.contentsize = new_value.size
        return
    if isinstance(new_value, str):
        new_value = new_value.encode("utf-8")
    key._value_buffer.seek(0)
    key._value_buffer.truncate()
    key._value_buffer.write(new_value)
    key.contentsize = len(new_value)


class Checksum:
    """A checksum computed a chunk at a time, as moto's compute_checksum computes it whole (its algorithms and
    fallbacks: CRC32C without the crc32c package and CRC64NVME without awscrt are CRC32, as there)."""

    def __init__(self, algorithm: str) -> None:
        self.algorithm, self.crc = algorithm, 0
        self.hash = hashlib.sha1(usedforsecurity=False) if algorithm == "SHA1" else \
            hashlib.sha256(usedforsecurity=False) if algorithm not in ("CRC32", "CRC32C", "CRC64NVME") else None
        self.width = 8 if algorithm == "CRC64NVME" and _crc64() else 4
        self.crc32c = _crc32c() if algorithm == "CRC32C" else None

    def update(self, data: bytes) -> None:
        if self.hash is not None:
            self.hash.update(data)
        elif self.crc32c is not None:
            self.crc = self.crc32c(data, self.crc)
        elif self.width == 8:
            self.crc = _crc64()(data, self.crc)
        else:
            self.crc = binascii.crc32(data, self.crc)

    def digest(self) -> bytes:
        return self.hash.digest() if self.hash is not None else self.crc.to_bytes(self.width, "big")


def _copy(source: Any, target: Any, size: int) -> None:
    """``size`` bytes from one open file to another, a CHUNK at a time."""
    while size > 0:
        data = source.read(min(CHUNK, size))
        if not data:
            return
        target.write(data)
        size -= len(data)


def _crc32c() -> Any:
    try:
        import crc32c
    except ImportError:
        return None
    return lambda data, previous: crc32c.crc32c(data, previous)


def _crc64() -> Any:
    from moto.s3 import utils

    if not getattr(utils, "HAS_CRT", False):
        return None
    from awscrt import checksums

    return lambda data, previous: checksums.crc64nvme(data, previous)


def _complete(multipart: Any, body: Any) -> tuple[Joined, str, tuple[str, str, int] | None]:
    """FakeMultipart.complete with the parts copied into the object's file a chunk at a time: the same checks
    (InvalidPart, EntityTooSmall, MalformedXML), ETag (MD5 of the parts' MD5s, "-<count>") and checksum (the
    checksum of the parts' checksums, COMPOSITE, or of the whole object, FULL_OBJECT) as moto's."""
    from moto.s3.exceptions import EntityTooSmall, InvalidPart, MalformedXML
    from moto.settings import S3_UPLOAD_PART_MIN_SIZE

    algorithm = multipart.metadata.get("x-amz-checksum-algorithm") or "CRC64NVME"
    kind = multipart.metadata.get("x-amz-checksum-type") or ("FULL_OBJECT" if algorithm == "CRC64NVME" else
                                                             "COMPOSITE")
    whole, composite = Checksum(algorithm), bytearray()
    md5s = bytearray()
    path = os.path.join(folder(), uuid.uuid4().hex)
    size, last, count = 0, None, 0
    used: list[tuple[Any, int, int]] = []  # the parts listed, where each went in the object
    try:
        with open(path, "wb") as target:
            for number, etag in body:
                part = multipart.parts.get(number)
                if part is None or part.etag.replace('"', "") != etag.replace('"', ""):
                    raise InvalidPart()
                if last is not None and last.contentsize < S3_UPLOAD_PART_MIN_SIZE:
                    raise EntityTooSmall()
                md5s.extend(binascii.unhexlify(part.etag.replace('"', "")))
                one = Checksum(algorithm)
                with part.lock:
                    file, start, length = part._value_buffer.open_snapshot()
                stream = Streamed(file, start, start + length)
                try:
                    for data in stream:
                        target.write(data)
                        (whole if kind != "COMPOSITE" else one).update(data)
                finally:
                    stream.close()
                if kind == "COMPOSITE":
                    composite.extend(one.digest())
                used.append((part, size, length))
                size += length
                last, count = part, count + 1
        if count == 0:
            raise MalformedXML
    except BaseException:
        os.unlink(path)
        raise
    for part in multipart.parts.values():  # the object holds the bytes now: each part listed is a view of them,
        part._value_buffer.close()  # one not listed is gone (as S3 discards it)
    for part, start, length in used:
        part._value_buffer.view(path, start, length)
    if kind == "COMPOSITE":
        total = Checksum(algorithm)
        total.update(bytes(composite))
        checksum = (kind, base64.b64encode(total.digest()).decode(), count)
    else:
        checksum = (kind, base64.b64encode(whole.digest()).decode(), 1)
    return Joined(path, size), f"{hashlib.md5(bytes(md5s), usedforsecurity=False).hexdigest()}-{count}", checksum
