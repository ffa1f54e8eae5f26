"""A notebook's CPU seconds in its cache record count its kernel and the workers the kernel started."""

from __future__ import annotations

import subprocess
import sys

from iclmem.book.build import cpu_seconds

BURN = "import time\nt = time.process_time()\nwhile time.process_time() - t < {s}: pass\n"


def test_cpu_seconds_count_a_child_and_its_own_children() -> None:
    # the child burns 0.3 s itself and waits for a grandchild that burns 0.5 s: a kernel and its worker
    child = BURN.format(s=0.3) + (
        f"import subprocess, sys\nsubprocess.run([sys.executable, '-c', {BURN.format(s=0.5)!r}], check=True)\n"
    )
    before = cpu_seconds()
    subprocess.run([sys.executable, "-c", child], check=True)
    spent = cpu_seconds() - before
    assert spent >= 0.8  # both processes, not the child alone (0.3 s) or the grandchild alone (0.5 s)


def test_cpu_seconds_leave_out_a_child_still_running() -> None:
    before = cpu_seconds()
    child = subprocess.Popen([sys.executable, "-c", BURN.format(s=0.5)])
    while_running = cpu_seconds() - before
    child.wait()
    after_wait = cpu_seconds() - before
    assert while_running < 0.3 <= after_wait  # counted once the child has been waited for, as a kernel is at shutdown
