"""The grading service under load, beside `python -m grader batch` with the same jobs on the same
files, in one run. Loopback only (127.0.0.1, a port the system picks); bounded in count (--count
submissions) and in time (--max-seconds: past it the run stops, the service is killed, the exit
status is 1).

1. A class folder of --count submissions (default 200) from reference/mlm_forward_tied/submissions,
   taken in turn from accepted, wrong_answer, runtime_error (crashing) and forbidden_api, hostile_*
   left out; --hanging of them (default 4) from time_limit_exceeded, each running until the case's
   limit (10 s); and the pool attacks of tests/submissions/pool_attacks, each appended to an honest
   file as tests/test_pool.py grades them.
2. `python -m grader batch FOLDER --jobs J`: its wall seconds (its start-up included) and verdicts.
3. `python -m grader serve --jobs J --problem mlm-forward-tied` (the batch's one challenge): its
   start-up until /readyz says ready; then --clients threads (grader.client.Client, one shared)
   send the folder's files one request each: the wall from the first request to the last answer,
   each request's latency (p50, p95), the answers by HTTP status and by verdict; the verdicts must
   equal the batch's, file by file.
4. Four times the capacity (jobs + queue): that many client threads at once, two requests each of
   files that do not hang, retried as the client does: every 429 must carry a Retry-After, and every
   request must end with its verdict (none lost).
5. SIGTERM under load: requests filling every place (jobs running, the queue full), then SIGTERM:
   every request the service had accepted must be answered with its verdict, a new connection must
   be refused, the process must exit, and no process it started may remain.

    .venv/bin/python bench/service_load.py [--count 200] [--jobs 2] [--clients 8] [--hanging 4] [--max-seconds 1800]
"""

import argparse
import collections
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import ENV, EXAMPLES, ROOT, copy_folder, run_timed, submissions  # noqa: E402

sys.path.insert(0, str(ROOT))
from grader.client import Client  # noqa: E402

FOLDERS = ("accepted", "wrong_answer", "runtime_error", "forbidden_api")
HANGING = ("infinite_loop_in_call", "prints_then_spins")  # each runs until the case's limit; busy_import would take the start-up's (60 s)
ATTACKS = ROOT / "tests" / "submissions" / "pool_attacks"
HONEST = EXAMPLES / "accepted" / "plain_helpers.py"
KINDS = (*FOLDERS, "time_limit_exceeded", "attacks")  # the folder each file of the class folder came from


class OutOfTime(Exception):
    pass


class Budget:
    def __init__(self, seconds: float) -> None:
        self.end = time.monotonic() + seconds

    def left(self, what: str) -> float:
        left = self.end - time.monotonic()
        if left <= 0:
            raise OutOfTime(f"out of time before {what} (--max-seconds)")
        return left


def class_files(parent: Path, count: int, hanging: int) -> Path:
    """The folder of `count` submissions: the attacks and the hanging ones first, spread through the mix."""
    attacks = []
    for attack in sorted(p for p in ATTACKS.glob("*.py")):
        path = parent / "attacks" / f"attack_{attack.stem}.py"
        path.parent.mkdir(exist_ok=True)
        path.write_text(attack.read_text() + "\n\n" + HONEST.read_text())
        attacks.append(path)
    hangs = [EXAMPLES / "time_limit_exceeded" / f"{HANGING[n % len(HANGING)]}.py" for n in range(hanging)]
    rest = submissions(FOLDERS, count - len(attacks) - len(hangs))
    step = max(1, len(rest) // (len(attacks) + len(hangs) + 1))
    files = list(rest)
    for number, special in enumerate(attacks + hangs):
        files.insert(min(len(files), (number + 1) * step + number), special)
    return copy_folder(parent, files[:count])


def batch(folder: Path, jobs: int, out: Path, budget: Budget) -> tuple[float, dict[str, str]]:
    budget.left("the batch")
    timed = run_timed([sys.executable, "-m", "grader", "batch", str(folder), "--jobs", str(jobs), "--out", str(out)])
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    if timed.returncode != 0 or len(lines) != len(list(folder.iterdir())):
        raise SystemExit(f"batch: exit status {timed.returncode}, {len(lines)} lines")
    return timed.wall, {line["id"]: line["verdict"] for line in lines}


class Service:
    """`python -m grader serve` on 127.0.0.1, its log kept."""

    def __init__(self, jobs: int, queue: int, budget: Budget) -> None:
        self.started = time.perf_counter()
        command = [sys.executable, "-m", "grader", "serve", "--port", "0", "--jobs", str(jobs), "--queue", str(queue), "--problem", "mlm-forward-tied"]
        self.process = subprocess.Popen(command, cwd=ROOT, env=ENV, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        self.log: list[str] = []
        listening = threading.Event()

        def read() -> None:
            for line in self.process.stderr:
                self.log.append(line)
                if "listening on" in line:
                    listening.set()
            listening.set()

        threading.Thread(target=read, daemon=True).start()
        listening.wait(budget.left("the service listens"))
        found = re.search(r"listening on (http://\S+)", "".join(self.log))
        if not found:
            raise SystemExit("the service did not start:\n" + "".join(self.log))
        self.url = found.group(1)
        while httpx.get(f"{self.url}/readyz").status_code != 200:
            budget.left("the service is ready")
            if self.process.poll() is not None:
                raise SystemExit("the service ended:\n" + "".join(self.log))
            time.sleep(0.1)
        self.ready_seconds = time.perf_counter() - self.started

    def metric(self, name: str) -> float:
        text = httpx.get(f"{self.url}/metrics").text
        return sum(float(m.group(1)) for m in re.finditer(rf"^{name}(?:{{[^}}]*}})? (\S+)$", text, re.MULTILINE))

    def descendants(self) -> set[int]:
        found, parents = set(), [self.process.pid]
        while parents:
            for task in Path(f"/proc/{parents.pop()}/task").glob("*"):
                try:
                    children = {int(pid) for pid in (task / "children").read_text().split()}
                except (OSError, ValueError):
                    continue
                parents += list(children - found)
                found |= children
        return found

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()


def alive(pids: set[int]) -> set[int]:
    living = set()
    for pid in pids:
        try:
            state = next(line for line in Path(f"/proc/{pid}/status").read_text().splitlines() if line.startswith("State:"))
        except (OSError, StopIteration):
            continue
        if "zombie" not in state:
            living.add(pid)
    return living


class Counted:
    """An httpx client that counts the statuses it receives, and the 429s without a Retry-After."""

    def __init__(self) -> None:
        self.statuses: collections.Counter[int] = collections.Counter()
        self.no_retry_after = 0
        self.lock = threading.Lock()
        self.http = httpx.Client(timeout=600, limits=httpx.Limits(max_connections=512), event_hooks={"response": [self.count]})

    def count(self, response: httpx.Response) -> None:
        with self.lock:
            self.statuses[response.status_code] += 1
            if response.status_code == 429 and not response.headers.get("retry-after", "").isdigit():
                self.no_retry_after += 1


def grade_all(service: Service, files: list[Path], clients: int, retries: int, budget: Budget) -> tuple[float, dict[str, str], list[float], Counted]:
    """Each file one request, from `clients` threads sharing one Client; wall, verdicts, latencies."""
    counted = Counted()
    client = Client(service.url, http=counted.http, retries=retries, max_backoff=5.0)
    verdicts: dict[str, str] = {}
    latencies: list[float] = []
    pending = iter(files)
    lock = threading.Lock()

    def worker() -> None:
        while True:
            with lock:
                path = next(pending, None)
            if path is None or time.monotonic() > budget.end:
                return
            began = time.perf_counter()
            report = client.grade(path.read_bytes(), id=path.stem)
            with lock:
                latencies.append(time.perf_counter() - began)
                verdicts[path.stem] = str(report.verdict)

    started = time.perf_counter()
    with ThreadPoolExecutor(clients) as threads:
        for future in [threads.submit(worker) for _ in range(clients)]:
            future.result()
    budget.left("the end of a round of requests")
    return time.perf_counter() - started, verdicts, latencies, counted


def sigterm_under_load(service: Service, files: list[Path], capacity: int, budget: Budget) -> dict[str, object]:
    """Fill every place with one request each (no retries: what happens to each is seen), SIGTERM,
    then whatever was accepted must be answered."""
    answers: dict[str, object] = {}

    def send(path: Path) -> None:
        try:
            response = httpx.post(f"{service.url}/v1/grade", json={"source": path.read_text(), "id": path.stem}, timeout=600)
            answers[path.stem] = (response.status_code, response.json().get("verdict"))
        except httpx.TransportError as error:
            answers[path.stem] = ("not accepted", type(error).__name__)

    threads = [threading.Thread(target=send, args=(path,)) for path in files[:capacity]]
    for thread in threads:
        thread.start()
    while service.metric("mlm_grader_places") < capacity:
        budget.left("every place is taken")
        time.sleep(0.05)
    processes = alive(service.descendants())
    running, waiting = service.metric("mlm_grader_running"), service.metric("mlm_grader_queue_depth")
    signalled = time.perf_counter()
    service.process.send_signal(signal.SIGTERM)
    time.sleep(0.5)
    try:
        httpx.get(f"{service.url}/healthz", timeout=5)
        refused = False
    except httpx.ConnectError:
        refused = True
    for thread in threads:
        thread.join(budget.left("the answers after SIGTERM"))
    service.process.wait(budget.left("the service's exit"))
    exited = time.perf_counter() - signalled
    time.sleep(0.5)
    return {
        "in flight": int(running),
        "queued": int(waiting),
        "answers": answers,
        "new connection refused": refused,
        "exit seconds": exited,
        "exit status": service.process.returncode,
        "processes before": len(processes),
        "processes left": len(alive(processes)),
    }


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--count", type=int, default=200)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--queue", type=int, help="the service's --queue (default: its own, 4 per job)")
    parser.add_argument("--clients", type=int, default=8, help="client threads at once in the throughput round (default 8)")
    parser.add_argument("--hanging", type=int, default=4)
    parser.add_argument("--max-seconds", type=float, default=1800)
    args = parser.parse_args()
    budget = Budget(args.max_seconds)
    queue = args.queue if args.queue is not None else 4 * args.jobs
    capacity = args.jobs + queue
    load_before = os.getloadavg()
    service = None
    with tempfile.TemporaryDirectory(prefix="mlm-grader-service-load-") as tmp:
        try:
            folder = class_files(Path(tmp), args.count, args.hanging)
            files = sorted(folder.iterdir())
            kinds = collections.Counter(next(k for k in KINDS if p.stem.split("_", 1)[1].startswith(k + "_")) for p in files)
            batch_seconds, batch_verdicts = batch(folder, args.jobs, Path(tmp) / "results.jsonl", budget)

            service = Service(args.jobs, queue, budget)
            wall, verdicts, latencies, counted = grade_all(service, files, args.clients, retries=6, budget=budget)
            service_total = time.perf_counter() - service.started

            quick = [p for p in files if "time_limit_exceeded" not in p.stem][: 8 * capacity]
            over_wall, over_verdicts, _, over = grade_all(service, quick, 4 * capacity, retries=200, budget=budget)

            restarts = service.metric("mlm_grader_pool_restarts_total")
            slow = Path(tmp) / "slow"
            slow.mkdir()
            for number in range(capacity):  # a correct file that first spends a second or two of CPU at import
                (slow / f"slow_{number}.py").write_text("_ = sum(range(40_000_000))\n\n" + HONEST.read_text())
            stop = sigterm_under_load(service, sorted(slow.iterdir()), capacity, budget)
        except OutOfTime as error:
            print(f"service_load: {error}", file=sys.stderr)
            if service:
                service.kill()
            return 1
        finally:
            if service:
                service.kill()

    count = len(files)
    differ = {k: (batch_verdicts.get(k), v) for k, v in verdicts.items() if batch_verdicts.get(k) != v}
    over_differ = {k: (batch_verdicts.get(k), v) for k, v in over_verdicts.items() if batch_verdicts.get(k) != v}
    answers = stop["answers"]
    accepted = {k: v for k, v in answers.items() if v[0] != "not accepted"}
    print(f"{count} submissions ({', '.join(f'{n} {k}' for k, n in sorted(kinds.items()))}); {args.jobs} jobs, queue {queue} (capacity {capacity})")
    print(f"load average (1, 5, 15 min) before {' '.join(f'{x:.2f}' for x in load_before)}, after {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(f"{'':52s} {'seconds':>8s} {'files/s':>8s} {'x batch':>8s}")

    def row(label: str, seconds: float) -> None:
        print(f"{label:52s} {seconds:8.1f} {count / seconds:8.2f} {batch_seconds / seconds:8.2f}")

    row(f"python -m grader batch --jobs {args.jobs} (start-up included)", batch_seconds)
    row(f"serve --jobs {args.jobs}, {args.clients} clients, once ready", wall)
    row(f"serve, its start-up included (ready in {service.ready_seconds:.1f} s)", service_total)
    print(f"latency, request to answer: p50 {statistics.median(latencies):.2f} s, p95 {percentile(latencies, 0.95):.2f} s, max {max(latencies):.2f} s")
    print(f"answers by HTTP status: {dict(sorted(counted.statuses.items()))}; by verdict: {dict(sorted(collections.Counter(verdicts.values()).items()))}")
    print(f"verdicts equal to the batch's: {count - len(differ)} of {count}" + (f"; differ: {differ}" if differ else ""))
    print(
        f"4x capacity ({4 * capacity} clients at once): {len(quick)} requests, {over.statuses[429]} answers 429 "
        f"({over.no_retry_after} without Retry-After), {len(over_verdicts)} of {len(quick)} ended with a verdict "
        f"({sum(v == 'grader_error' for v in over_verdicts.values())} grader_error), equal to the batch's: {len(over_verdicts) - len(over_differ)}, "
        f"in {over_wall:.1f} s; lost: {len(quick) - len(over_verdicts)}"
    )
    print(
        f"SIGTERM under load ({stop['in flight']} in flight, {stop['queued']} queued): {len(accepted)} accepted, "
        f"{sum(v[0] == 200 and v[1] not in (None, 'grader_error') for v in accepted.values())} of them answered with a verdict "
        f"({dict(collections.Counter(v[1] for v in accepted.values()))}); new connection refused: {stop['new connection refused']}; "
        f"exit {stop['exit seconds']:.1f} s after SIGTERM (status {stop['exit status']}); "
        f"processes it started: {stop['processes before']}, left: {stop['processes left']}"
    )
    print(f"pool restarts during the run: {restarts:g}")
    ok = not differ and not over_differ and len(over_verdicts) == len(quick) and not over.no_retry_after and stop["processes left"] == 0
    ok = ok and all(v[0] == 200 for v in accepted.values()) and len(verdicts) == count
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
