"""The warm pool (grader/sandbox/zygote.py): every wall of a single grading holds for each submission it
grades, whatever an earlier or a neighbouring submission did to the pool.

Each attack (tests/submissions/pool_attacks/) is appended to an honest solution, so that the
attacker is accepted when its attack changes nothing; then an honest submission is graded by the
same pool, and its verdict, the pool's server and the host are checked."""

import json
import os
import subprocess
import sys
import threading
import time
from contextlib import closing
from pathlib import Path

import pytest

from grader import judge
from grader.batch.schedule import Workers
from grader.child import walls
from grader.sandbox import boxes, bubblewrap, seccomp
from grader.sandbox.zygote import Zygote, ZygoteChild, zygote_problem
from grader.spec import load_spec
from tests.grading import ATTACKS, SUBMISSIONS, checkout_digest, fast_spec, hostile_markers, listening_on_loopback
from tests.test_sandbox import host_sysctls, host_uids

pytestmark = [pytest.mark.sandbox, pytest.mark.skipif(zygote_problem("bubblewrap") is not None, reason=f"no warm pool here: {zygote_problem('bubblewrap')}")]


HONEST = SUBMISSIONS / "accepted" / "plain_helpers.py"
SEED = "pool-test-secret"
PREFIX = f"pooltest{os.getpid()}_"  # names this test process's files, and so their cgroups (test workers run side by side)
# Every hostile file gets its folder's verdict through the pool, walls alone, as it does alone
# (tests/test_hostile.py, which also runs them with the static check, and a fresh child each for
# the attacks on what differs between the two: the sandbox, the process, what the child inherits).
HOSTILES = sorted(f"{p.parent.name}/{p.stem}" for p in SUBMISSIONS.glob("*/hostile_*.py"))


@pytest.fixture(scope="module")
def spec(tmp_path_factory):
    return load_spec(fast_spec(tmp_path_factory.mktemp("spec")))


@pytest.fixture(scope="module")
def prepared(spec):
    return judge.prepare(spec, SEED)


@pytest.fixture
def warm(spec):
    pool = Zygote(spec)
    yield pool
    pool.close()


def attacker(tmp_path: Path, name: str) -> Path:
    """The attack, run at import, followed by an honest solution."""
    path = tmp_path / f"{PREFIX}{name}.py"
    path.write_text((ATTACKS / f"{name}.py").read_text() + "\n\n" + HONEST.read_text())
    return path


def honest(tmp_path: Path) -> Path:
    path = tmp_path / f"{PREFIX}honest.py"
    path.write_bytes(HONEST.read_bytes())
    return path


def grade(spec, prepared, warm, paths: list[Path], jobs: int = 1, restricted: bool = False) -> dict[str, object]:
    """Without the static check; as plain Python (the sandbox and the guard's operator checks
    alone) unless restricted (the capability layer on too)."""
    workers = Workers(spec, SEED, jobs=jobs, backend="bubblewrap", prepared=prepared, static_check=False, restricted=restricted)
    reports = dict(workers.map(((path.stem.removeprefix(PREFIX), path) for path in paths), warm=warm))
    assert workers.warm_note == ""
    return reports


def leftover_cgroups() -> list[Path]:
    """This module's cgroups (named after its files; other graders on the machine have their own)."""
    root = Path("/sys/fs/cgroup")
    return [*root.glob(f"*/mlm-grader-{PREFIX}*"), *root.glob(f"mlm-grader-{PREFIX}*")]


def processes_with(text: bytes) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and text in (entry / "cmdline").read_bytes():
                found.append(int(entry.name))
        except OSError:
            pass
    return found


def assert_unaffected(spec, prepared, warm, tmp_path: Path) -> None:
    """The same server, and an honest submission graded after the attack is accepted, through the pool."""
    generation = warm.generation
    report = grade(spec, prepared, warm, [honest(tmp_path)])["honest"]
    assert report.verdict == "accepted", report.message
    assert "warm pool" in report.isolation
    assert warm.alive() and warm.generation == generation == 1
    assert leftover_cgroups() == []
    assert list(Path("/tmp").glob("mlm-pool-marker*")) == [] and list(Path("/dev/shm").glob("mlm-pool-marker*")) == []


def test_files_left_in_tmp_and_shm_are_not_seen_by_the_next_submission(spec, prepared, warm, tmp_path):
    reports = grade(spec, prepared, warm, [attacker(tmp_path, "leave_files"), attacker(tmp_path, "find_files")])
    assert reports["leave_files"].verdict == "accepted", reports["leave_files"].message
    assert reports["find_files"].verdict == "accepted", reports["find_files"].message
    assert_unaffected(spec, prepared, warm, tmp_path)


def test_a_process_left_behind_does_not_outlive_its_grading(spec, prepared, warm, tmp_path):
    reports = grade(spec, prepared, warm, [attacker(tmp_path, "leave_process")])
    assert reports["leave_process"].verdict == "accepted", reports["leave_process"].message
    assert processes_with(b"4242") == [] and processes_with(b"4243") == []
    assert_unaffected(spec, prepared, warm, tmp_path)


def test_signalling_every_process_it_can_name_reaches_neither_the_server_nor_a_neighbour(spec, prepared, warm, tmp_path):
    # jobs=2: the attacker runs beside an honest submission, which it also tries to kill.
    reports = grade(spec, prepared, warm, [attacker(tmp_path, "kill_server"), attacker(tmp_path, "victim")], jobs=2)
    assert reports["kill_server"].verdict == "accepted", reports["kill_server"].message
    assert reports["victim"].verdict == "accepted", reports["victim"].message
    assert_unaffected(spec, prepared, warm, tmp_path)


def test_a_submission_cannot_read_a_neighbours_files_memory_or_descriptors(spec, prepared, warm, tmp_path):
    reports = grade(spec, prepared, warm, [attacker(tmp_path, "victim"), attacker(tmp_path, "spy")], jobs=2)
    assert reports["spy"].verdict == "accepted", reports["spy"].message
    assert reports["victim"].verdict == "accepted", reports["victim"].message
    assert_unaffected(spec, prepared, warm, tmp_path)


def test_each_child_has_the_walls_and_limits_of_a_single_child(spec, prepared, warm, tmp_path):
    report = grade(spec, prepared, warm, [attacker(tmp_path, "walls_hold")])["walls_hold"]
    assert report.verdict == "accepted", report.message
    facts = json.loads(report.stdout.strip().splitlines()[-1])
    limits, mib = spec.limits, 1 << 20
    assert facts["pid"] == 2 and facts["cwd"] == "/tmp"  # pid 2 of its own namespace, as under bubblewrap
    # An empty /tmp of its own, but for the Python installation where it lies below /tmp (a checkout under /tmp).
    # There, only what bubblewrap binds for the server: the installation, not the rest of the checkout.
    covered = [folder for folder in bubblewrap.covered_folders() if folder.startswith("/tmp/")]
    assert facts["tmp"] == sorted(os.path.basename(folder) for folder in covered)
    for folder in map(Path, covered):
        inside = [prefix for prefix in map(Path, bubblewrap.python_installations()) if prefix.is_relative_to(folder)]
        if folder not in inside:  # (an installation right below /tmp is shown whole)
            assert facts["below_tmp"][folder.name] == sorted({prefix.relative_to(folder).parts[0] for prefix in inside}), facts["below_tmp"]
    assert facts["tmp_mib"] == bubblewrap.TMPFS_MIB and facts["shm_mib"] == bubblewrap.SHM_MIB
    [[_, outside, count]] = facts["uid_map"]  # its own uid alone, as the server's user namespace (the host, for box uids) sees it
    assert count == 1 and outside != 0
    if os.geteuid() == 0:
        assert boxes.BOX_UID_BASE <= outside < boxes.BOX_UID_BASE + boxes.BOX_UIDS
    assert facts["limits"] == {
        "CPU": [limits.cpu_seconds, limits.cpu_seconds + 1],
        "AS": [limits.memory_mib * mib] * 2,
        "FSIZE": [limits.file_size_mib * mib] * 2,
        "NOFILE": [limits.open_files] * 2,
        "CORE": [0, 0],
    }
    assert_unaffected(spec, prepared, warm, tmp_path)


def test_a_child_can_write_nothing_of_the_kernel_nor_of_other_processes(spec, prepared, warm, tmp_path):
    # As tests/test_sandbox.py does for a single child: every file of /proc, /sys and /dev with a
    # write bit opened for writing (and its own bytes written back where that works), through the pool.
    before = host_sysctls()
    report = grade(spec, prepared, warm, [attacker(tmp_path, "write_back")])["write_back"]
    assert host_sysctls() == before
    assert report.verdict == "accepted", report.message
    facts = json.loads(report.stdout.strip().splitlines()[-1])
    assert facts["writable"] == {}
    if os.geteuid() == 0:  # as the server's user namespace sees them: it maps the box uids onto themselves
        uids = host_uids(facts)
        assert len(uids) == 1 and boxes.BOX_UID_BASE <= min(uids) < boxes.BOX_UID_BASE + boxes.BOX_UIDS, facts
    assert_unaffected(spec, prepared, warm, tmp_path)


def ids_and_capabilities(pid: int) -> tuple[tuple[int, ...], int]:
    """A process's real, effective, saved and file-system uids and its effective capabilities,
    as the host sees them (its /proc status, read from outside every namespace of the pool)."""
    fields = dict(line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines() if ":" in line)
    return tuple(int(uid) for uid in fields["Uid"].split()), int(fields["CapEff"], 16)


def test_the_server_and_each_child_run_as_unprivileged_host_uids_of_their_own(spec, warm):
    children = [ZygoteChild(warm, HONEST.read_bytes(), f"{PREFIX}uid{n}.py", spec) for n in range(2)]
    try:
        server_uids, _ = ids_and_capabilities(warm.server_pid)
        assert set(server_uids) == {server_uids[0]} and server_uids[0] != 0
        child_uids = []
        for child in children:
            deadline = time.monotonic() + 10
            while (seen := [ids_and_capabilities(pid) for pid in child.pids]) and any(capabilities for _, capabilities in seen):
                assert time.monotonic() < deadline, seen  # the outer process and the init drop theirs as the runner starts
                time.sleep(0.05)
            assert len({uids for uids, _ in seen}) == 1, seen  # its outer process, its init and its runner
            uids = seen[0][0]
            assert set(uids) == {uids[0]} and uids[0] != 0
            assert f"host uid {uids[0]} of its own" in child.isolation or os.geteuid() != 0
            child_uids.append(uids[0])
        if os.geteuid() == 0:  # box uids: each its own, none of them an account's
            assert len({server_uids[0], *child_uids}) == 3
            assert all(boxes.BOX_UID_BASE <= uid < boxes.BOX_UID_BASE + boxes.BOX_UIDS for uid in [server_uids[0], *child_uids])
            # The server's user namespace maps the box uids alone: no one in it can become root.
            extents = [[int(n) for n in line.split()] for line in Path(f"/proc/{warm.server_pid}/uid_map").read_text().splitlines()]
            assert extents == [[boxes.BOX_UID_BASE, boxes.BOX_UID_BASE, boxes.BOX_UIDS]]
    finally:
        for child in children:
            child.close()


def test_hostile_files_get_their_verdicts_through_the_pool_and_leave_no_trace(spec, prepared, warm, tmp_path):
    # The real limits, as tests/test_hostile.py, but for the time-limit files (a decomposition run
    # with the guard's mode taken off imports sympy on first use: seconds on a loaded machine).
    # The forbidden ones with the capability layer on (the guard cannot hold alone against plain
    # Python in its own process), the others as plain Python (the sandbox's and protocol's walls).
    # The host checks of tests/test_hostile.py, which grades a fresh child each only for the attacks
    # on what differs between a pool child and a child of its own, where this pool runs.
    paths: dict[tuple[bool, bool], list[Path]] = {(q, r): [] for q in (True, False) for r in (True, False)}
    for name in HOSTILES:
        path = tmp_path / f"{PREFIX}{Path(name).name}.py"
        path.write_bytes((SUBMISSIONS / f"{name}.py").read_bytes())
        paths[name.startswith("time_limit_exceeded/"), name.startswith("forbidden_api/")].append(path)
    before = checkout_digest()
    reports = {}
    with listening_on_loopback() as connections:
        for (quick, restricted), group in paths.items():
            reports |= grade(spec if quick else load_spec(), prepared, warm, group, jobs=2, restricted=restricted)
    for name in HOSTILES:
        report = reports[Path(name).name]
        assert report.verdict == Path(name).parent.name, f"{name}: {report.message}"
        assert "warm pool" in report.isolation
        assert SEED not in report.stdout + report.stderr + report.message
    assert hostile_markers() == []
    assert checkout_digest() == before
    assert connections == []
    assert_unaffected(spec, prepared, warm, tmp_path)


def test_a_server_that_dies_mid_grading_is_replaced_and_the_submission_graded_again(tmp_path):
    # The real limits: the grading is done again in a child of its own, which imports torch first.
    spec = load_spec()
    prepared = judge.prepare(spec, SEED)
    with closing(Zygote(spec)) as warm:
        server_dies_mid_grading(spec, prepared, warm, tmp_path)


def server_dies_mid_grading(spec, prepared, warm, tmp_path):
    assert grade(spec, prepared, warm, [honest(tmp_path)])["honest"].verdict == "accepted"  # the server is up
    victim = attacker(tmp_path, "victim")  # four seconds at import: time to kill the server under it
    workers = Workers(spec, SEED, jobs=1, backend="bubblewrap", prepared=prepared, static_check=False, restricted=False)
    killer = threading.Timer(1.5, lambda: os.killpg(warm.server.pid, 9))
    killer.start()
    report = dict(workers.map([("victim", victim)], warm=warm))["victim"]
    killer.join()
    assert report.verdict == "accepted", report.message
    assert "warm pool" not in report.isolation  # graded again, in a child of its own
    assert not warm.alive()
    report = grade(spec, prepared, warm, [honest(tmp_path)])["honest"]  # the server is started again by a job's thread
    assert report.verdict == "accepted" and "warm pool" in report.isolation
    time.sleep(1)  # the job's thread has ended: the new server must not have ended with it (bubblewrap's --die-with-parent)
    assert warm.generation == 2 and warm.alive(), (warm.server.returncode, warm.log.text()[-3000:])
    assert leftover_cgroups() == []


def test_a_grading_that_asks_a_closed_pool_for_a_child_gets_one_of_its_own(spec, prepared, tmp_path):
    warm = Zygote(spec)
    assert "warm pool" in grade(spec, prepared, warm, [honest(tmp_path)])["honest"].isolation  # its server was ready once
    warm.close()
    workers = Workers(spec, SEED, jobs=1, backend="bubblewrap", prepared=prepared, static_check=False, restricted=False)
    report = dict(workers.map([("honest", honest(tmp_path))], warm=warm))["honest"]
    assert report.verdict == "accepted", report.message
    assert "warm pool" not in report.isolation and workers.warm_note == "the warm pool was closed"
    assert warm.generation == 1 and not warm.alive()  # no server started again after close()


def test_the_pool_childs_filter_refuses_new_namespaces_but_not_a_plain_fork():
    program = seccomp.seccomp_program("child")
    probe = f"""
import ctypes, errno, os, sys
sys.path.insert(0, {str(Path(walls.__file__).parents[1])!r})
from child import walls
walls.set_no_new_privs()
walls.install_seccomp(bytes.fromhex({program.hex()!r}))
libc = ctypes.CDLL(None, use_errno=True)
results = []
for flag in (walls.CLONE_NEWUSER, walls.CLONE_NEWNS, walls.CLONE_NEWPID, walls.CLONE_NEWNET):
    results.append(libc.unshare(flag) == -1 and ctypes.get_errno() == errno.EPERM)
    results.append(libc.syscall(56, flag | 17, 0, 0, 0, 0) == -1 and ctypes.get_errno() == errno.EPERM)  # clone(flag | SIGCHLD)
pid = os.fork()
if pid == 0:
    os._exit(7)
results.append(os.waitpid(pid, 0)[1] >> 8 == 7)
print(results)
"""
    if os.uname().machine != "x86_64":
        pytest.skip("the probe calls clone by its x86_64 number")
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert result.stdout.strip() == str([True] * 9), result.stdout + result.stderr


@pytest.mark.parametrize("caught", [False, True])
def test_a_forbidden_use_at_import_is_the_verdict_and_no_case_runs(spec, prepared, warm, tmp_path, caught):
    # Whether the refusal's exception escapes the import or the file catches it, the guard's finding
    # decides at once: no case runs (a slow case could otherwise end it as a time limit first).
    call = "torch.softmax(torch.ones(3), 0)"
    line = f"try:\n    {call}\nexcept Exception:\n    pass\n" if caught else f"{call}\n"
    path = tmp_path / f"{PREFIX}at_import.py"
    path.write_text("import torch\n" + line + "\n\n" + HONEST.read_text())
    report = grade(spec, prepared, warm, [path])["at_import"]
    assert report.verdict == "forbidden_api"
    # the capability layer is off here (the walls alone): the dispatcher names the operator
    assert report.message.startswith("importing the file used the operator aten::softmax, which is not on this challenge's list"), report.message
    assert f"(line {2 + caught} of {path.name})" in report.message
    assert all(case.status == "forbidden_api" and case.message.startswith("not run: importing the file") for case in report.cases)


def readable_memory(pid: int) -> bytes:
    """What a process's private writable mappings hold (its heap, Python's arenas, anonymous maps),
    read through /proc/<pid>/mem as root from the host: what a child forked from it would inherit."""
    chunks = []
    with open(f"/proc/{pid}/maps") as maps, open(f"/proc/{pid}/mem", "rb", buffering=0) as mem:
        for line in maps:
            addresses, permissions = line.split()[:2]
            if not permissions.startswith("rw"):
                continue
            start, end = (int(a, 16) for a in addresses.split("-"))
            try:
                mem.seek(start)
                chunks.append(mem.read(end - start))
            except (OSError, OverflowError, ValueError):
                pass
    return b"\0".join(chunks)


@pytest.mark.needs_root
@pytest.mark.skipif(os.geteuid() != 0, reason="reading the server's memory through /proc needs root")
def test_the_server_holds_no_name_path_or_source_of_the_submissions_it_forked_for(spec, prepared, warm, tmp_path):
    # A child inherits its server's memory: what the server ever held of an earlier submission, a
    # later one could find there (freed memory keeps its bytes).
    tokens = [f"idleak{os.getpid()}x{i}{os.urandom(4).hex()}" for i in range(4)]
    paths = []
    for token in tokens:
        path = tmp_path / f"{PREFIX}{token}.py"
        path.write_text(f"# {token}-source\n" + HONEST.read_text())
        paths.append(path)
    reports = grade(spec, prepared, warm, paths, jobs=2)
    assert all(report.verdict == "accepted" for report in reports.values()), reports
    memory = readable_memory(warm.server_pid)
    assert len(memory) > 1 << 20  # the server's heap was read
    for token in tokens:
        assert token.encode() not in memory, f"the server holds {token}"
    assert str(tmp_path).encode() not in memory


def test_a_child_finds_no_earlier_submissions_name_in_the_memory_it_inherits(spec, prepared, warm, tmp_path):
    earlier = []
    for i in range(3):  # names of other lengths than the attacker's: freed memory of another size is not reused at once
        path = tmp_path / f"{PREFIX}earlier{i}_{'x' * (30 + 50 * i)}.py"
        path.write_bytes(HONEST.read_bytes())
        earlier.append(path)
    grade(spec, prepared, warm, earlier)
    report = grade(spec, prepared, warm, [attacker(tmp_path, "find_earlier_names")])["find_earlier_names"]
    assert report.verdict == "accepted", report.message
    assert_unaffected(spec, prepared, warm, tmp_path)
