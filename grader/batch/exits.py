"""How the batch and merge commands end: EXIT_DONE when every submission was graded, whatever
the verdicts; EXIT_USAGE on a usage error (UsageError, whose message says why and what to do) or
when a submission ended in grader_error. A batch stopped by signal N exits with 128+N."""

EXIT_DONE, EXIT_USAGE = 0, 2


class UsageError(Exception):
    """The command cannot run as asked; the message says why and what to do."""
