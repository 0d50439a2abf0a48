"""Shards: `--shard INDEX/COUNT` keeps the submissions whose sha256(id) mod COUNT is INDEX, so that
COUNT machines (a Kubernetes Indexed Job) grade each submission exactly once."""

import hashlib
import re

from grader.batch.discovery import Submission
from grader.batch.exits import UsageError


def parse_shard(text: str) -> tuple[int, int]:
    """INDEX and COUNT of `--shard INDEX/COUNT`."""
    match = re.fullmatch(r"(\d+)/(\d+)", text)
    if not match or int(match[2]) < 1 or int(match[1]) >= int(match[2]):
        raise UsageError(f"--shard {text}: expected INDEX/COUNT with 0 <= INDEX < COUNT, e.g. 0/4")
    return int(match[1]), int(match[2])


def in_shard(submission_id: str, index: int, count: int) -> bool:
    """A submission belongs to shard sha256(id) mod COUNT: each to exactly one shard, and it stays
    there when other submissions are added or removed."""
    return int.from_bytes(hashlib.sha256(submission_id.encode()).digest()[:8], "big") % count == index


def keep_shard(submissions: list[Submission], index: int, count: int) -> tuple[list[Submission], str]:
    """The submissions of shard INDEX of COUNT, and a note saying how many of all."""
    kept = [s for s in submissions if in_shard(s.id, index, count)]
    return kept, f"shard {index}/{count}: {len(kept)} of {len(submissions)} submissions"
