"""The walls themselves: what bubblewrap exposes and lets be written, the seccomp filter, the
cgroup's life, whose processes the uid backend may kill, the secret kept from other processes,
how a backend is chosen."""

import contextlib
import functools
import json
import os
import pwd
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from grader import sandbox
from grader.sandbox import backends, boxes, bubblewrap, limits
from grader.sandbox import seccomp as filters
from grader.sandbox import uid as uid_backend
from grader.sandbox.backends import backend_named
from grader.sandbox.workdir import prepare_files
from grader.spec import ROOT, load_spec
from tests.grading import SUBMISSIONS, uid_backend_problem

LIMITS = load_spec().limits


BOX = boxes.BOX_UID_BASE  # a box uid, for the commands built but not run


def bind_sources(command: list[str]) -> list[str]:
    return [command[i + 1] for i, word in enumerate(command) if word in ("--ro-bind", "--bind")]


@pytest.fixture(params=["root", "not root"])
def command(request, monkeypatch, tmp_path) -> list[str]:
    """The single child's bubblewrap command as a root grader builds it (a box uid) and as any
    other grader does (its own uid, through a user namespace)."""
    if request.param == "not root":
        monkeypatch.setattr(bubblewrap.os, "geteuid", lambda: 1000)
    uid = BOX if request.param == "root" else None
    return bubblewrap.bubblewrap_command(["python"], tmp_path / "kit", tmp_path / "submission", uid=uid)


def test_bubblewrap_never_exposes_the_repository_the_reference_or_the_grader(command, tmp_path):
    sources = [Path(s).resolve() for s in bind_sources(command)]
    for secret in (ROOT, ROOT / "reference", ROOT / "grader", ROOT / "problem", ROOT / "tests"):
        assert not any(s == secret or secret.is_relative_to(s) for s in sources), secret
    assert "--bind" not in command  # nothing of the host is writable inside
    assert {"--unshare-pid", "--die-with-parent", "--new-session", "--cap-drop"} <= set(command) or "--unshare-all" in command
    first_bind = command.index("--ro-bind")
    assert command.index("--tmpfs") < first_bind  # else a venv under /tmp would be hidden by the tmpfs
    assert [str(tmp_path / "kit"), bubblewrap.SANDBOX_KIT] == command[command.index(str(tmp_path / "kit")) :][:2]
    # bwrap makes the parents of a mount point 0700 by itself: every one is made 0755 first
    made = {command[i + 3] for i, word in enumerate(command[:first_bind]) if word == "--perms" and command[i + 1 : i + 3] == ["0755", "--dir"]}
    for destination in [command[i + 2] for i, word in enumerate(command) if word == "--ro-bind"]:
        assert {str(parent) for parent in Path(destination).parents[:-1]} <= made, destination


def test_a_root_grader_runs_bubblewrap_without_a_user_namespace_and_the_child_as_a_box_uid_without_capabilities(command):
    wrapper, child = command[: command.index("--") + 1], command[command.index("--") + 1 :]
    if "--unshare-all" in wrapper:  # not root: the grader's own uid, through an unprivileged user namespace
        assert {"--unshare-user", "--disable-userns"} <= set(wrapper) and child == ["python"]
        return
    assert "--unshare-user" not in wrapper and "--userns" not in wrapper  # a user namespace of root's would make the child host root
    assert {"--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts"} <= set(wrapper)
    kept = [wrapper[i + 1] for i, word in enumerate(wrapper) if word == "--cap-add"]
    assert wrapper[wrapper.index("--cap-drop") + 1] == "ALL" and kept == list(bubblewrap.SETPRIV_CAPABILITIES)
    assert child[:5] == ["setpriv", f"--reuid={BOX}", f"--regid={BOX}", "--clear-groups", "--inh-caps=-all"]
    assert {"--ambient-caps=-all", "--bounding-set=-all", "--no-new-privs"} <= set(child[: child.index("--")]) and child[-2:] == ["--", "python"]


@pytest.mark.needs_root
def test_a_root_grader_never_builds_a_command_for_its_own_uid(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("the grader is not root here")
    with pytest.raises(ValueError, match="box uid"):
        bubblewrap.bubblewrap_command(["python"], tmp_path / "kit", tmp_path / "submission")


def test_bubblewrap_sizes_every_tmpfs_and_makes_the_root_read_only_after_the_last_mount(command):
    mounts = [i for i, word in enumerate(command) if word in ("--ro-bind", "--bind", "--tmpfs", "--dev", "--proc", "--symlink")]
    for i in mounts:
        if command[i] == "--tmpfs":
            assert command[i - 2] == "--size", f"{command[i + 1]} has no size"
    covered = [word for folder in bubblewrap.covered_folders() for word in ("--remount-ro", folder)]  # (a checkout under /tmp)
    last = ["--remount-ro", "/dev", "--remount-ro", "/dev/pts", "--remount-ro", "/proc", "--remount-ro", "/"]
    assert command[mounts[-1] + 3 : mounts[-1] + 11 + len(covered)] == covered + last


@contextlib.contextmanager
def sandboxed(tmp_path: Path, code: str, seccomp: bool = False, **popen: Any) -> Iterator[subprocess.Popen]:
    """`code` running in the real sandbox (rlimits as for a submission; a box uid of its own where
    the grader is root)."""
    (tmp_path / "kit").mkdir(exist_ok=True)
    (tmp_path / "submission").mkdir(exist_ok=True)
    fd = filters.seccomp_fd() if seccomp else None
    box = boxes.take_box_uid() if os.geteuid() == 0 else None
    try:
        command = bubblewrap.bubblewrap_command(
            [sys.executable, "-I", "-S", "-c", code], tmp_path / "kit", tmp_path / "submission", fd, box.uid if box else None
        )
        walls = functools.partial(limits.apply_limits_in_child, LIMITS, [], limits.PIDS_MAX if box else None, box.uid if box else None)
        with subprocess.Popen(command, pass_fds=[fd] if fd is not None else [], preexec_fn=walls, **popen) as process:
            try:
                yield process
            finally:
                process.kill()
    finally:
        if fd is not None:
            os.close(fd)
        if box is not None:
            box.release()


def run_in_sandbox(tmp_path: Path, code: str, seccomp: bool = False) -> str:
    """Run `code` in the real sandbox and return its stdout."""
    with sandboxed(tmp_path, code, seccomp, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as process:
        stdout, stderr = process.communicate(timeout=60)
    assert process.returncode == 0, stderr
    return stdout


needs_bubblewrap = pytest.mark.skipif(not bubblewrap.bubblewrap_works(), reason="needs bubblewrap (CI installs it)")

WRITE_PROBE = """
import json, os
def fill(folder, mib):
    written = 0
    try:
        for index in range(mib // 8):
            with open(os.path.join(folder, f"probe-{index}"), "wb") as f:
                for _ in range(8):
                    f.write(b"x" * (1 << 20)); f.flush(); written += 1
    except OSError as error:
        return written, error.strerror
    return written, "all written"
places = ["/", "/dev", "/dev/shm", "/tmp", "/sandbox", "/sandbox/kit", "/sandbox/submission", "/usr", "/proc/self", "/proc/sys/kernel"]
report = {place: fill(place, MIB) for place in places}
with open("/dev/null", "wb") as f:
    report["/dev/null"] = (f.write(b"x"), "written")
mounts = [line.split(" - ") for line in open("/proc/self/mountinfo")]
report["mounts"] = [(left.split()[4], left.split()[5], right.split()[0], right.split()[2]) for left, right in mounts]
print(json.dumps(report))
"""


@pytest.mark.sandbox
@needs_bubblewrap
def test_inside_bubblewrap_only_the_sized_tmp_and_dev_shm_take_writes(tmp_path):
    tries = bubblewrap.TMPFS_MIB + 24  # more than any writable place may hold
    report = json.loads(run_in_sandbox(tmp_path, WRITE_PROBE.replace("MIB", str(tries))))
    assert report.pop("/tmp") == [bubblewrap.TMPFS_MIB, "No space left on device"]
    assert report.pop("/dev/shm") == [bubblewrap.SHM_MIB, "No space left on device"]
    assert report.pop("/dev/null") == [1, "written"]
    mounts = report.pop("mounts")
    for place, (written, why) in report.items():
        assert written == 0 and why != "all written", (place, written, why)
    # Every writable mount is a sized tmpfs, the kernel's own proc or devpts, or a device node.
    for target, options, fs_type, super_options in mounts:
        if "rw" in options.split(","):
            sized = fs_type == "tmpfs" and "size=" in super_options
            assert sized or fs_type in ("proc", "devpts") or target in ("/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty"), (
                target
            )


INSTALLATION_PROBE = """
import json, os, sys
top, installation = sys.argv[1], sys.argv[2]
tried = {}
for name, attempt in [
    ("make a file in the folder", lambda: open(os.path.join(top, "made"), "x").close()),
    ("make a file in the installation", lambda: open(os.path.join(installation, "made"), "x").close()),
    ("move the folder", lambda: os.rename(top, top + "-moved")),
    ("remove the folder", lambda: os.rmdir(top)),
    ("change the folder's mode", lambda: os.chmod(top, 0o777)),
]:
    try:
        attempt()
        tried[name] = "done"
    except OSError as error:
        tried[name] = error.strerror
mounts = {line.split()[4]: line.split()[5].split(",") for line in open("/proc/self/mountinfo")}
print(json.dumps({"tried": tried, "tmp": sorted(os.listdir("/tmp")), "top": sorted(os.listdir(top)), "mounted": mounts.get(top)}))
"""


@pytest.mark.sandbox
@needs_bubblewrap
def test_an_installation_under_tmp_is_a_read_only_mount_point_the_child_cannot_move_or_write_in(tmp_path, monkeypatch):
    # As a checkout and its .venv under /tmp: the child's private /tmp would cover them, and a child
    # that owned the folders bubblewrap makes could move them and put its own torch in their place.
    with tempfile.TemporaryDirectory(dir="/tmp", prefix="mlm-grader-installation-") as top:
        installation = Path(top, "clone", ".venv")
        installation.mkdir(parents=True)
        (Path(top) / "reference.py").write_text("hidden = True\n")  # beside the installation, as a checkout's hidden files are
        real = bubblewrap.python_installations()
        monkeypatch.setattr(bubblewrap, "python_installations", lambda: [*real, str(installation)])
        assert top in bubblewrap.covered_folders()
        code = INSTALLATION_PROBE.replace("sys.argv[1], sys.argv[2]", f"{top!r}, {str(installation)!r}")
        report = json.loads(run_in_sandbox(tmp_path, code))
        assert not any(outcome == "done" for outcome in report["tried"].values()), report
        # A read-only mount point of its own: what holds where the child's uid owns the private /tmp
        # (a grader that is not root), not only where the folder is root's and /tmp sticky.
        assert report["mounted"] and "ro" in report["mounted"], report
        assert report["top"] == ["clone"]  # the installation's path alone, not what lies beside it
        assert report["tmp"] == sorted(os.path.basename(folder) for folder in bubblewrap.covered_folders() if folder.startswith("/tmp/"))
        assert sorted(os.listdir(top)) == ["clone", "reference.py"] and not (installation / "made").exists()


def cgroups_available() -> bool:
    probe = limits.Cgroup.create(LIMITS, "probe")
    if probe:
        probe.remove()
    return probe is not None


@pytest.mark.needs_root
@pytest.mark.skipif(not cgroups_available(), reason="needs root and a writable cgroup tree (CI has both)")
def test_cgroup_is_created_with_its_limits_and_removed():
    cgroup = limits.Cgroup.create(LIMITS, "lifecycle-test")
    assert cgroup is not None and all(d.exists() for d in cgroup.dirs)
    limit_file = cgroup.memory / ("memory.max" if cgroup.v2 else "memory.limit_in_bytes")
    assert int(limit_file.read_text()) == LIMITS.memory_mib * limits.MIB
    assert int((cgroup.pids / "pids.max").read_text()) == limits.PIDS_MAX
    cgroup.remove()
    assert not any(d.exists() for d in cgroup.dirs)


def test_backend_choice():
    with pytest.raises(sandbox.IsolationUnavailable):
        backends.choose_backend("no-such-level")
    assert backends.choose_backend("process") == "process"
    if bubblewrap.bubblewrap_works():
        assert backends.choose_backend("auto") == backends.choose_backend("strict") == "bubblewrap"


def test_only_the_backends_that_are_a_security_boundary_promise_it():
    """What skips the static check and keeps a secret seed is declared by each backend; a backend
    that declares nothing promises nothing."""
    promises = {name: (backend_named(name).strong, backend_named(name).keeps_secret) for name in backends.REGISTRY}
    assert promises == {"bubblewrap": (True, True), "uid": (True, True), "docker": (True, True), "process": (False, False), "plain": (False, False)}
    assert (backends.Backend.strong, backends.Backend.keeps_secret) == (False, False)
    assert backend_named("uid").max_jobs == 1 and backend_named("bubblewrap").max_jobs is None


@pytest.mark.parametrize(
    ("missing", "outcome"),
    [
        ("grader.sandbox.uid", "the uid backend is not part of this copy of the grader"),  # the kit leaves it out
        ("grader.sandbox.limits", ImportError),  # the grader's own fault: never taken for an absent backend
        (None, ImportError),
    ],
)
def test_a_backend_that_cannot_be_imported_is_unavailable_only_when_its_module_is_absent(monkeypatch, missing, outcome):
    def import_module(name: str) -> None:
        raise ImportError(f"No module named {missing!r}", name=missing)

    monkeypatch.setattr(backends.importlib, "import_module", import_module)
    backend_named.cache_clear()
    try:
        if outcome is ImportError:
            with pytest.raises(ImportError):
                backend_named("uid")
        else:
            with pytest.raises(sandbox.IsolationUnavailable, match=outcome):
                backend_named("uid")
    finally:
        backend_named.cache_clear()


SOCKET_PROBE = """
import ctypes, errno, json, os, socket
def attempt(make):
    try:
        make().close()
        return "allowed"
    except OSError as error:
        return errno.errorcode[error.errno]
# Linux's numbers: Python's socket module lacks some names on some builds
families = {"AF_INET": 2, "AF_INET6": 10, "AF_PACKET": 17, "AF_NETLINK": 16, "AF_VSOCK": 40, "AF_BLUETOOTH": 31, "AF_ALG": 38,
            "AF_CAN": 29, "AF_TIPC": 30, "AF_RDS": 21, "AF_KEY": 15, "AF_XDP": 44}
report = {}
for name, family in families.items():
    for kind in (socket.SOCK_STREAM, socket.SOCK_DGRAM, socket.SOCK_RAW):
        report[f"socket {name} {kind.name}"] = attempt(lambda: socket.socket(family, kind))
    report[f"socketpair {name}"] = attempt(lambda: socket.socketpair(family)[0])
report["socket AF_UNIX"] = attempt(lambda: socket.socket(socket.AF_UNIX))
report["socketpair AF_UNIX"] = attempt(lambda: socket.socketpair(socket.AF_UNIX)[0])
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
def call(number, *args):
    result = libc.syscall(ctypes.c_long(number), *(ctypes.c_long(a) for a in args))
    return "allowed" if result >= 0 else errno.errorcode[ctypes.get_errno()]
if os.uname().machine == "x86_64":
    report["socket AF_INET with high bits"] = call(41, (1 << 32) | socket.AF_INET, socket.SOCK_DGRAM, 0)
    report["keyctl"] = call(250, 0, -3, 0)
    report["userfaultfd"] = call(323, 1)
    # A user namespace by the other routes: clone with CLONE_NEWUSER, and clone3 (whose flags a
    # filter cannot read). A child that comes of either leaves at once.
    clone_args = (ctypes.c_uint64 * 11)(0x10000000, 0, 0, 0, 17)  # flags, pidfd, child_tid, parent_tid, exit_signal
    for name, number, args in (("clone user namespace", 56, (0x10000000 | 17, 0, 0, 0, 0)), ("clone3 user namespace", 435, (ctypes.addressof(clone_args), 88))):
        child = libc.syscall(ctypes.c_long(number), *(ctypes.c_long(a) for a in args))
        if child == 0:
            os._exit(0)
        report[name] = "allowed" if child > 0 and os.waitpid(child, 0) else errno.errorcode[ctypes.get_errno()]
report["ptrace"] = "allowed" if libc.ptrace(0, 0, 0, 0) == 0 else errno.errorcode[ctypes.get_errno()]
report["unshare user namespace"] = "allowed" if libc.unshare(0x10000000) == 0 else errno.errorcode[ctypes.get_errno()]
print(json.dumps(report))
"""


@pytest.mark.sandbox
@pytest.mark.skipif(not bubblewrap.bubblewrap_works() or filters.seccomp_program() is None, reason="needs bubblewrap and libseccomp")
def test_seccomp_allows_only_unix_sockets_and_refuses_ptrace_and_escape_calls_inside_the_sandbox(tmp_path):
    report = json.loads(run_in_sandbox(tmp_path, SOCKET_PROBE, seccomp=True))
    assert report.pop("socket AF_UNIX") == report.pop("socketpair AF_UNIX") == "allowed"
    assert {name: result for name, result in report.items() if name.startswith("socket")} == {name: "EACCES" for name in report if name.startswith("socket")}
    assert report["ptrace"] == report["unshare user namespace"] == "EPERM"
    if "clone user namespace" in report:
        assert (report["clone user namespace"], report["clone3 user namespace"]) == ("EPERM", "ENOSYS")
    if "keyctl" in report:
        assert report["keyctl"] == report["userfaultfd"] == "EPERM"


@pytest.mark.skipif(filters.seccomp_program() is None, reason="needs libseccomp")
def test_every_denied_call_is_one_the_filter_knows():
    import pyseccomp

    if os.uname().machine == "x86_64":  # elsewhere some (iopl, ioperm) do not exist
        assert [name for name in filters.DENIED_CALLS if pyseccomp.resolve_syscall(pyseccomp.Arch.NATIVE, name) < 0] == []


@needs_bubblewrap
def test_a_nested_user_namespace_is_refused_even_without_seccomp_where_the_grader_is_not_root(tmp_path):
    if os.geteuid() == 0:  # bwrap --disable-userns needs a user namespace of bwrap's, which would make a root grader's child host root
        pytest.skip("a root grader's child is refused user namespaces by the seccomp filter (test_seccomp_allows_only_unix_sockets...)")
    code = "import ctypes, os\nlibc = ctypes.CDLL(None, use_errno=True)\nprint(libc.unshare(0x10000000), os.strerror(ctypes.get_errno()))"
    assert run_in_sandbox(tmp_path, code).split()[0] == "-1"


@pytest.mark.sandbox
def test_describe_says_what_the_walls_are():
    text = backend_named("bubblewrap").describe(None, LIMITS)
    assert f"private {bubblewrap.TMPFS_MIB} MiB /tmp and {bubblewrap.SHM_MIB} MiB /dev/shm" in text and "read-only root" in text
    if filters.seccomp_program() is not None:
        assert "sockets of the AF_UNIX family only" in text and "no ptrace" in text
    assert "a secret seed is not protected" in backend_named("process").describe(None, LIMITS)
    # whose uid the child has: a box uid of its own (a root grader), or the grader's
    assert "host uid 60007 of its own, unprivileged" in backend_named("bubblewrap").describe(None, LIMITS, 60007)
    assert f"the grader's uid {os.getuid()} through a user namespace" in text


# The uid backend: a dedicated user, and kills confined to it.


def test_the_runner_user_is_only_the_dedicated_one_never_nobody(monkeypatch):
    try:
        expected = pwd.getpwnam("mlm-runner")[2:4]
    except KeyError:
        expected = None
    uid_backend.runner_ids.cache_clear()
    assert uid_backend.runner_ids() == (tuple(expected) if expected else None)
    monkeypatch.setattr(uid_backend, "RUNNER_USER", "nobody")  # even when named, a shared user is refused
    uid_backend.runner_ids.cache_clear()
    assert uid_backend.runner_ids() is None
    monkeypatch.undo()
    uid_backend.runner_ids.cache_clear()


@pytest.mark.skipif(uid_backend.runner_ids() is not None, reason="the message for a missing runner user")
def test_without_the_runner_user_the_uid_backend_says_how_to_create_it():
    with pytest.raises(sandbox.IsolationUnavailable, match="useradd --system --no-create-home --shell /usr/sbin/nologin mlm-runner"):
        backends.choose_backend("uid")


SWITCH_USER = "import ctypes, os, time; os.setgroups([]); os.setresgid({uid}, {uid}, {uid}); os.setresuid({uid}, {uid}, {uid})"


def free_uid() -> int:
    taken = {entry.pw_uid for entry in pwd.getpwall()}
    return next(uid for uid in range(61000, 65000) if uid not in taken)


def as_user(uid: int, *command: str, new_session: bool = False) -> subprocess.Popen:
    drop = ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "--"]
    return subprocess.Popen([*drop, *command], start_new_session=new_session)


def alive(process: subprocess.Popen) -> bool:
    return process.poll() is None


def needs_root(test: Callable) -> Callable:
    """Marked needs_root, and skipped where the tests do not run as root (they start processes as other users)."""
    return pytest.mark.needs_root(pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("setpriv"), reason="starts processes as other users")(test))


@pytest.fixture
def scratch_runner(monkeypatch, tmp_path):
    """An unused uid standing in for the runner user, held by this process through a lock in tmp_path."""
    uid = free_uid()
    monkeypatch.setattr(uid_backend, "runner_ids", lambda: (uid, uid))
    monkeypatch.setattr(uid_backend, "RUNNER_LOCK_DIR", tmp_path)
    monkeypatch.setattr(uid_backend, "_runner_lock", None)
    yield uid
    if uid_backend._runner_lock is not None:
        os.close(uid_backend._runner_lock)


@pytest.mark.sandbox
@needs_root
def test_the_kill_reaches_every_process_of_the_runner_user_and_nothing_else(scratch_runner):
    uid = scratch_runner
    nobody = as_user(65534, "sleep", "60")
    ours = subprocess.Popen(["sleep", "60"])
    runner = as_user(uid, "sleep", "60")
    escaped = as_user(uid, "setsid", "--fork", "sleep", "60", new_session=True)  # an orphan in a session of its own
    hidden = subprocess.Popen(  # made non-dumpable: its /proc files then belong to root
        [sys.executable, "-c", f"{SWITCH_USER.format(uid=uid)}; ctypes.CDLL(None).prctl(4, 0); time.sleep(60)"]
    )
    try:
        deadline = time.monotonic() + 10
        while os.stat(f"/proc/{hidden.pid}/status").st_uid != 0 or f"\t{uid}\t" not in Path(f"/proc/{hidden.pid}/status").read_text():
            assert time.monotonic() < deadline
            time.sleep(0.05)  # until it has switched and hidden
        with pytest.raises(ValueError):
            uid_backend.kill_processes_of(uid)  # not held by this process yet
        uid_backend.hold_runner_user(uid)
        with pytest.raises(ValueError):
            uid_backend.kill_processes_of(65534)
        uid_backend.kill_processes_of(uid)
        for process in (runner, escaped, hidden):
            process.wait(timeout=10)
        assert [pid for pid in os.listdir("/proc") if pid.isdigit() and uid in uid_backend._real_and_saved_uids(pid)] == []
        assert alive(nobody) and alive(ours)
    finally:
        for process in (nobody, ours, runner, escaped, hidden):
            process.kill()
            process.wait()


@pytest.mark.sandbox
def test_the_runner_user_is_held_by_one_grader_at_a_time(scratch_runner, tmp_path):
    uid_backend.hold_runner_user(scratch_runner)
    lock = tmp_path / f"mlm-grader-runner-{scratch_runner}.lock"
    other = subprocess.run(["flock", "--nonblock", str(lock), "true"])
    assert other.returncode != 0  # another grader would wait
    uid_backend.hold_runner_user(scratch_runner)  # again in the same process: already held


@needs_root
def test_a_lock_file_of_another_user_is_refused(scratch_runner, tmp_path):
    lock = tmp_path / f"mlm-grader-runner-{scratch_runner}.lock"
    lock.touch()
    os.chown(lock, 65534, 65534)
    with pytest.raises(sandbox.IsolationUnavailable, match="belongs to another user"):
        uid_backend.hold_runner_user(scratch_runner)


@pytest.mark.skipif(bool(uid_backend_problem()), reason="needs the mlm-runner user and an interpreter it can read (the container test runs the uid backend)")
def test_grading_under_the_uid_backend_leaves_other_users_processes_alone():
    nobody = as_user(65534, "sleep", "60")
    try:
        result = subprocess.run(
            [sys.executable, "-m", "grader", str(SUBMISSIONS / "wrong_answer" / "hostile_fork_many.py"), "--isolation", "uid", "--json"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert json.loads(result.stdout)["isolation"].startswith("uid")
        assert alive(nobody)
    finally:
        nobody.kill()
        nobody.wait()


# Box uids: a root grader's children each run as one of their own.


@pytest.mark.sandbox
@needs_root
def test_a_box_uid_is_held_by_one_child_at_a_time_and_never_one_in_use():
    first, second = boxes.take_box_uid(), boxes.take_box_uid()
    assert first.uid != second.uid
    assert all(boxes.BOX_UID_BASE <= box.uid < boxes.BOX_UID_BASE + boxes.BOX_UIDS for box in (first, second))
    assert not any(boxes._has_account(box.uid) for box in (first, second))
    lock = str(boxes.BOX_LOCK_DIR / f"mlm-grader-box-{first.uid}.lock")
    assert subprocess.run(["flock", "--nonblock", lock, "true"]).returncode != 0  # another grader passes it by
    busy = as_user(first.uid, "sleep", "60")  # a process left with that uid, its grader gone
    try:
        first.release()
        assert subprocess.run(["flock", "--nonblock", lock, "true"]).returncode == 0
        deadline = time.monotonic() + 10
        while f"\t{first.uid}\t" not in Path(f"/proc/{busy.pid}/status").read_text():
            assert time.monotonic() < deadline
            time.sleep(0.05)
        third = boxes.take_box_uid()
        assert third.uid not in (first.uid, second.uid)  # first.uid is not held, but a process has it
        third.release()
    finally:
        busy.kill()
        busy.wait()
        second.release()


@needs_root
def test_a_box_uid_whose_lock_file_is_someone_elses_is_passed_by(monkeypatch, tmp_path):
    monkeypatch.setattr(boxes, "BOX_LOCK_DIR", tmp_path)
    running = boxes._running_uids()
    candidate = next(uid for uid in range(boxes.BOX_UID_BASE, boxes.BOX_UID_BASE + 100) if uid not in running and not boxes._has_account(uid))
    foreign = tmp_path / f"mlm-grader-box-{candidate}.lock"
    foreign.touch()
    os.chown(foreign, 65534, 65534)  # anyone could make it, and hold it to take the uid from under us
    box = boxes.take_box_uid()
    box.release()
    assert box.uid != candidate


def test_the_kit_and_the_submission_are_readable_by_a_box_uid_whatever_the_umask(tmp_path):
    umask = os.umask(0o077)  # a hardened grader's: its files would be root's alone
    try:
        kit, _, submission = prepare_files(tmp_path, b"x = 1\n", "solution.py")
    finally:
        os.umask(umask)
    for path in [kit, *kit.rglob("*"), submission, submission / "solution.py"]:
        assert path.stat().st_mode & (0o005 if path.is_dir() else 0o004), path


# The secret seed: gone from what other processes can read of the grader.

SCRUB_PROBE = """
import sys
from grader.seeding import scrub_secret
scrub_secret("MLM_GRADER_SEED", sys.argv[2])
print(open("/proc/self/environ", "rb").read().hex(), open("/proc/self/cmdline", "rb").read().hex())
"""


@pytest.mark.sandbox
def test_the_secret_is_scrubbed_from_proc_environ_and_cmdline():
    secret = "scrub-me-5550123"
    result = subprocess.run(
        [sys.executable, "-c", SCRUB_PROBE, "--seed", secret, f"--seed={secret}"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**os.environ, "MLM_GRADER_SEED": secret, "KEEP_ME": "still-here"},
        timeout=60,
    )
    environ, cmdline = (bytes.fromhex(part) for part in result.stdout.split())
    assert secret.encode() not in environ and b"MLM_GRADER_SEED" not in environ
    assert b"KEEP_ME=still-here" in environ  # the rest is untouched
    assert secret.encode() not in cmdline and b"--seed" in cmdline


WRITE_BACK = (Path(__file__).parent / "submissions" / "pool_attacks" / "write_back.py").read_text()
HOST_SYSCTLS = ("kernel/core_pattern", "kernel/panic", "kernel/panic_on_oops", "vm/overcommit_memory")


def host_sysctls() -> dict[str, str]:
    return {name: Path("/proc/sys", name).read_text() for name in HOST_SYSCTLS}


def host_uids(report: dict) -> set[int]:
    """The write_back probe's real, effective and saved uids as the parent of its user namespace
    sees them (the host, for a single child)."""
    return {parent + uid - inside for uid in report["uids"] for inside, parent, count in report["uid_map"] if inside <= uid < inside + count}


@pytest.mark.sandbox
@needs_bubblewrap
def test_inside_bubblewrap_nothing_of_the_kernel_or_of_other_processes_takes_writes(tmp_path):
    # The probe opens for writing every file of /proc, /sys and /dev with a write bit and writes
    # back what it read: a sysctl it may write (the host's kernel.core_pattern, run as root at the
    # next core dump) is listed, and left as it was.
    before = host_sysctls()
    report = json.loads(run_in_sandbox(tmp_path, WRITE_BACK, seccomp=True))
    assert host_sysctls() == before
    assert report["writable"] == {}
    if os.geteuid() == 0:  # else the map's outer side is bwrap's own intermediate namespace, and the grader is not root anyway
        uids = host_uids(report)
        assert len(uids) == 1 and 0 not in uids and boxes.BOX_UID_BASE <= min(uids) < boxes.BOX_UID_BASE + boxes.BOX_UIDS, report


def descendants(pid: int) -> list[int]:
    found, queue = [], [pid]
    while queue:
        parent = queue.pop()
        for task in Path(f"/proc/{parent}/task").glob("*"):
            with contextlib.suppress(OSError):
                children = [int(child) for child in (task / "children").read_text().split()]
                found += children
                queue += children
    return found


@pytest.mark.sandbox
@needs_bubblewrap
def test_seen_from_the_host_the_sandboxed_python_has_an_unprivileged_uid_and_no_capabilities(tmp_path):
    code = "import sys; print('up', flush=True); sys.stdin.read()"
    with sandboxed(tmp_path, code, seccomp=True, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True) as process:
        assert process.stdout.readline() == "up\n"
        [python] = [pid for pid in descendants(process.pid) if Path(f"/proc/{pid}/cmdline").read_bytes().startswith(os.fsencode(sys.executable) + b"\0")]
        fields = dict(line.split(":", 1) for line in Path(f"/proc/{python}/status").read_text().splitlines() if ":" in line)
        process.stdin.close()
        process.wait(timeout=60)
    uids = {int(uid) for uid in fields["Uid"].split() + fields["Gid"].split()}  # real, effective, saved, file system
    assert len(uids) == 1 and 0 not in uids, fields["Uid"]
    if os.geteuid() == 0:
        assert boxes.BOX_UID_BASE <= uids.pop() < boxes.BOX_UID_BASE + boxes.BOX_UIDS
    capabilities = ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb")
    assert {name: int(fields[name], 16) for name in capabilities} == dict.fromkeys(capabilities, 0)
    assert fields["NoNewPrivs"].strip() == "1"
