"""What `make sam-local` needs around the real SAM CLI: a container engine, the python3.13 Lambda image built
offline, an x86_64 copy of the built template, and SAM's local servers, each stopped by its PID, with every container
SAM started removed, whatever the tests did.

* The engine: the one DOCKER_HOST (or the default socket) names when it answers; else, as root, Debian's dockerd
  started here with its own folders, `--iptables=false --ip-masq=false --ip-forward=false` (no firewall rule, no
  forwarding setting changes), stopped by its PID; the docker0 bridge it creates is deleted afterwards.
* The image (tests/sam_local/image/): a Debian trixie root filesystem from Debian's archive (mmdebstrap), awslambdaric
  and boto3 (which AWS's runtime ships) from PyPI, the runtime interface emulator shipped in the aws-sam-cli package.
  Tagged by a hash of its recipe, so it is built again only when the recipe changes.
* The template: .aws-sam/build (make build) with x86_64 for arm64 and the layer's kernel compiled for x86_64 (the
  arm64 one needs qemu binfmt in the engine, with cold starts past the functions' Timeouts).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import zipfile
from collections.abc import Iterator
from pathlib import Path

from processes import stop_group

ROOT = Path(__file__).resolve().parents[2]
CACHE = ROOT / ".cache" / "sam-local"
IMAGE_RECIPE = Path(__file__).resolve().parent / "image"
SAM = ROOT / ".venv-sam" / "bin" / "sam"
AWSLAMBDARIC = "awslambdaric==4.2.2"
BOTO3 = "boto3==1.44.8"  # AWS's python3.13 runtime ships the AWS SDK; the pipeline's merge uses it
SUITE = "trixie"
MIRROR = "http://deb.debian.org/debian"
SAM_LABEL = "sam.cli.container.type"


class Unavailable(Exception):
    """A tool the SAM CLI tests need is missing or cannot start here: one line saying which."""


def run(*command: str, env: dict[str, str] | None = None, timeout: float = 600, **options: object) -> str:
    completed = subprocess.run(command, capture_output=True, text=True, env=env, timeout=timeout, **options)
    if completed.returncode:
        raise RuntimeError(f"{' '.join(command[:4])}...: exit {completed.returncode}\n{completed.stderr[-3000:]}")
    return completed.stdout


def docker_env(host: str) -> dict[str, str]:
    return {**os.environ, "DOCKER_HOST": host, "DOCKER_BUILDKIT": "0", "SAM_CLI_TELEMETRY": "0"}


def answers(host: str) -> bool:
    try:
        return subprocess.run(["docker", "info", "--format", "{{.ServerVersion}}"], env=docker_env(host),
                              capture_output=True, timeout=20).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def link_exists(name: str) -> bool:
    return Path("/sys/class/net", name).exists()


@contextlib.contextmanager
def engine() -> Iterator[str]:
    """A container engine's DOCKER_HOST: one already running, else dockerd started (and stopped) here."""
    if shutil.which("docker") is None:
        raise Unavailable("no docker client (Debian: apt-get install docker.io)")
    existing = os.environ.get("DOCKER_HOST", "unix:///var/run/docker.sock")
    if answers(existing):
        yield existing
        return
    if shutil.which("dockerd") is None:
        raise Unavailable("no container engine running and no dockerd to start (Debian: apt-get install docker.io)")
    if os.geteuid() != 0:
        raise Unavailable("no container engine running, and starting dockerd needs root")
    runtime = Path(tempfile.mkdtemp(prefix="chrf-dockerd-"))  # short: the socket's path has a length limit
    data = CACHE / "docker"
    data.mkdir(parents=True, exist_ok=True)
    host = f"unix://{runtime}/docker.sock"
    bridge_existed = link_exists("docker0")
    log = (runtime / "dockerd.log").open("w")
    daemon = subprocess.Popen(
        ["dockerd", "--data-root", str(data), "--exec-root", str(runtime / "exec"), "--pidfile",
         str(runtime / "dockerd.pid"), "--host", host, "--iptables=false", "--ip-masq=false", "--ip-forward=false",
         "--storage-driver", "overlay2"], stdout=log, stderr=log, start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        while not answers(host):
            if daemon.poll() is not None or time.monotonic() > deadline:
                raise Unavailable("dockerd did not start: "
                                  + " | ".join((runtime / "dockerd.log").read_text().splitlines()[-3:]))
            time.sleep(0.5)
        yield host
    finally:
        stop_group(daemon, 30)
        log.close()
        if not bridge_existed and link_exists("docker0"):
            subprocess.run(["ip", "link", "delete", "docker0"], capture_output=True)
        shutil.rmtree(runtime, ignore_errors=True)


def remove_sam_containers(host: str) -> None:
    """Every container SAM CLI started (by its label), running or not."""
    ids = run("docker", "ps", "-aq", "--filter", f"label={SAM_LABEL}", env=docker_env(host)).split()
    if ids:
        run("docker", "rm", "-f", *ids, env=docker_env(host))


def recipe_hash() -> str:
    digest = hashlib.sha256(f"{AWSLAMBDARIC} {BOTO3} {SUITE}".encode())
    for path in sorted(IMAGE_RECIPE.iterdir()):
        digest.update(path.name.encode() + path.read_bytes())
    return digest.hexdigest()[:12]


def image(host: str) -> str:
    """The tag of the local python3.13 Lambda image, built offline when missing."""
    tag = f"chrf-components-lambda:python3.13-{recipe_hash()}"
    env = docker_env(host)
    if subprocess.run(["docker", "image", "inspect", tag], env=env, capture_output=True).returncode == 0:
        return tag
    if shutil.which("mmdebstrap") is None:
        raise Unavailable("no mmdebstrap to build the Lambda image (Debian: apt-get install mmdebstrap)")
    CACHE.mkdir(parents=True, exist_ok=True)
    rootfs = CACHE / f"rootfs-{SUITE}-python3.13.tar"
    if not rootfs.exists():
        partial = rootfs.with_name(rootfs.name + ".partial.tar")  # mmdebstrap writes the format its name ends in
        run("mmdebstrap", "--variant=essential", "--include=python3.13,libstdc++6", SUITE, str(partial), MIRROR,
            timeout=900)
        partial.rename(rootfs)
    base = f"chrf-components-lambda-base:{recipe_hash()}"
    run("docker", "import", str(rootfs), base, env=env)
    with tempfile.TemporaryDirectory() as context_dir:
        context = Path(context_dir)
        for name in ("Dockerfile", "lambda-entrypoint.sh"):
            shutil.copy2(IMAGE_RECIPE / name, context / name)
        runtime = context / "runtime"
        runtime.mkdir()
        for name in ("bootstrap", "launcher.py"):
            shutil.copy2(IMAGE_RECIPE / name, runtime / name)
        wheels = context / "wheels"
        run(sys.executable, "-m", "pip", "download", "-q", "--only-binary=:all:", "--python-version", "3.13",
            "--platform", "manylinux2014_x86_64", "--implementation", "cp", "-d", str(wheels), AWSLAMBDARIC, BOTO3)
        for wheel in wheels.glob("*.whl"):
            with zipfile.ZipFile(wheel) as archive:
                archive.extractall(runtime)
        shutil.rmtree(wheels)
        emulator = next(ROOT.glob(".venv-sam/lib/python3*/site-packages/samcli/local/rapid/aws-lambda-rie-x86_64"))
        shutil.copy2(emulator, context / "aws-lambda-rie")
        dockerfile = (context / "Dockerfile").read_text().replace("FROM chrf-components-lambda-base", f"FROM {base}")
        (context / "Dockerfile").write_text(dockerfile)
        run("docker", "build", "-q", "-t", tag, str(context), env=env)
    return tag


def x86_64_template(work: Path) -> Path:
    """A copy of .aws-sam/build for x86_64: the architectures, and the layer's native kernel compiled for it."""
    built = ROOT / ".aws-sam" / "build"
    if not (built / "template.yaml").exists():
        raise Unavailable("no .aws-sam/build (make build)")
    copy = work / "build"
    shutil.copytree(built, copy)
    template = (copy / "template.yaml").read_text()
    for old, new in (("\n    - arm64\n", "\n    - x86_64\n"), ("\n      - arm64\n", "\n      - x86_64\n"),
                     ("BuildArchitecture: arm64", "BuildArchitecture: x86_64")):
        template = template.replace(old, new)
    assert "arm64" not in template, "the built template names arm64 somewhere this copy does not change"
    (copy / "template.yaml").write_text(template)
    pyenv = sorted(Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv")).glob("versions/3.13*/bin/python3.13"))
    python313 = str(pyenv[-1]) if pyenv else shutil.which("python3.13")  # as the Makefile's build finds it
    if python313 is None:
        raise Unavailable("no python3.13 for the layer's headers")
    include = run(str(python313), str(ROOT / "layers" / "chrf_core" / "native" / "python_include.py"),
                  str(work / "include")).strip()
    run("make", "-s", "-C", str(ROOT / "layers" / "chrf_core"), "build-ChrfCoreLayer",
        f"ARTIFACTS_DIR={work / 'layer'}", "TARGET=x86_64-linux-gnu.2.34",
        f"ZIG={ROOT / '.venv-sam' / 'bin' / 'python'} -m ziglang", f"PYTHON_INCLUDE={include}")
    shutil.copy2(work / "layer" / "python" / "chrf_core" / "_kernel.abi3.so",
                 copy / "ChrfCoreLayer" / "python" / "chrf_core" / "_kernel.abi3.so")
    return copy / "template.yaml"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextlib.contextmanager
def sam_server(command: str, template: Path, tag: str, host: str, log: Path) -> Iterator[int]:
    """`sam local start-lambda` or `start-api` on 127.0.0.1 with warm containers: its port, until the block ends."""
    port = free_port()
    with log.open("w") as output:
        process = subprocess.Popen(
            [str(SAM), "local", command, "-t", str(template), "--invoke-image", tag, "--skip-pull-image",
             "--host", "127.0.0.1", "--port", str(port), "--warm-containers", "LAZY", "--container-host",
             "127.0.0.1", "--container-host-interface", "127.0.0.1"],
            env=docker_env(host), stdout=output, stderr=output, start_new_session=True, cwd=template.parent)
        try:
            deadline = time.monotonic() + 120
            while True:
                with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=1):
                    break
                if process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"sam local {command} did not start:\n{log.read_text()[-3000:]}")
                time.sleep(0.3)
            yield port
        finally:
            stop_group(process, 20)
            remove_sam_containers(host)
