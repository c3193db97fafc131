"""What `make sam-local` needs around the real SAM CLI: a container engine, the python3.13 Lambda image built
offline, the project built for x86_64 as the docs show it, and SAM's local servers, each stopped by its PID, with
every container SAM started removed, whatever the tests did.

* The engine: the one DOCKER_HOST (or the default socket) names when it answers; else, as root, Debian's dockerd
  (found in /usr/sbin and /sbin too, where a user's PATH may not look) started here with its own folders,
  `--iptables=false --ip-masq=false --ip-forward=false` (no firewall rule, no forwarding setting changes), stopped
  by its PID. Its containers sit on a bridge of this run's own (a name and a /24 no other interface or route uses,
  chosen under a lock), never on a docker0 that another engine may be using; the bridge is deleted afterwards.
  The folders under /run that dockerd and containerd create are removed by the last run to stop, when a run
  started by these tests created them and no other engine is running. SAM's own temporary files go to a folder of
  this run's, removed at the end.
* The image (tests/sam_local/image/): a Debian trixie root filesystem from Debian's archive (mmdebstrap), awslambdaric
  and boto3 (which AWS's runtime ships) from PyPI, the runtime interface emulator shipped in the aws-sam-cli package.
  Tagged by a hash of its recipe, so it is built again only when the recipe changes.
* The build: docs/deploy-and-pipelines.md's x86_64 path as typed, `sam build --parameter-overrides
  Architecture=x86_64` in a copy of the project, and every `sam local` command with that flag (arm64 needs qemu
  binfmt in the engine, with cold starts past the functions' Timeouts).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import ipaddress
import json
import os
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import zipfile
from collections.abc import Iterator
from pathlib import Path

from processes import stop_group
from support import FUNCTIONS_WHEELHOUSE, documented_block, project_copy, sam_build_environment, sam_cli_environment

ROOT = Path(__file__).resolve().parents[2]
CACHE = ROOT / ".cache" / "sam-local"
IMAGE_RECIPE = Path(__file__).resolve().parent / "image"
SAM = ROOT / ".venv-sam" / "bin" / "sam"
AWSLAMBDARIC = "awslambdaric==4.2.2"
BOTO3 = "boto3==1.44.8"  # AWS's python3.13 runtime ships the AWS SDK; the pipeline's merge uses it
SUITE = "trixie"
MIRROR = "http://deb.debian.org/debian"
SAM_LABEL = "sam.cli.container.type"


TOOL_PATH = os.pathsep.join([os.environ.get("PATH", ""), "/usr/local/sbin", "/usr/sbin", "/sbin"])
SAM_TMP = Path(tempfile.gettempdir()) / f"chrf-sam-local-{os.getpid()}"  # SAM's temporary files, removed at the end
SAM_APP_DIR = SAM_TMP / "sam-cli"  # SAM's settings (support.sam_cli_environment: no version check against PyPI)
# What dockerd and its containerd create outside their own folders (dockerd at its start, the shims with the first
# container), and the mark a run leaves in one it found missing, for the last engine to stop to remove.
ENGINE_FOLDERS = {Path("/run/docker"): [Path("/run/docker/plugins")],
                  Path("/run/containerd"): [Path("/run/containerd/s")]}
CREATED_MARK = ".created-by-chrf-components-tests"
BRIDGE_NETWORKS = [ipaddress.ip_network(f"172.{b}.{c}.0/24") for b in range(18, 32) for c in range(256)]


class Unavailable(Exception):
    """A tool the SAM CLI tests need is missing or cannot start here: one line saying which."""


def tool(name: str) -> str | None:
    """A program's path, looked for in the sbin folders too (dockerd, docker-proxy and ip live there)."""
    return shutil.which(name, path=TOOL_PATH)


def missing_tools() -> str | None:
    """What the SAM CLI tests lack before anything is started, all of it in one line (None when nothing obvious is
    missing)."""
    packages, other = [], []
    engine_running = tool("docker") is not None and answers(os.environ.get("DOCKER_HOST",
                                                                           "unix:///var/run/docker.sock"))
    if tool("docker") is None or (not engine_running and tool("dockerd") is None):
        packages.append("docker.io")
    elif not engine_running:
        if os.geteuid() != 0:
            other.append("no container engine running, and starting dockerd needs root")
        if tool("ip") is None:
            packages.append("iproute2")
    if tool("mmdebstrap") is None:
        packages.append("mmdebstrap")
    if packages:
        other.insert(0, f"missing Debian packages {' '.join(packages)} (apt-get install {' '.join(packages)}; make "
                        f"test installs them as root or with sudo)")
    if not (ROOT / ".aws-sam" / "build" / "template.yaml").exists():
        other.append("no .aws-sam/build (make build)")
    return "; ".join(other) or None


def run(*command: str, env: dict[str, str] | None = None, timeout: float = 600, **options: object) -> str:
    completed = subprocess.run(command, capture_output=True, text=True, env=env, timeout=timeout, **options)
    if completed.returncode:
        raise RuntimeError(f"{' '.join(command[:4])}...: exit {completed.returncode}\n{completed.stderr[-3000:]}")
    return completed.stdout


def docker_env(host: str) -> dict[str, str]:
    """The environment of docker and SAM commands (SAM_TMP is made, and removed, by engine()): SAM asks no one for a
    newer version of itself."""
    return {**os.environ, "DOCKER_HOST": host, "DOCKER_BUILDKIT": "0", "TMPDIR": str(SAM_TMP), "PATH": TOOL_PATH,
            "SAM_CLI_TELEMETRY": "0", "__SAM_CLI_APP_DIR": str(SAM_APP_DIR)}


def answers(host: str) -> bool:
    try:
        return subprocess.run(["docker", "info", "--format", "{{.ServerVersion}}"], env=docker_env(host),
                              capture_output=True, timeout=20).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def ip(*arguments: str) -> str:
    return run(tool("ip") or "ip", *arguments)


def networks_in_use() -> list[ipaddress.IPv4Network]:
    """Every IPv4 network an interface address or a route of this machine covers."""
    used = [ipaddress.ip_interface(f"{entry['local']}/{entry['prefixlen']}").network
            for link in json.loads(ip("-j", "-4", "addr", "show")) for entry in link.get("addr_info", [])]
    for route in json.loads(ip("-j", "-4", "route", "show", "table", "all")):
        destination = route.get("dst", "")
        if destination and destination != "default" and destination[0].isdigit():
            with contextlib.suppress(ValueError):
                used.append(ipaddress.ip_network(destination, strict=False))
    return used


@contextlib.contextmanager
def own_bridge() -> Iterator[str]:
    """A bridge of this run's own, up, with the first free /24 of BRIDGE_NETWORKS: its name, until the block ends.

    Chosen and created under a lock on /run (no lock file is left behind), so that two runs never pick the same."""
    name = f"chrf{os.getpid()}"[:15]
    lock = os.open("/run", os.O_RDONLY)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX)
        used = networks_in_use()
        free = next((net for net in BRIDGE_NETWORKS if not any(net.overlaps(other) for other in used)), None)
        if free is None:
            raise Unavailable("no free /24 in 172.18-31.x.x for a bridge of this run's own")
        ip("link", "add", "name", name, "type", "bridge")
        try:
            ip("addr", "add", f"{free.network_address + 1}/{free.prefixlen}", "dev", name)
            ip("link", "set", name, "up")
        except BaseException:
            ip("link", "delete", name)
            raise
    finally:
        os.close(lock)  # releases the lock
    try:
        yield name
    finally:
        subprocess.run([tool("ip") or "ip", "link", "delete", name], capture_output=True)


def engine_processes() -> list[int]:
    """PIDs of the dockerd and containerd processes running on this machine (any engine's)."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            with contextlib.suppress(OSError):
                if Path("/proc", entry, "comm").read_text().strip() in ("dockerd", "containerd"):
                    found.append(int(entry))
    return found


def processes_naming(marker: str) -> list[int]:
    """PIDs of the live processes whose command line holds ``marker`` (this engine's folder: containerd and its
    shims, which dockerd starts in process groups of their own)."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit() and int(entry) != os.getpid():
            with contextlib.suppress(OSError, IndexError):
                if marker in Path("/proc", entry, "cmdline").read_bytes().decode("utf-8", "replace") and Path(
                        "/proc", entry, "stat").read_text().rsplit(")", 1)[1].split()[0] != "Z":
                    found.append(int(entry))
    return found


def end_processes_naming(marker: str, grace: float) -> None:
    """Wait up to ``grace`` seconds for them to end as dockerd stops them, then SIGKILL what is left."""
    deadline = time.monotonic() + grace
    while processes_naming(marker) and time.monotonic() < deadline:
        time.sleep(0.2)
    for pid in processes_naming(marker):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def release_engine_folders(missing_before: list[Path]) -> None:
    """Remove the folders under /run that engines started by these tests created, once no engine runs any more.

    Those this run found missing are marked; while another engine runs (another run's, or the machine's) nothing is
    removed, and the last run to stop removes every marked folder, as far as it is empty."""
    for top in missing_before:
        with contextlib.suppress(OSError):
            if top.is_dir():
                (top / CREATED_MARK).touch()
    if engine_processes():
        return
    for top, inside in ENGINE_FOLDERS.items():
        with contextlib.suppress(OSError):
            (top / CREATED_MARK).unlink()
            for folder in [*inside, top]:
                folder.rmdir()


@contextlib.contextmanager
def engine() -> Iterator[str]:
    """A container engine's DOCKER_HOST: one already running, else dockerd started (and stopped) here."""
    if tool("docker") is None:
        raise Unavailable("no docker client (Debian: apt-get install docker.io)")
    existing = os.environ.get("DOCKER_HOST", "unix:///var/run/docker.sock")
    if answers(existing):
        SAM_TMP.mkdir(exist_ok=True)
        sam_cli_environment(SAM_APP_DIR)
        try:
            yield existing
        finally:
            shutil.rmtree(SAM_TMP, ignore_errors=True)
        return
    dockerd = tool("dockerd")
    if dockerd is None:
        raise Unavailable("no container engine running and no dockerd to start (Debian: apt-get install docker.io)")
    if os.geteuid() != 0:
        raise Unavailable("no container engine running, and starting dockerd needs root")
    missing_before = [top for top in ENGINE_FOLDERS if not top.exists()]
    runtime = Path(tempfile.mkdtemp(prefix="chrf-dockerd-"))  # short: the socket's path has a length limit
    SAM_TMP.mkdir(exist_ok=True)
    sam_cli_environment(SAM_APP_DIR)
    data = CACHE / "docker"
    data.mkdir(parents=True, exist_ok=True)
    # The images stay cached; the networks an earlier dockerd stored would be restored with their bridges (docker0).
    shutil.rmtree(data / "network", ignore_errors=True)
    host = f"unix://{runtime}/docker.sock"
    try:
        with own_bridge() as bridge, (runtime / "dockerd.log").open("w") as log:
            daemon = subprocess.Popen(
                [dockerd, "--data-root", str(data), "--exec-root", str(runtime / "exec"), "--pidfile",
                 str(runtime / "dockerd.pid"), "--host", host, "--bridge", bridge, "--iptables=false",
                 "--ip-masq=false", "--ip-forward=false", "--storage-driver", "overlay2"],
                stdout=log, stderr=log, start_new_session=True, env={**os.environ, "PATH": TOOL_PATH})
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
                end_processes_naming(str(runtime), 30)
    finally:
        shutil.rmtree(runtime, ignore_errors=True)
        shutil.rmtree(SAM_TMP, ignore_errors=True)
        release_engine_folders(missing_before)


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
    if tool("mmdebstrap") is None:
        raise Unavailable("no mmdebstrap to build the Lambda image (Debian: apt-get install mmdebstrap)")
    CACHE.mkdir(parents=True, exist_ok=True)
    rootfs = CACHE / f"rootfs-{SUITE}-python3.13.tar"
    if not rootfs.exists():
        partial = rootfs.with_name(rootfs.name + ".partial.tar")  # mmdebstrap writes the format its name ends in
        run(tool("mmdebstrap") or "mmdebstrap", "--variant=essential", "--include=python3.13,libstdc++6", SUITE,
            str(partial), MIRROR, timeout=900)
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


X86_64_MARKER = ("<!-- not run by the suite: it needs a container engine; tests/sam_local/test_sam_cli.py runs it "
                 "for every event -->")
ARCHITECTURE_FLAG = ["--parameter-overrides", "Architecture=x86_64"]


def x86_64_commands() -> tuple[str, str]:
    """docs/deploy-and-pipelines.md's x86_64 path, as typed: its `sam build` and its `sam local invoke`."""
    build, invoke = documented_block("docs/deploy-and-pipelines.md", X86_64_MARKER)
    assert shlex.split(build) == ["sam", "build", *ARCHITECTURE_FLAG], build
    assert shlex.split(invoke)[-2:] == ARCHITECTURE_FLAG, invoke
    return build, invoke


def x86_64_build(work: Path) -> Path:
    """A copy of the project where the documented `sam build --parameter-overrides Architecture=x86_64` ran (the
    functions' packages installed for x86_64 from make wheelhouse's, offline): the project folder."""
    if not FUNCTIONS_WHEELHOUSE.is_dir():
        raise Unavailable("no functions' wheelhouse for sam build (make wheelhouse)")
    project = work / "project"
    project_copy(project)
    build, _ = x86_64_commands()
    done = subprocess.run(build, shell=True, cwd=project, env=sam_build_environment(work), capture_output=True,
                          text=True, timeout=600)
    if done.returncode != 0:
        raise RuntimeError(f"$ {build}\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}")
    return project


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextlib.contextmanager
def sam_server(command: str, project: Path, tag: str, host: str, log: Path) -> Iterator[int]:
    """`sam local start-lambda` or `start-api` on 127.0.0.1 with warm containers, in the project built for x86_64
    with the same flag: its port, until the block ends."""
    port = free_port()
    with log.open("w") as output:
        process = subprocess.Popen(
            [str(SAM), "local", command, *ARCHITECTURE_FLAG, "--invoke-image", tag, "--skip-pull-image",
             "--host", "127.0.0.1", "--port", str(port), "--warm-containers", "LAZY", "--container-host",
             "127.0.0.1", "--container-host-interface", "127.0.0.1"],
            env=docker_env(host), stdout=output, stderr=output, start_new_session=True, cwd=project)
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
