"""What the Python benches (limits.py, upstreams.py, console.py) share about
the processes they start and measure: a free loopback port, waiting for a
gateway to be ready, and a process's resident memory and CPU time (Linux
`/proc`). Imported by the scripts, which run as `python3 benches/NAME.py`
(their folder is on the path)."""

import os
import socket
import time
import urllib.error
import urllib.request
from pathlib import Path


def free_port():
    """A loopback port nothing listens on now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_http(url, seconds=30.0):
    """Until `url` answers (any HTTP status), or exits the bench."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        try:
            with urllib.request.urlopen(url, timeout=2):
                return
        except urllib.error.HTTPError:
            return
        except OSError:
            time.sleep(0.1)
    raise SystemExit(f"{url} did not answer within {seconds:.0f} s")


def wait_ready(base, seconds=30.0):
    """Until the gateway at `base` answers `/readyz` 200, or exits the bench."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        try:
            with urllib.request.urlopen(f"{base}/readyz", timeout=2):
                return
        except OSError:
            time.sleep(0.1)
    raise SystemExit(f"{base} never became ready")


def rss_kib(pid):
    """Resident memory of process `pid`, KiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def cpu_seconds(pid):
    """User and system CPU time of process `pid`, seconds."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
