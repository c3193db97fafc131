"""`serve`'s S3 keeps objects on disk and streams them (local/chrf_components_local/s3_store.py), with moto's answers:
the same bytes, ETags and checksums whether read whole, by Range, by part number or copied, and a memory that does not
grow with what is stored.

Issue 65, on the code before: every object stayed in serve's memory (each 200 MiB PUT added ~230 MB that stayed; moto
joins a multipart upload's parts in memory, about three times the object at once), objects past 5 MB each held a file
descriptor, and `pipeline run --local` on 10^6 lines peaked at 1.8 GB over its processes.

Checksums of multipart uploads (COMPOSITE: the checksum of the parts' checksums, "-N"; FULL_OBJECT: of the whole
object): https://docs.aws.amazon.com/AmazonS3/latest/userguide/checking-object-integrity.html; GetObject's Range and
partNumber: https://docs.aws.amazon.com/AmazonS3/latest/API/API_GetObject.html.
"""

import base64
import binascii
import hashlib
import io
import os
import random
import subprocess
import sys

import boto3
import pytest
from botocore.config import Config
from conftest import serving_with
from processes import peak_rss, serving_process

from chrf_components_local import s3_store

KEY, SECRET, REGION, BUCKET = "AKIDEXAMPLE", "the-secret", "eu-west-3", "corpusbucket"
MIB = 1024 * 1024


@pytest.fixture(scope="module")
def url():
    with pytest.MonkeyPatch.context() as patch:
        running, address = serving_with(patch, False, REGION, KEY, SECRET)
        yield address
    running.shutdown()
    running.server_close()


def s3_client(address):
    return boto3.client("s3", endpoint_url=address, region_name=REGION, aws_access_key_id=KEY,
                        aws_secret_access_key=SECRET, config=Config(retries={"max_attempts": 1}))


def some_bytes(size, seed):
    return random.Random(seed).randbytes(size)


def test_an_object_reads_back_whole_by_range_and_copied_byte_for_byte(url):
    s3 = s3_client(url)
    body = some_bytes(3 * MIB + 17, 1)
    put = s3.put_object(Bucket=BUCKET, Key="store/plain.bin", Body=body)
    assert put["ETag"] == f'"{hashlib.md5(body).hexdigest()}"'
    assert s3.get_object(Bucket=BUCKET, Key="store/plain.bin")["Body"].read() == body
    for header, expected in [("bytes=100-2000000", body[100:2000001]), ("bytes=-10", body[-10:]),
                             (f"bytes={len(body) - 5}-", body[-5:]), ("bytes=0-0", body[:1])]:
        answer = s3.get_object(Bucket=BUCKET, Key="store/plain.bin", Range=header)
        assert answer["Body"].read() == expected and answer["ContentLength"] == len(expected), header
    s3.copy_object(Bucket=BUCKET, Key="store/copied.bin", CopySource={"Bucket": BUCKET, "Key": "store/plain.bin"})
    s3.delete_object(Bucket=BUCKET, Key="store/plain.bin")  # the copy has bytes of its own
    assert s3.get_object(Bucket=BUCKET, Key="store/copied.bin")["Body"].read() == body


def test_an_empty_object_is_put_and_read_back(url):
    """boto3 sends an empty PUT with Expect: 100-continue and Content-Length: 0; waitress (3.0.2) answered the 100
    and then waited for a body that never comes: the PUT hung until the client's timeout (60 s)."""
    s3 = s3_client(url)
    assert s3.put_object(Bucket=BUCKET, Key="store/empty.bin", Body=b"")["ETag"] == f'"{hashlib.md5(b"").hexdigest()}"'
    assert s3.get_object(Bucket=BUCKET, Key="store/empty.bin")["Body"].read() == b""


CHECKSUMS = [("CRC32", "COMPOSITE"), ("CRC32", "FULL_OBJECT"), ("SHA1", "COMPOSITE"), ("SHA256", "COMPOSITE"),
             ("CRC64NVME", "FULL_OBJECT")]


def digest(algorithm, data):
    if algorithm == "CRC32":
        return binascii.crc32(data).to_bytes(4, "big")
    if algorithm == "CRC64NVME":
        from awscrt import checksums

        return checksums.crc64nvme(data).to_bytes(8, "big")
    return hashlib.new(algorithm.lower(), data).digest()


@pytest.mark.parametrize(("algorithm", "kind"), CHECKSUMS)
def test_a_multipart_upload_completes_with_s3s_etag_and_checksum_and_reads_back_across_its_parts(url, algorithm, kind):
    s3 = s3_client(url)
    key = f"store/multi-{algorithm}-{kind}.bin"
    parts = [some_bytes(5 * MIB, 2), some_bytes(5 * MIB + 3, 3), some_bytes(1000, 4)]
    upload = s3.create_multipart_upload(Bucket=BUCKET, Key=key, ChecksumAlgorithm=algorithm, ChecksumType=kind)
    listed = []
    for number, data in enumerate(parts, 1):
        answer = s3.upload_part(Bucket=BUCKET, Key=key, UploadId=upload["UploadId"], PartNumber=number, Body=data,
                                ChecksumAlgorithm=algorithm)
        listed.append({"PartNumber": number, "ETag": answer["ETag"],
                       f"Checksum{algorithm}": answer[f"Checksum{algorithm}"]})
    done = s3.complete_multipart_upload(Bucket=BUCKET, Key=key, UploadId=upload["UploadId"],
                                        MultipartUpload={"Parts": listed})
    whole = b"".join(parts)
    md5s = b"".join(hashlib.md5(data).digest() for data in parts)
    assert done["ETag"] == f'"{hashlib.md5(md5s).hexdigest()}-3"'
    head = s3.head_object(Bucket=BUCKET, Key=key, ChecksumMode="ENABLED")  # moto's Complete answer has none
    if kind == "COMPOSITE":
        expected = base64.b64encode(digest(algorithm, b"".join(digest(algorithm, data) for data in parts))).decode()
        assert head[f"Checksum{algorithm}"] in (expected, f"{expected}-3")
    else:
        assert head[f"Checksum{algorithm}"] == base64.b64encode(digest(algorithm, whole)).decode()
    assert (head["ContentLength"], head.get("ChecksumType")) == (len(whole), kind)
    got = s3.get_object(Bucket=BUCKET, Key=key, ChecksumMode="ENABLED")
    assert got["Body"].read() == whole and got["ETag"] == done["ETag"]
    for number, data in enumerate(parts, 1):  # (moto's GET with partNumber answers the whole object: not ours)
        assert s3.head_object(Bucket=BUCKET, Key=key, PartNumber=number)["ContentLength"] == len(data), number
    middle = s3.get_object(Bucket=BUCKET, Key=key, Range=f"bytes={5 * MIB - 2}-{5 * MIB + 1}")["Body"].read()
    assert middle == whole[5 * MIB - 2:5 * MIB + 2]  # across the parts' border


@pytest.mark.parametrize(("algorithm", "kind"), [(None, None), *CHECKSUMS])
def test_the_streamed_completion_answers_as_motos_own(algorithm, kind):
    """The same multipart upload completed by moto's FakeMultipart.complete (joined in memory) and by the store's
    (a chunk at a time on disk): the same bytes, ETag and checksum."""
    from moto.s3.models import FakeMultipart

    s3_store.install()
    metadata = {name: value for name, value in [("x-amz-checksum-algorithm", algorithm),
                                                ("x-amz-checksum-type", kind)] if value}
    multipart = FakeMultipart("k", metadata, account_id="123456789012", region_name=REGION)
    parts = [some_bytes(5 * MIB + 1, 5), some_bytes(5 * s3_store.CHUNK + 11, 6), some_bytes(7, 7)]
    listed = [(number, multipart.set_part(number, data).etag) for number, data in enumerate(parts, 1)]
    multipart.set_part(4, b"not listed")
    theirs = s3_store.ORIGINAL["complete"](multipart, iter(listed))
    ours = multipart.complete(iter(listed))
    with open(ours[0].path, "rb") as file:
        assert file.read() == theirs[0] == b"".join(parts)
    assert ours[1:] == theirs[1:]
    os.unlink(ours[0].path)


def test_a_get_under_way_reads_the_object_it_began_with_when_it_is_rewritten(url):
    s3 = s3_client(url)
    first, second = some_bytes(40 * MIB, 8), some_bytes(40 * MIB, 9)
    s3.put_object(Bucket=BUCKET, Key="store/rewritten.bin", Body=first)
    reading = s3.get_object(Bucket=BUCKET, Key="store/rewritten.bin")["Body"]
    start = reading.read(MIB)
    s3.put_object(Bucket=BUCKET, Key="store/rewritten.bin", Body=second)
    assert start + reading.read() == first
    assert s3.get_object(Bucket=BUCKET, Key="store/rewritten.bin")["Body"].read() == second


def test_objects_hold_no_file_descriptor_each(url):
    """moto's own store held one per object past 5 MB (a SpooledTemporaryFile rolled over to disk)."""
    s3 = s3_client(url)
    body = b"x" * (6 * MIB)
    s3.put_object(Bucket=BUCKET, Key="store/fd-0.bin", Body=body)
    before = len(os.listdir("/proc/self/fd"))
    for number in range(1, 21):
        s3.put_object(Bucket=BUCKET, Key=f"store/fd-{number}.bin", Body=body)
    assert len(os.listdir("/proc/self/fd")) - before < 5
    assert s3.get_object(Bucket=BUCKET, Key="store/fd-20.bin")["Body"].read() == body


class Pattern(io.RawIOBase):
    """``size`` bytes made as they are read (an upload that is not held in the test's memory either)."""

    def __init__(self, size):
        self.left, self.total, self.block = size, size, some_bytes(MIB, 10)

    def readable(self):
        return True

    def readinto(self, buffer):  # the stream is the block over and over (sizes here are whole MiBs)
        count = min(len(buffer), self.left)
        done = 0
        while done < count:
            offset = (self.total - self.left + done) % MIB
            piece = min(count - done, MIB - offset)
            buffer[done:done + piece] = self.block[offset:offset + piece]
            done += piece
        self.left -= count
        return count


def test_serves_memory_stays_flat_through_a_large_upload_and_download_and_its_folder_goes_with_it(tmp_path):
    """serve as its own process: a 256 MiB multipart upload (boto3's, 8 MiB parts, two at a time) and its GET raise
    serve's peak RSS (VmHWM) by the parts in flight, not the object (here about 30 MiB; moto's own store: about three
    times the object, and Flask's debug mode held a dozen parts until a full garbage collection); the bytes are in
    serve's temporary folder, which is gone when serve ends."""
    size, folder = 256 * MIB, tmp_path / "tmp"
    folder.mkdir()
    environment = {**os.environ, "AWS_ACCESS_KEY_ID": KEY, "AWS_SECRET_ACCESS_KEY": SECRET, "TMPDIR": str(folder)}
    with serving_process(tmp_path / "serve.log", "--workers", "1", env=environment) as (process, port):

        def peak():
            return peak_rss(process.pid)

        from boto3.s3.transfer import TransferConfig

        s3 = s3_client(f"http://127.0.0.1:{port}")
        s3.put_object(Bucket=BUCKET, Key="store/warm.bin", Body=b"w" * MIB)  # moto's first request imports its parts
        before = peak()
        s3.upload_fileobj(Pattern(size), BUCKET, "store/large.bin",
                          Config=TransferConfig(multipart_chunksize=8 * MIB, max_concurrency=2))
        expected = hashlib.sha256()
        for _ in range(size // MIB):
            expected.update(some_bytes(MIB, 10))
        read, got = 0, hashlib.sha256()
        for data in s3.get_object(Bucket=BUCKET, Key="store/large.bin")["Body"].iter_chunks(MIB):
            got.update(data)
            read += len(data)
        assert (read, got.hexdigest()) == (size, expected.hexdigest())
        grown = peak() - before
        assert grown < 96 * MIB, f"serve's peak grew by {grown // MIB} MiB for a {size // MIB} MiB object"
        folders = list(folder.iterdir())
        assert len(folders) == 1 and sum(path.stat().st_size for path in folders[0].iterdir()) >= size
    assert process.returncode == 0 and not list(folder.iterdir())  # stopped with SIGTERM: its folder went with it


def test_the_folders_of_serve_processes_that_were_killed_are_removed_by_the_next(tmp_path):
    """A serve that is SIGKILLed (the OOM killer, a test harness) cannot remove its folder: what it stored stayed on
    disk for good (seven such folders, one of 129 MB, in /tmp after a day's runs). The next serve removes the folders
    of processes that are gone, and only those."""
    ended = subprocess.Popen([sys.executable, "-c", "pass"])
    ended.wait()
    abandoned = tmp_path / f"{s3_store.FOLDER_PREFIX}{ended.pid}-abc"
    abandoned.mkdir()
    (abandoned / "object").write_bytes(b"x" * 1000)
    live = tmp_path / f"{s3_store.FOLDER_PREFIX}{os.getpid()}-def"
    live.mkdir()
    other = tmp_path / "chrf-serve-s3-notapid"
    other.mkdir()
    assert s3_store.remove_abandoned(str(tmp_path)) == [str(abandoned)]
    assert not abandoned.exists() and live.exists() and other.exists()


def test_a_serve_killed_leaves_its_folder_to_the_next_to_remove(tmp_path):
    folder = tmp_path / "tmp"
    folder.mkdir()
    environment = {**os.environ, "AWS_ACCESS_KEY_ID": KEY, "AWS_SECRET_ACCESS_KEY": SECRET, "TMPDIR": str(folder)}
    with serving_process(tmp_path / "first.log", "--workers", "1", env=environment) as (first, port):
        s3_client(f"http://127.0.0.1:{port}").put_object(Bucket=BUCKET, Key="store/left.bin", Body=b"x" * MIB)
        first.kill()
        first.wait(30)
    left = [path.name for path in folder.iterdir()]
    assert len(left) == 1 and left[0].startswith(f"{s3_store.FOLDER_PREFIX}{first.pid}-")
    with serving_process(tmp_path / "second.log", "--workers", "1", env=environment) as (second, _):
        assert [path.name.split("-")[3] for path in folder.iterdir()] == [str(second.pid)]
    assert not list(folder.iterdir())
