"""What `make test` sets up on a Debian machine: the packages its tests need (docker.io, mmdebstrap,
qemu-user-static) are installed when it can (as root, or with sudo -n); where it cannot, one line names every missing
package and the command that installs them, and the run goes on (their tests then skip saying why)."""

import os
import shutil
import subprocess
import tempfile

import pytest
from support import ROOT


def test_without_root_or_sudo_make_names_every_missing_package_in_one_line_and_goes_on(tmp_path):
    if shutil.which("dpkg") is None:
        pytest.skip("not in this run: not a Debian or Ubuntu machine (make test says so in one line there)")
    packages = "coreutils chrf-no-such-package-a chrf-no-such-package-b"  # the first is installed on every Debian
    folder = tempfile.mkdtemp()  # the Makefile where any user may read it (a clone's folder may be root's alone)
    try:
        os.chmod(folder, 0o755)
        shutil.copy(ROOT / "Makefile", folder)
        command = ["make", "-s", "-C", folder, "setup-system", f"SYSTEM_PACKAGES={packages}"]
        if os.geteuid() == 0:  # as a user who may not install (no sudo on this PATH)
            command = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", *command]
        done = subprocess.run(command, env={"PATH": "/usr/bin:/bin", "HOME": folder, "LANG": "C.UTF-8"},
                              capture_output=True, text=True, timeout=120)
    finally:
        shutil.rmtree(folder)
    assert done.returncode == 0 and done.stderr == ""
    assert done.stdout == ("make test: missing Debian packages chrf-no-such-package-a chrf-no-such-package-b (their "
                           "tests will skip): sudo apt-get install chrf-no-such-package-a chrf-no-such-package-b\n")


def test_make_run_ends_by_saying_that_every_sample_event_was_answered_as_its_expected_file():
    done = subprocess.run(["make", "-s", "-C", str(ROOT), "run"], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    lines = done.stdout.rstrip("\n").splitlines()
    events = sorted(path for path in (ROOT / "events").glob("*.json") if not path.name.endswith(".expected.json"))
    assert lines[-1] == f"{len(events)}/{len(events)} sample events answered exactly as events/*.expected.json"
    assert len(events) == 10 and all(f"  events/{path.name} " in done.stdout for path in events)
    assert "== the response to events/direct-invoke.json" in done.stdout and '  "score": "25.000000",' in done.stdout
