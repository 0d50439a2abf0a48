"""Throughput against its floor, side by side in one run: 36 correct files (reference/mlm_forward_tied/submissions/accepted,
hostile_* left out, cycled when there are fewer), the full suite of the grader's cases.

- the floor: each file imported as plain Python in this process (no sandbox, no guard, no capability
  layer) and its entry point called on every case as the child calls it (the forward, then the
  forward again on fresh leaves and the vector-Jacobian product, grader/child/runner.py), one torch
  thread; only the submission's calls are timed. Beside it, the float64 expected outputs, which a
  batch computes once (grader/judge.py prepare);
- `python -m grader batch` over the 36 files with --jobs 1 and --jobs 2, as a subprocess (start-up
  included), its wall seconds per file;
- the same batch with one job over 36 copies of bench/no_work.py, a file that does nearly nothing
  (wrong_answer): what the grader alone costs a file, start-up shared out included. With the floor
  added, the least a batch of correct files could cost per file whatever the guard's own cost;
- 36 files through a Grader whose pool is warm and cases prepared (one file graded first, off the
  clock), with 1 and 2 jobs: the per-file cost and scaling of a long batch or a pipeline, without
  the start-up (torch imported by the grader and by the pool's sandboxed server) that a 36-file
  batch shares out; beside them the CPU seconds the whole machine spent per file (/proc/stat), and
  what that allows: two cores give two jobs at most twice one job's CPU, so two jobs can be at most
  2 x (one job's wall) / (one job's CPU) faster than one;
- one `python -m grader FILE` beside a bare `python -c "import torch"`, paired;
- where a batch's time goes per file, from the reports' own clocks (a report's seconds, each case's
  round trip from the request to its answer's arrival).

The machine may be busy: every measurement is repeated ROUNDS times, the kinds interleaved (the
order reversed every other round), and min and median are printed. Each ratio is taken within a
round, then its median printed. The figures of a busy machine are not those of a quiet one: the load
average is printed before and after.

--profile grades the 36 files in this process through the same path as a batch
(grader.Grader.grade_many: the pool, the warm children of grader/sandbox/zygote.py) twice: once
with a stopwatch around each phase of judge.grade (start, the child's import of the file, each
case's round trip and the child's own forward time in it, the comparison, the guard's last check,
closing the child, diagnosis), once under cProfile, every thread of the grader's process profiled
(the reading threads too), and prints the phases per file beside the floor, then the top functions
by cumulative and by own time. Usage:

    .venv/bin/python bench/throughput.py [ROUNDS]            (default 3 rounds, several minutes)
    .venv/bin/python bench/throughput.py --profile [JOBS]    (default 1 job)
"""

import argparse
import collections
import contextlib
import cProfile
import hashlib
import io
import json
import os
import pstats
import statistics
import sys
import tempfile
import threading
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import ROOT, SEED, copy_folder, run_timed, submissions  # noqa: E402

sys.path.insert(0, str(ROOT))

FILES = 36
ONE_FILE = ROOT / "reference" / "mlm_forward_tied" / "submissions" / "accepted" / "plain_helpers.py"
NO_WORK = Path(__file__).resolve().parent / "no_work.py"  # a file whose own work is nearly nil: what the grader alone costs


def correct_files() -> list[Path]:
    return submissions(("accepted",), FILES)


def load_average() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


# --- the floor: the submission's own calls, in this process ------------------------------------------


def plain_entry_points(files: list[Path]) -> list[Callable]:
    """Each file's entry point, the file run as plain Python (no capability layer, no guard), as
    the child's load_submission does when it is told so."""
    from grader.child import runner
    from grader.spec import load_spec

    entry = load_spec().entry_point
    functions = []
    for path in files:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            module = runner.load_submission(str(path), hashlib.sha256(path.read_bytes()).hexdigest(), None)
        functions.append(getattr(module, entry))
    return functions


def floor(functions: list[Callable], cases: list) -> tuple[float, float, dict[str, list[float]]]:
    """Wall and CPU seconds of every file's calls on every case, and per case name the seconds of
    the forward and of the gradient (forward on fresh leaves plus the product), summed over files.
    Copies of the inputs are made outside the clocks, as the child makes them outside the call."""
    import torch

    from grader.child.vjp import vector_jacobian

    wall = cpu = 0.0
    per_case: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0])
    requests = [case.request() for case in cases]
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        for fn in functions:
            for header, tensors in requests:
                call, differentiable = header["call"], header["differentiable"]
                args = [tensors[name].clone() if kind == "tensor" else kind for name, kind in call]
                w, c = time.perf_counter(), time.thread_time()
                fn(*args)
                forward_wall, forward_cpu = time.perf_counter() - w, time.thread_time() - c
                leaves = {name: tensors[name].clone().requires_grad_(name in differentiable) if kind == "tensor" else kind for name, kind in call}
                w, c = time.perf_counter(), time.thread_time()
                out = fn(*leaves.values())
                if isinstance(out, torch.Tensor) and out.requires_grad:
                    vector_jacobian(out, [leaves[name] for name in differentiable], tensors["upstream_0"])
                gradient_wall, gradient_cpu = time.perf_counter() - w, time.thread_time() - c
                wall += forward_wall + gradient_wall
                cpu += forward_cpu + gradient_cpu
                per_case[header["name"]][0] += forward_wall
                per_case[header["name"]][1] += gradient_wall
    return wall, cpu, per_case


def expected_seconds(cases: list) -> float:
    from grader.expected import expected_for

    started = time.perf_counter()
    for case in cases:
        expected_for(case)
    return time.perf_counter() - started


# --- the commands, from outside -------------------------------------------------------------------


def batch(folder: Path, jobs: int, out: Path, verdict: str = "accepted") -> tuple[float, list[dict[str, Any]]]:
    """Wall seconds of `python -m grader batch` over the folder, and its report lines; every file must
    get `verdict`."""
    command = [sys.executable, "-m", "grader", "batch", str(folder), "--jobs", str(jobs), "--out", str(out)]
    timed = run_timed(command)
    lines = [json.loads(line) for line in out.read_text().splitlines()] if out.exists() else []
    wrong = [line["id"] for line in lines if line["verdict"] != verdict]
    if timed.returncode != 0 or len(lines) != FILES or wrong:
        raise SystemExit(f"batch --jobs {jobs}: exit status {timed.returncode}, {len(lines)} lines, not {verdict}: {wrong}")
    return timed.wall, lines


def one_grading() -> tuple[float, float]:
    """Seconds of `python -m grader FILE`, then of a bare `python -c "import torch"`, back to back."""
    grading = run_timed([sys.executable, "-m", "grader", str(ONE_FILE)])
    if grading.returncode != 0:
        raise SystemExit(f"python -m grader {ONE_FILE}: exit status {grading.returncode}")
    bare = run_timed([sys.executable, "-c", "import torch"])
    return grading.wall, bare.wall


# --- the figures -----------------------------------------------------------------------------------


def spread(values: list[float]) -> str:
    return f"{min(values):8.3f} {statistics.median(values):8.3f}"


def measure(rounds: int) -> None:
    import torch

    from grader.judge import prepare
    from grader.spec import load_spec

    torch.set_num_threads(1)  # as in the child
    spec = load_spec()
    files = correct_files()
    started = time.perf_counter()
    cases = prepare(spec, SEED).cases
    make_cases = time.perf_counter() - started
    functions = plain_entry_points(files)
    floor(functions, cases)  # once, not counted: torch's first calls of each operator
    loads = [load_average()]
    figures: dict[str, list[float]] = defaultdict(list)
    breakdown: list[list[dict[str, Any]]] = []  # each round's report lines of the batch with one job
    with tempfile.TemporaryDirectory(prefix="mlm-grader-bench-") as tmp:
        folder = copy_folder(Path(tmp), files)
        no_work = copy_folder(Path(tmp), [NO_WORK] * FILES, "no-work")
        sources = {path.stem: path.read_bytes() for path in sorted(folder.iterdir())}

        def run_floor() -> None:
            wall, cpu, per_case = floor(functions, cases)
            figures["floor"].append(wall / FILES)
            figures["floor cpu"].append(cpu / FILES)
            figures["expected"].append(expected_seconds(cases))
            figures["floor per case"].append(per_case)  # type: ignore[arg-type]

        def run_batch(jobs: int, number: int) -> Callable[[], None]:
            def run() -> None:
                wall, lines = batch(folder, jobs, Path(tmp) / f"results-{jobs}-{number}.jsonl")
                figures[f"batch {jobs}"].append(wall / FILES)
                if jobs == 1:
                    breakdown.append(lines)

            return run

        def run_no_work() -> None:
            wall, _ = batch(no_work, 1, Path(tmp) / f"results-no-work-{number}.jsonl", verdict="wrong_answer")
            figures["no work"].append(wall / FILES)

        def run_warm() -> None:
            for jobs in (1, 2):
                wall, _, cpu = grade_all(jobs, sources, warm=True)
                figures[f"warm {jobs}"].append(wall / FILES)
                figures[f"warm cpu {jobs}"].append(cpu / FILES)
            figures["warm scaling"].append(figures["warm 1"][-1] / figures["warm 2"][-1])
            # Two cores give at most 2 CPU seconds a second: two jobs take at least the CPU of a file over 2.
            figures["warm scaling bound"].append(2 * figures["warm 1"][-1] / figures["warm cpu 1"][-1])

        def run_single() -> None:
            grading, bare = one_grading()
            figures["one grading"].append(grading)
            figures["import torch"].append(bare)
            figures["one grading ratio"].append(grading / bare)

        for number in range(rounds):
            steps = [run_floor, run_batch(1, number), run_batch(2, number), run_no_work, run_warm, run_single, run_single]
            for step in steps if number % 2 == 0 else reversed(steps):
                step()
            figures["ratio 1"].append(figures["batch 1"][-1] / figures["floor"][-1])
            figures["ratio 2"].append(figures["batch 2"][-1] / figures["floor"][-1])
            figures["scaling"].append(figures["batch 1"][-1] / figures["batch 2"][-1])
            print(f"round {number + 1}/{rounds}: load average {load_average()}", file=sys.stderr)
    loads.append(load_average())
    report(figures, breakdown, len(cases), rounds, make_cases, loads)


def report(figures: dict[str, list], breakdown: list[list[dict[str, Any]]], cases: int, rounds: int, make_cases: float, loads: list[str]) -> None:
    f = figures
    median = statistics.median
    print(f"{FILES} correct files x {cases} cases; {rounds} rounds, interleaved; load average (1, 5, 15 min) before {loads[0]}, after {loads[1]}")
    print(f"{'seconds per file':52s} {'min':>8s} {'median':>8s}   median x floor")
    print(f"{'floor: the submission calls, in-process, wall':52s} {spread(f['floor'])}   1.00")
    print(f"{'floor: the same, CPU':52s} {spread(f['floor cpu'])}")
    for jobs in (1, 2):
        print(f"{f'python -m grader batch --jobs {jobs}, wall / 36':52s} {spread(f[f'batch {jobs}'])}   {median(f[f'ratio {jobs}']):.2f}")
    no_work = f"batch --jobs 1 over {FILES} copies of bench/{NO_WORK.name}"
    print(f"{no_work:52s} {spread(f['no work'])}   {median(f['no work']) / median(f['floor']):.2f}  (the grader alone: no work of the file's)")
    for jobs in (1, 2):
        print(f"{f'warm pool, {jobs} job(s) (Grader.grade_many, start-up excluded)':52s} {spread(f[f'warm {jobs}'])}")
    print(f"{'once per batch: the float64 expected outputs':52s} {spread(f['expected'])}   (the cases: {make_cases:.3f} s)")
    print(f"scaling from 1 to 2 jobs (wall 1 job / wall 2 jobs): median {median(f['scaling']):.2f}x (min {min(f['scaling']):.2f}, max {max(f['scaling']):.2f})")
    print(f"scaling from 1 to 2 jobs, warm pool: median {median(f['warm scaling']):.2f}x (min {min(f['warm scaling']):.2f}, max {max(f['warm scaling']):.2f})")
    cpu_one, cpu_two = median(f["warm cpu 1"]), median(f["warm cpu 2"])
    print(f"CPU seconds a file takes, every process of the machine, warm pool: {cpu_one:.3f} with one job, {cpu_two:.3f} with two")
    print(f"the most two jobs could gain on two cores, given that CPU (2 x wall with one job / CPU with one job): {median(f['warm scaling bound']):.2f}x")
    bound = (median(f["no work"]) + median(f["floor"])) / median(f["floor"])
    print(f"the least one job could cost with these walls (the grader alone, plus the file's own work unguarded): {bound:.2f}x the floor")
    print(f"{'python -m grader ' + ONE_FILE.name + ' (wall, s)':52s} {spread(f['one grading'])}")
    bare = 'python -c "import torch" (wall, s)'
    print(f"{bare:52s} {spread(f['import torch'])}")
    print(f"one grading / bare import torch, paired: median {median(f['one grading ratio']):.2f}x (min {min(f['one grading ratio']):.2f})")

    # Where a file's time goes in a batch of one job, from the reports' own clocks: each round's
    # sums over its 36 files, divided by 36 (as the batch's wall seconds are), then the median round.
    per_file = [sum(line["seconds"] for line in lines) / FILES for lines in breakdown]
    in_cases = [sum(c["seconds"] for line in lines for c in line["cases"]) / FILES for lines in breakdown]
    rest = [total - cases_ for total, cases_ in zip(per_file, in_cases, strict=True)]
    floor_per_file = median(f["floor"])
    print("\nwhere a file's time goes, batch --jobs 1 (each round's mean per file, median round; seconds):")
    print(f"  the report's seconds (read, policy, start, import, cases, last check, close)  {median(per_file):.3f}")
    trips_text = f"{median(in_cases):.3f}  ({median(in_cases) / floor_per_file:.2f}x the floor's calls)"
    print(f"  the cases' round trips (request sent to answer arrived), summed               {trips_text}")
    print(f"  the rest: start (fork from the pool), the file's import, last check, close    {median(rest):.3f}")
    batch_one = median(f["batch 1"])
    print(f"  outside any report (the command's start-up and end, the cases' preparation) {batch_one - median(per_file):.3f}  (of {batch_one:.3f} per file)")
    per_case_floor: dict[str, list[float]] = defaultdict(list)
    for sums in f["floor per case"]:
        for name, (forward, gradient) in sums.items():
            per_case_floor[name].append((forward + gradient) / FILES)
    trips: dict[str, list[float]] = defaultdict(list)
    for line in (line for lines in breakdown for line in lines):
        for case in line["cases"]:
            trips[case["name"]].append(case["seconds"])
    slowest = sorted(trips, key=lambda name: -median(trips[name]))[:5]
    shown = [f"{n} {median(trips[n]) * 1000:.1f} ms / {median(per_case_floor[n]) * 1000:.1f} ms" for n in slowest]
    print("  slowest cases, a round trip beside the floor's calls:", ", ".join(shown))

    print(f"\nfor docs/performance.md (load average before {loads[0]}, after {loads[1]}):")
    print("| per file, 36 correct files | median seconds | x floor |")
    print("| --- | --- | --- |")
    print(f"| floor (the submission's calls, in-process) | {floor_per_file:.3f} | 1.00 |")
    for jobs in (1, 2):
        print(f"| `python -m grader batch --jobs {jobs}` | {median(f[f'batch {jobs}']):.3f} | {median(f[f'ratio {jobs}']):.2f} |")
    print(f"| scaling 1 -> 2 jobs | {median(f['scaling']):.2f}x | |")
    none = median(f["no work"])
    print(f"| `batch --jobs 1` over {FILES} files that do no work (`bench/{NO_WORK.name}`) | {none:.3f} | {none / floor_per_file:.2f} |")
    for jobs in (1, 2):
        print(f"| warm pool, {jobs} job(s), start-up excluded | {median(f[f'warm {jobs}']):.3f} | {median(f[f'warm {jobs}']) / floor_per_file:.2f} |")
    print(f"| scaling 1 -> 2 jobs, warm pool | {median(f['warm scaling']):.2f}x | |")
    print(f"| the most 2 jobs could gain on 2 cores, given a file's CPU with 1 job | {median(f['warm scaling bound']):.2f}x | |")
    pair = f"{median(f['one grading']):.2f} / {median(f['import torch']):.2f}"
    print(f'| `python -m grader FILE` / `python -c "import torch"` | {pair} | {median(f["one grading ratio"]):.2f}x |')


# --- --profile: the grader's own process ------------------------------------------------------------


class Phases:
    """A stopwatch around functions of the grader, wrapped in this process only."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = defaultdict(float)
        self.cases: list[tuple[str, float, float, dict, dict]] = []  # name, round trip, child's forward, reply, tensors
        self._undo: list[tuple[object, str, object]] = []

    def wrap(self, owner: object, attribute: str, phase: str) -> None:
        original = getattr(owner, attribute)
        seconds = self.seconds

        def timed(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                return original(*args, **kwargs)
            finally:
                seconds[phase] += time.perf_counter() - started

        self._undo.append((owner, attribute, original))
        setattr(owner, attribute, timed)

    def wrap_request(self) -> None:
        """Time each request from when the child could begin it (its sending, or the answer before
        when it was sent ahead, Child.send_ahead) to its answer's arrival (Child.answer), a case's
        apart from the rest (start, finish)."""
        from grader.sandbox.child import Child

        submit, send_ahead, answer, cases, seconds = Child.submit, Child.send_ahead, Child.answer, self.cases, self.seconds

        def sent(child: Child, message: dict) -> None:
            if not hasattr(child, "bench_sent"):
                child.bench_sent, child.bench_answered = collections.deque(), 0.0  # type: ignore[attr-defined]
            child.bench_sent.append((message, time.perf_counter()))  # type: ignore[attr-defined]

        def timed_submit(child: Child, message: dict, *args: Any, **kwargs: Any) -> Any:
            sent(child, message)
            return submit(child, message, *args, **kwargs)

        def timed_send_ahead(child: Child, message: dict, *args: Any, **kwargs: Any) -> Any:
            sent(child, message)
            went = send_ahead(child, message, *args, **kwargs)
            if not went:
                child.bench_sent.pop()  # type: ignore[attr-defined]
            return went

        def timed_answer(child: Child, *args: Any, **kwargs: Any) -> Any:
            reply, received = answer(child, *args, **kwargs)
            now = time.perf_counter()
            if getattr(child, "bench_sent", None):
                message, started = child.bench_sent.popleft()  # type: ignore[attr-defined]
                took = now - max(started, child.bench_answered)  # type: ignore[attr-defined]
                if message["kind"] == "case":
                    cases.append((message["name"], took, reply.get("seconds", 0.0), reply, received))
                else:
                    seconds[f"request {message['kind']}"] += took
            child.bench_answered = now  # type: ignore[attr-defined]
            return reply, received

        self._undo += [(Child, "submit", submit), (Child, "send_ahead", send_ahead), (Child, "answer", answer)]
        Child.submit, Child.send_ahead, Child.answer = timed_submit, timed_send_ahead, timed_answer  # type: ignore[method-assign]

    def undo(self) -> None:
        for owner, attribute, original in reversed(self._undo):
            setattr(owner, attribute, original)


def transfer_seconds(cases: list, replies: dict[str, tuple[dict, dict]]) -> float:
    """What the frames of one file's cases cost to encode and decode, measured here: each request
    encoded (the grader), each answer encoded (the child) and read back, checked (the grader)."""
    from grader import protocol
    from grader.child import wire
    from grader.spec import load_spec

    spec = load_spec()
    started = time.perf_counter()
    for case in cases:
        wire.encode(*case.request())
        reply, tensors = replies[case.name]
        stream = io.BytesIO(wire.encode(reply, tensors))
        expect = protocol.expect_result(case, spec)
        header, described = wire.read_header(stream)
        protocol.check(header, described, expect)
        protocol.read_tensors(stream, described, expect)
    return time.perf_counter() - started


def busy_cpu_seconds() -> float:
    """CPU seconds every core of this machine has spent busy since boot (/proc/stat: all but idle
    and iowait), whichever process spent them: a sandboxed child's included."""
    with open("/proc/stat") as stat:
        ticks = [int(field) for field in stat.readline().split()[1:]]
    return (sum(ticks) - ticks[3] - ticks[4]) / os.sysconf("SC_CLK_TCK")


def grade_all(jobs: int, sources: dict[str, bytes], warm: bool = False) -> tuple[float, float, float]:
    """Wall seconds of grading the sources through one Grader, its pool's start and close included,
    the CPU seconds of the grader's own process, and those the whole machine spent meanwhile (the
    sandboxed children are reaped inside the sandbox, and their CPU time does not all reach
    RUSAGE_CHILDREN). warm: the clocks start once one file has been graded, so that the pool is
    warm and the cases prepared (what a long batch or a pipeline's Grader pays per file, without
    the start-up a 36-file batch shares out)."""
    import resource

    from grader import Grader

    def clocks() -> tuple[float, float, float]:
        usage = resource.getrusage(resource.RUSAGE_SELF)
        return time.perf_counter(), usage.ru_utime + usage.ru_stime, busy_cpu_seconds()

    started = clocks()
    with Grader(jobs=jobs, seed=SEED) as grader:
        if warm:
            grader.grade(next(iter(sources.values())))
            started = clocks()
        verdicts = {report.id: report.verdict for report in grader.grade_many(sources)}
    took, own, busy = (end - start for end, start in zip(clocks(), started, strict=True))
    wrong = {key: verdict for key, verdict in verdicts.items() if verdict != "accepted"}
    if len(verdicts) != len(sources) or wrong:
        raise SystemExit(f"not accepted: {wrong}")
    return took, own, busy


@contextlib.contextmanager
def every_thread_profiled(profiles: list[cProfile.Profile]):
    """cProfile sees one thread: each thread started meanwhile (the jobs, the reading threads, the
    watchdogs) runs under a profile of its own, gathered in `profiles`, timed with time.thread_time.
    The rows of calls that block (select, recv, a lock) still showed long times in a run on a busy
    machine, far above the process's CPU time: read them as waiting, and the grader's own functions
    as its work (inflated by the profiler, most in code of many small calls: the policy's AST walk)."""
    run = threading.Thread.run

    def profiled(thread: threading.Thread) -> None:
        profile = cProfile.Profile(time.thread_time)
        profiles.append(profile)
        profile.runcall(run, thread)

    threading.Thread.run = profiled  # type: ignore[method-assign]
    main = cProfile.Profile(time.thread_time)
    profiles.append(main)
    main.enable()
    try:
        yield
    finally:
        main.disable()
        threading.Thread.run = run  # type: ignore[method-assign]


def profile(jobs: int) -> None:
    import torch

    import grader.batch.schedule
    import grader.diagnosis
    import grader.report
    import grader.sandbox.zygote
    from grader import api, judge
    from grader.spec import DEFAULT_PROBLEM, load_spec

    torch.set_num_threads(1)
    files = correct_files()
    sources = {f"{n:03}_{p.stem}": p.read_bytes() for n, p in enumerate(files)}
    prepared = api._prepared(DEFAULT_PROBLEM, SEED, False)  # the cases and expected outputs, as a Grader computes them once
    cases = prepared.cases
    load_spec()
    wall, _, per_case_floor = floor(plain_entry_points(files), cases)  # warm-up
    wall, _, per_case_floor = floor(plain_entry_points(files), cases)
    print(f"{FILES} correct files x {len(cases)} cases, {jobs} job(s), in this process; load average {load_average()}")
    print(
        f"the floor: {wall / FILES:.4f} s per file (forward {sum(v[0] for v in per_case_floor.values()) / FILES:.4f}, "
        f"gradient {sum(v[1] for v in per_case_floor.values()) / FILES:.4f})"
    )

    phases = Phases()
    for owner, attribute, phase in [
        (judge, "read_source", "read the file"),
        (judge, "_check_policy", "static policy check"),
        (grader.sandbox.zygote.Zygote, "start_child", "start: a child from the warm pool"),
        (judge, "_send_start", "send the start frame"),
        (judge, "_wait_ready", "wait for ready: the child's hello, the file's import"),
        (judge, "judge_reply", "judge the replies (compare)"),
        (judge, "_finish", "the guard's last check (finish)"),
        (judge, "_keep_output", "keep the output"),
        (grader.sandbox.zygote.ZygoteChild, "close", "close the child (end it, reap it)"),
        (grader.diagnosis, "diagnose", "diagnosis"),
        (grader.batch.schedule, "hints", "hints"),
        (judge, "grade", "judge.grade in all"),
    ]:
        phases.wrap(owner, attribute, phase)
    phases.wrap_request()
    try:
        took, own_cpu, _ = grade_all(jobs, sources)
    finally:
        phases.undo()
    trips = sum(trip for _, trip, _, _, _ in phases.cases)
    forward = sum(seconds for _, _, seconds, _, _ in phases.cases)
    replies = {name: (reply, tensors) for name, _, _, reply, tensors in phases.cases}
    transfer = statistics.median(transfer_seconds(cases, replies) for _ in range(5))
    floor_forward = sum(v[0] for v in per_case_floor.values()) / FILES
    floor_gradient = sum(v[1] for v in per_case_floor.values()) / FILES

    print(f"\nwhere a file's time goes, seconds per file ({took:.1f} s for {FILES} files through Grader.grade_many, {took / FILES:.3f} s a file)")
    print(f"CPU of the grader's own process (every thread): {own_cpu / FILES:.3f} s per file")
    rows = dict(phases.seconds)
    rows["the cases' round trips (each request sent, computed, answered, read)"] = trips
    for name, seconds in sorted(rows.items(), key=lambda item: -item[1]):
        print(f"  {seconds / FILES:8.4f}  {name}")
    print("  the cases' round trips, split:")
    print(f"  {forward / FILES:8.4f}    the forward calls, as the child times them (guard and capability layer armed; floor {floor_forward:.4f})")
    print(f"  {transfer:8.4f}    the frames: requests encoded, answers encoded, read and checked (measured here, once per file)")
    rest = (trips - forward) / FILES - transfer
    print(f"  {rest:8.4f}    the rest: copies, the gradient call and product (floor {floor_gradient:.4f}), the guard's reads, hand-offs")

    profiles: list[cProfile.Profile] = []
    with every_thread_profiled(profiles):
        took, _, _ = grade_all(jobs, sources)
    stats = pstats.Stats(profiles[0], stream=sys.stdout)
    for more in profiles[1:]:
        with contextlib.suppress(TypeError):  # a thread that never ran its target has no stats
            stats.add(more)
    print(f"\nunder cProfile, CPU seconds of every thread of the grader's process ({len(profiles)} threads): {took:.1f} s wall for {FILES} files")
    stats.sort_stats("cumulative").print_stats(30)
    stats.sort_stats("tottime").print_stats(25)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("rounds", nargs="?", type=int, default=3, help="rounds of every measurement, interleaved (default 3: several minutes)")
    parser.add_argument(
        "--profile", nargs="?", type=int, const=1, metavar="JOBS", help="time each phase of a grading and profile the grader's own process (JOBS: default 1)"
    )
    args = parser.parse_args()
    if args.profile is not None:
        profile(args.profile)
    else:
        measure(args.rounds)


if __name__ == "__main__":
    main()
