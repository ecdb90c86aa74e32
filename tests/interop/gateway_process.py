"""A `sezzlee serve` process for the interop tests that start their own
gateway (test_python_listen.py, test_python_shaped.py): a free loopback
port, the log in the test's folder, ready when /readyz answers 200."""

import os
import socket
import subprocess
import time
import urllib.request

import pytest

BIN = os.environ.get("SEZZLEE_BIN")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start(tmp_path, folder, *flags):
    """`sezzlee serve` on `folder` with `flags`: (base URL, process). Skips
    (fails under CI) when SEZZLEE_BIN is not set."""
    if not BIN:
        (pytest.fail if os.environ.get("CI") else pytest.skip)("SEZZLEE_BIN is not set")
    port = free_port()
    log = open(tmp_path / "sezzlee.log", "wb")
    process = subprocess.Popen(
        [BIN, "serve", "--catalogs", str(folder), "--listen", f"127.0.0.1:{port}", *flags],
        stdout=log, stderr=subprocess.STDOUT,
    )
    log.close()
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while True:
        assert process.poll() is None, (tmp_path / "sezzlee.log").read_text()
        try:
            with urllib.request.urlopen(f"{base}/readyz", timeout=2) as response:
                if response.status == 200:
                    return base, process
        except OSError:
            pass
        assert time.monotonic() < deadline, "sezzlee did not become ready"
        time.sleep(0.1)


def stop(process):
    if process.poll() is None:
        process.kill()
    process.wait()
