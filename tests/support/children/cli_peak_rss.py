"""Runs ``robotgate ARGS`` and writes the process's peak resident memory (KiB) to stderr as
``MAXRSS N``, then exits with the command's status.  The peak is VmHWM, not ru_maxrss: Linux
carries into ru_maxrss the peak of the address space a process leaves at exec, and the child is
spawned from a test process whose own peak is whatever earlier tests made it.

    python tests/support/children/cli_peak_rss.py ARGS...
"""

from __future__ import annotations

import re
import resource
import sys

from robotgate.cli import main

if __name__ == "__main__":
    code = main(sys.argv[1:])
    try:
        with open("/proc/self/status") as f:
            found = re.search(r"VmHWM:\s*(\d+)", f.read())
        peak = int(found[1]) if found else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    except OSError:
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    sys.stderr.write(f"MAXRSS {peak}\n")
    sys.exit(code)
