"""Starting and walling in the child that runs a submission.

    backends.py     the registry: each backend by name, what it promises, why it cannot run here
    child.py        what every child shares: the checked channel, the watchdog, the exit status
    output.py       the child's stdout and stderr, drained and capped
    workdir.py      the private folder a child is given: the child-side code and the submission
    process.py      a child as a local process (bubblewrap, uid, process, plain)
    bubblewrap.py   the bubblewrap command line: namespaces, binds, read-only mounts
    boxes.py        box uids: a root grader's child is a host uid of its own
    uid.py          the uid backend: the dedicated runner user, inside a container
    limits.py       rlimits, the cgroup and CPU accounting
    seccomp.py      the system calls a child may not make
    zygote.py       the warm pool: a sandboxed server with torch imported forks one child per submission
    docker_child.py a child in a container of its own (--isolation docker)

What each wall assumes of the others: docs/threat-model.md. This package never imports the
judge, the batch, the entry points or the report formats; the child's own side is grader/child/.
"""


class IsolationUnavailable(Exception):
    """The isolation level that was asked for cannot be had on this machine."""
