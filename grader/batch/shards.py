"""Shards: `--shard INDEX/COUNT` keeps the submissions whose sha256(id) mod COUNT is INDEX, so that
COUNT machines (a Kubernetes Indexed Job) grade each submission exactly once."""

import hashlib
import re

from grader.batch.exits import UsageError


def parse_shard(text: str) -> tuple[int, int]:
    match = re.fullmatch(r"(\d+)/(\d+)", text)
    if not match or int(match[2]) < 1 or int(match[1]) >= int(match[2]):
        raise UsageError(f"--shard {text}: expected INDEX/COUNT with 0 <= INDEX < COUNT, e.g. 0/4")
    return int(match[1]), int(match[2])


def in_shard(submission_id: str, index: int, count: int) -> bool:
    """A submission belongs to shard sha256(id) mod COUNT: each to exactly one shard, and it stays
    there when other submissions are added or removed."""
    return int.from_bytes(hashlib.sha256(submission_id.encode()).digest()[:8], "big") % count == index
