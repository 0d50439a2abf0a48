"""Where the hidden cases' seed comes from, for `python -m grader`, `batch` and the Python API: the
secret (--seed, else the environment variable named in the spec) or the spec's fixed local seed,
which anyone can reproduce and which a real grading refuses unless told otherwise."""

import ctypes
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from grader.spec import Spec


class Backend(Protocol):
    """What the seed needs to know of the isolation backend chosen (grader/sandbox/backends.py)."""

    name: str
    keeps_secret: bool


class SeedRefused(Exception):
    """The grading cannot start with the seed and isolation as given; the message says why and what to do."""


@dataclass(frozen=True)
class Seeding:
    seed: str  # what the hidden cases come from: the secret, else the spec's fixed local seed
    secret: bool
    backend: str
    warnings: list[str]  # what every report must say about the seed (empty for a secret one)


def secret_from(spec: Spec, given: str | None, *, default_allowed: bool = True) -> str | None:
    """The secret seed: `given` (--seed), else the spec's environment variable; None when neither is
    set. An empty one is refused: it would silently mean the fixed local seed."""
    secret = given if given is not None else os.environ.get(spec.seed_env_var)
    if secret == "":
        given_as = "--seed is" if given is not None else f"{spec.seed_env_var} is set but"
        raise SeedRefused(f"{given_as} empty; give a secret seed" + (", or leave it out to use the fixed local seed" if default_allowed else ""))
    return secret


def scrub_secret(env_var: str, secret: str) -> None:
    """Remove a secret from what other processes can read of this one: the environment variable
    `env_var` and any command-line argument holding `secret` (`--seed S`, `--seed=S`).
    /proc/<pid>/environ and /proc/<pid>/cmdline show the strings the kernel placed at the top of the
    stack when the process started, which os.environ.pop() and unsetenv() leave in place, so the
    bytes are overwritten there, in this process's own memory. Call it before any child starts."""
    os.environ.pop(env_var, None)  # also unsetenv(): children no longer inherit it
    try:
        fields = Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()
        arg_start, arg_end, env_start, env_end = (int(f) for f in fields[45:49])  # fields 48 to 51 of proc(5)
    except (OSError, ValueError):  # not Linux, or a kernel older than 3.5: nothing there to scrub
        return
    secret_bytes = os.fsencode(secret)
    for start, end, holds_secret in (
        (env_start, env_end, lambda entry: entry.startswith(os.fsencode(env_var) + b"=")),
        (arg_start, arg_end, lambda entry: entry == secret_bytes or (entry.startswith(b"--") and entry.endswith(b"=" + secret_bytes))),
    ):
        offset = 0
        for entry in ctypes.string_at(start, end - start).split(b"\0"):
            if entry and holds_secret(entry):
                ctypes.memset(start + offset, 0, len(entry))
            offset += len(entry) + 1


def take_seed(
    spec: Spec,
    given: str | None,
    choose_backend: Callable[[bool], Backend],
    *,
    program: str,
    refuse_default: str | None = None,
    public_only: bool = False,
    vet_backend: Callable[[str], str | None] | None = None,
    seed_option: str = "--seed",
) -> Seeding:
    """Take the seed, then have the backend chosen, in the order that keeps the secret: it leaves
    the environment and the command line before any process starts (the backend probes included).
    choose_backend(secret_seed): the backend, which must keep a secret seed unless the caller's
    isolation level insists on one that cannot; whatever it raises reaches the caller.

    refuse_default: why this grading needs a secret seed (e.g. "a batch grades for real"), or None
    when the fixed local seed may be used. vet_backend: an error message for a backend the caller's
    options cannot use, else None. Raises SeedRefused (a usage error); prints the warnings to stderr
    once, prefixed by `program`."""
    secret = secret_from(spec, given, default_allowed=refuse_default is None)
    if secret is not None:
        scrub_secret(spec.seed_env_var, secret)
    backend = choose_backend(secret is not None)
    if vet_backend is not None and (problem := vet_backend(backend.name)):
        raise SeedRefused(problem)
    if secret is not None and not backend.keeps_secret:
        print(f"{program}: warning: --isolation {backend.name} does not keep the secret seed from the submission (same user, no walls)", file=sys.stderr)
    seed = secret or spec.default_hidden_seed
    warnings = spec.seed_warnings(seed, public_only=public_only)
    if warnings and refuse_default is not None:
        raise SeedRefused(
            f"{refuse_default}, so it needs a secret seed: set {spec.seed_env_var} (or {seed_option}), "
            "or pass --allow-default-seed to use the fixed local seed, which anyone can reproduce"
        )
    for warning in warnings:
        print(f"{program}: warning: {warning}", file=sys.stderr)
    return Seeding(seed, secret is not None, backend.name, warnings)
