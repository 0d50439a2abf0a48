"""The command `python -m grader serve`: its options, the secret seed and the bearer token, the
listening socket, and uvicorn running the app (app.py) until SIGTERM or SIGINT, which stop it
gracefully: no new connection, every request already accepted answered, the pools closed.
docs/service.md tells how to run it."""

import argparse
import ipaddress
import logging
import os
import socket
import sys
from pathlib import Path
from types import FrameType

import uvicorn

from grader.batch.schedule import default_jobs
from grader.sandbox import IsolationUnavailable
from grader.sandbox.backends import ISOLATION_LEVELS, backend_named, chooser
from grader.seeding import SeedRefused, scrub_secret, take_seed
from grader.service.app import MAX_DEADLINE, Service, Settings, build_app
from grader.spec import DEFAULT_PROBLEM, SetupError, UnknownProblem, problem_ids, problem_spec

EXIT_USAGE = 2
TOKEN_ENV = "MLM_GRADER_TOKEN"
SEED_FILE_ENV = "MLM_GRADER_SEED_FILE"
PROGRAM = "grader serve"


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m grader serve",
        description="Grade submissions over HTTP (POST /v1/grade, POST /v1/grade/batch; docs/service.md), each in its own "
        f"sandbox exactly as `python -m grader FILE` would. The secret seed comes from MLM_GRADER_SEED or a file "
        f"(--seed-file, {SEED_FILE_ENV}); when {TOKEN_ENV} is set, every /v1 request must carry it as a bearer token, "
        "and without one the service listens on loopback only. SIGTERM stops it gracefully.",
    )
    parser.add_argument("--host", default="127.0.0.1", help="the address to listen on (default 127.0.0.1; beyond loopback, MLM_GRADER_TOKEN must be set)")
    parser.add_argument("--port", type=int, default=8000, help="the port (default 8000; 0: any free port, printed when listening)")
    parser.add_argument("--jobs", type=int, default=default_jobs(), help="submissions graded at the same time, all problems together (default: the CPU cores)")
    parser.add_argument("--queue", type=int, help="requests waiting beyond those; the rest get 429 with Retry-After (default: 4 per job)")
    parser.add_argument(
        "--deadline",
        type=float,
        default=300.0,
        metavar="SECONDS",
        help="a request's deadline when it gives no deadline_seconds, its wait for a job included (default 300); past it the "
        "answer is a retryable grader_error",
    )
    parser.add_argument(
        "--problem",
        action="append",
        metavar="ID",
        help="a challenge to serve, each with its own warm pool (repeat it for several; default: every challenge installed)",
    )
    parser.add_argument(
        "--seed-file",
        type=Path,
        default=os.environ.get(SEED_FILE_ENV) or None,
        metavar="FILE",
        help=f"read the secret seed from FILE (default: {SEED_FILE_ENV} when set, else the environment variable MLM_GRADER_SEED)",
    )
    parser.add_argument(
        "--allow-default-seed",
        action="store_true",
        help="serve with the fixed local seed when no secret seed is set (anyone can reproduce its hidden cases; for trying the service out)",
    )
    parser.add_argument(
        "--isolation",
        choices=ISOLATION_LEVELS,
        default=os.environ.get("MLM_GRADER_ISOLATION", "auto"),
        help="how each submission is walled in, as for `python -m grader` (default: MLM_GRADER_ISOLATION when set, else auto)",
    )
    parser.add_argument("--access-log", action="store_true", help="log a line per HTTP request")
    args = parser.parse_args(argv)
    if args.jobs < 1:
        parser.error("--jobs must be at least 1")
    if args.queue is not None and args.queue < 0:
        parser.error("--queue must be at least 0")
    if not 0 < args.deadline <= MAX_DEADLINE:
        parser.error(f"--deadline must be above 0 and at most {MAX_DEADLINE:g} seconds")
    if not 0 <= args.port <= 65535:
        parser.error("--port must be between 0 and 65535")
    return args


class UsageError(Exception):
    """Told in one line on stderr; exit status 2."""


def loopback_only(host: str) -> bool:
    """True when every address `host` stands for is a loopback address (127.0.0.0/8, ::1)."""
    try:
        addresses = {info[4][0] for info in socket.getaddrinfo(host, None, type=socket.SOCK_STREAM)}
    except OSError:
        return False
    return bool(addresses) and all(ipaddress.ip_address(address.split("%")[0]).is_loopback for address in addresses)


def take_token(host: str) -> str | None:
    """The bearer token (MLM_GRADER_TOKEN), removed from what other processes can read of this one;
    UsageError when the service would listen beyond loopback without one."""
    token = os.environ.get(TOKEN_ENV)
    if token == "":
        raise UsageError(f"{TOKEN_ENV} is set but empty: give it a secret value, or unset it to serve on loopback without a token")
    if token is None and not loopback_only(host):
        raise UsageError(
            f"--host {host} reaches beyond this machine, and {TOKEN_ENV} is not set: set it to a secret that every request must carry "
            "(Authorization: Bearer ...), or listen on 127.0.0.1"
        )
    if token is not None:
        scrub_secret(TOKEN_ENV, token)
    return token


def read_seed_file(path: Path | None) -> str | None:
    if path is None:
        return None
    try:
        seed = path.read_text().strip()
    except (OSError, UnicodeDecodeError) as error:
        raise UsageError(f"cannot read the seed file {path}: {getattr(error, 'strerror', None) or error}") from None
    if not seed:
        raise UsageError(f"the seed file {path} is empty")
    if os.environ.get("MLM_GRADER_SEED"):
        raise UsageError(f"both MLM_GRADER_SEED and the seed file {path} give a seed: give one")
    return seed


def served_problems(asked: list[str] | None) -> tuple[str, ...]:
    installed = problem_ids()
    if not installed:
        raise UsageError("no challenge is installed (no problem/<id>/problem.toml)")
    for problem in asked or []:
        if problem not in installed:
            raise UsageError(f"there is no problem {problem!r} (problems: {', '.join(installed)})")
    return tuple(dict.fromkeys(asked)) if asked else tuple(installed)


def settings_of(args: argparse.Namespace) -> Settings:
    """Everything checked before anything starts: the problems, the token, the seed, the isolation."""
    problems = served_problems(args.problem)
    token = take_token(args.host)
    seed_given = read_seed_file(args.seed_file)
    spec = problem_spec(DEFAULT_PROBLEM if DEFAULT_PROBLEM in problems else problems[0])
    seeding = take_seed(
        spec,
        seed_given,
        chooser(args.isolation),
        program=PROGRAM,
        refuse_default=None if args.allow_default_seed else "a service grades for real",
        seed_option="--seed-file",
    )
    most = backend_named(seeding.backend).max_jobs or args.jobs
    if args.jobs > most:
        print(f"{PROGRAM}: {seeding.backend} isolation grades {most} submission at a time: --jobs {most}", file=sys.stderr)
    jobs = min(args.jobs, most)
    queue = args.queue if args.queue is not None else 4 * jobs
    return Settings(problems, seeding.seed, seeding.backend, jobs, queue, args.deadline, token)


def listening_socket(host: str, port: int) -> socket.socket:
    try:
        family, kind, _, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)[0]
        return socket.create_server(address, family=family)
    except OSError as error:
        raise UsageError(f"cannot listen on {host}:{port}: {error.strerror or error}") from None


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    try:
        settings = settings_of(args)
        sock = listening_socket(args.host, args.port)
    except (UsageError, SeedRefused, IsolationUnavailable, UnknownProblem, SetupError) as error:
        print(f"{PROGRAM}: {error}", file=sys.stderr)
        return EXIT_USAGE
    return serve(settings, sock, args.access_log)


def serve(settings: Settings, sock: socket.socket, access_log: bool) -> int:
    """Run the service on `sock` until it is stopped; 2 when it could not start serving."""
    import torch
    from prometheus_client import disable_created_metrics

    torch.set_num_threads(1)  # the grader's comparisons are of small tensors: threads would only spin against the jobs
    disable_created_metrics()  # /metrics without a *_created line beside every counter
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s: %(message)s", stream=sys.stderr)
    failed: list[str] = []
    service = Service(settings)
    config = uvicorn.Config(
        build_app(service),
        http="h11",
        loop="asyncio",
        lifespan="on",
        log_config=None,  # the root logger's format, set above
        access_log=access_log,
        timeout_graceful_shutdown=None,  # every request already accepted is answered
    )
    server = _Server(config, service)

    def fatal(why: str) -> None:
        failed.append(why)
        server.should_exit = True

    service.on_fatal = fatal
    host, port = sock.getsockname()[:2]
    shown = f"[{host}]" if ":" in host else host
    print(f"{PROGRAM}: listening on http://{shown}:{port} ({', '.join(settings.problems)}; ready once GET /readyz says so)", file=sys.stderr, flush=True)
    server.run(sockets=[sock])  # after a SIGTERM or SIGINT, uvicorn ends the process with that signal, as its default would
    if failed:
        print(f"{PROGRAM}: {failed[0]}", file=sys.stderr)
        return EXIT_USAGE
    return 0


class _Server(uvicorn.Server):
    """uvicorn's Server, which also tells the service when a signal asks it to stop."""

    def __init__(self, config: uvicorn.Config, service: Service) -> None:
        super().__init__(config)
        self.service = service

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        self.service.stop()
        super().handle_exit(sig, frame)
