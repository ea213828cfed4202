"""torchrun without its traceback: ``python -m train.launch [torchrun options] -m train.pretrain ARGS``.

``make pretrain`` launches the ranks through this. It is torchrun itself (``torch.distributed.run``), run in this
process; the one difference is what a failed rank leaves on the screen. A run the trainer refuses (a changed
shard, a bad manifest, ``STEPS=0``) prints its own clear message on rank 0 and exits with status 2; torchrun
would follow it with some 25 lines of ``ChildFailedError`` traceback. Here a failure prints one line naming
the rank and its exit status (or signal), and the launcher exits with the rank's status.
"""
from __future__ import annotations

import logging
import signal
import sys


def exit_status(exitcode: int) -> tuple[int, str]:
    """(status for the shell, how the rank ended)."""
    if exitcode < 0:
        try:
            name = signal.Signals(-exitcode).name
        except ValueError:
            name = f"signal {-exitcode}"
        return 128 - exitcode, f"was killed by {name}"
    return (exitcode if 0 < exitcode < 256 else 1), f"exited with status {exitcode}"


def main(argv=None) -> int:
    from torch.distributed.elastic.multiprocessing.errors import ChildFailedError
    from torch.distributed.run import parse_args, run

    args = parse_args(argv)
    # The agent logs each failed rank at ERROR with its traceback file; the summary below says it once.
    logging.getLogger("torch.distributed.elastic.multiprocessing.api").setLevel(logging.CRITICAL)
    try:
        run(args)
    except ChildFailedError as e:
        rank, failure = e.get_first_failure()
        status, how = exit_status(failure.exitcode)
        others = len(e.failures) - 1
        print(f"launch: rank {rank} {how}" + (f" ({others} more rank(s) failed)" if others else "")
              + "; its own message is above.", file=sys.stderr, flush=True)
        return status
    return 0


if __name__ == "__main__":
    sys.exit(main())
