import os
import sys

from grader.cli import EXIT_USAGE, main, unwritable_stdout


def leave(status: int) -> None:
    """Flush what was written, then end the process without the interpreter's teardown: with torch
    loaded it takes about half a second, and everything the grader must finish (the report, the
    child, its cgroup, the temporary folder) is finished before main returns."""
    try:
        sys.stdout.flush()
    except OSError as error:
        unwritable_stdout(error)
        status = EXIT_USAGE
    try:
        sys.stderr.flush()
    except OSError:
        pass
    os._exit(status)


leave(main())
