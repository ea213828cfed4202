"""A training rank must not outlive its launcher.

torchrun starts each rank in a session of its own, so when the launcher dies without passing a signal on
(SIGKILL, an OOM kill, a lost terminal) the ranks keep training, and a rerun of the same command would
then write into the same run directory beside them. Asking the kernel to send SIGKILL when the parent
goes away (Linux `PR_SET_PDEATHSIG`) ties each rank to its launcher. Elsewhere this is a no-op.
"""
from __future__ import annotations

import ctypes
import os
import signal
import sys

PR_SET_PDEATHSIG = 1


def die_with_parent() -> bool:
    """Arrange SIGKILL for this process when its parent exits; True when the kernel agreed."""
    if not sys.platform.startswith("linux"):
        return False
    parent = os.getppid()
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) != 0:
            return False
    except (OSError, AttributeError):
        return False
    if os.getppid() != parent:  # the parent died before the request: nobody will send the signal
        os.kill(os.getpid(), signal.SIGKILL)
    return True
