"""Where the hidden cases' seed comes from, for `python -m grader`, `batch` and the Python API: the
secret (--seed, else the environment variable named in the spec) or the spec's fixed local seed,
which anyone can reproduce and which a real grading refuses unless told otherwise."""

import os
import sys
from collections.abc import Callable
from dataclasses import dataclass

from grader.isolation import IsolationUnavailable, choose_backend, scrub_secret
from grader.spec import Spec


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


def take_seed(
    spec: Spec,
    given: str | None,
    isolation: str,
    *,
    program: str,
    refuse_default: str | None = None,
    public_only: bool = False,
    vet_backend: Callable[[str], str | None] | None = None,
) -> Seeding:
    """Take the seed and choose the backend, in the order that keeps the secret: it leaves the
    environment and the command line before any process starts (the backend probes included), and
    `auto` never falls back to a backend that cannot keep it.

    refuse_default: why this grading needs a secret seed (e.g. "a batch grades for real"), or None
    when the fixed local seed may be used. vet_backend: an error message for a backend the caller's
    options cannot use, else None. Raises SeedRefused (a usage error); prints the warnings to stderr
    once, prefixed by `program`."""
    secret = secret_from(spec, given, default_allowed=refuse_default is None)
    if secret is not None:
        scrub_secret(spec.seed_env_var, secret)
    try:
        backend = choose_backend(isolation, secret_seed=secret is not None)
    except IsolationUnavailable as error:
        raise SeedRefused(str(error)) from None
    if vet_backend is not None and (problem := vet_backend(backend)):
        raise SeedRefused(problem)
    if secret is not None and backend == "process":
        print(f"{program}: warning: --isolation process does not keep the secret seed from the submission (same user, no walls)", file=sys.stderr)
    seed = secret or spec.default_hidden_seed
    warnings = spec.seed_warnings(seed, public_only=public_only)
    if warnings and refuse_default is not None:
        raise SeedRefused(
            f"{refuse_default}, so it needs a secret seed: set {spec.seed_env_var} (or --seed), "
            "or pass --allow-default-seed to use the fixed local seed, which anyone can reproduce"
        )
    for warning in warnings:
        print(f"{program}: warning: {warning}", file=sys.stderr)
    return Seeding(seed, secret is not None, backend, warnings)
