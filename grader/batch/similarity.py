"""Which submissions of a class share unusually much code: normalised tokens and k-gram fingerprints,
the approach of MOSS (Schleimer, Wilkerson and Aiken, "Winnowing: local algorithms for document
fingerprinting", SIGMOD 2003) and of copydetect, without their dependencies (copydetect's HTML
report needs matplotlib and its nine packages).

1. Each submission's code (a notebook's code cells, grader/notebook.py) is split into Python's own
   tokens; comments and blank lines are dropped; every name but keywords, built-ins and attribute
   names becomes V, every number 0, every string S: renaming variables, reformatting or
   re-commenting changes nothing.
2. Every run of K consecutive tokens is hashed (its fingerprint).
3. Fingerprints of the starter code (the challenge's stub) are removed, and so are those found in
   more than COMMON_SHARE of the class (at least COMMON_LEAST submissions): the idioms that every
   correct solution of one tightly specified function shares, as MOSS's `-m` ignores passages
   found in many programs.
4. For each pair, the share of each one's tokens covered by fingerprints the two have in common;
   the pair's similarity is the smaller share (both submissions are mostly the same code), and
   pairs at SIMILAR or more are reported, with the shared code marked in each.
"""

import builtins
import hashlib
import io
import keyword
import tokenize
from collections import defaultdict
from dataclasses import dataclass, field
from itertools import combinations

K = 12  # tokens per fingerprint: long enough that a shared run is not a common idiom by chance
COMMON_SHARE = 0.5
COMMON_LEAST = 10
SIMILAR = 0.6  # both submissions share at least this share of their tokens (docs/lms.md: what was measured)
MOST_PAIRS = 50
_KEPT_NAMES = frozenset(keyword.kwlist) | frozenset(keyword.softkwlist) | frozenset(dir(builtins))


@dataclass
class Code:
    """One submission's code as normalised tokens, each with where it is in the text."""

    id: str
    text: str
    tokens: list[str] = field(default_factory=list)
    spans: list[tuple[tuple[int, int], tuple[int, int]]] = field(default_factory=list)  # (line, column) start and end
    hashes: list[int] = field(default_factory=list)  # hashes[i]: the K tokens from i


def normalised(code_id: str, text: str) -> Code:
    """The code's tokens, normalised (see the module's docstring); a file that does not tokenize
    to its end keeps the tokens before the error."""
    code = Code(code_id, text)
    previous = ""
    try:
        for token in tokenize.generate_tokens(io.StringIO(text).readline):
            kind = token.type
            if kind in (tokenize.COMMENT, tokenize.NL, tokenize.ENCODING, tokenize.ENDMARKER):
                continue
            if kind == tokenize.NAME:
                shown = token.string if token.string in _KEPT_NAMES or previous == "." else "V"
            elif kind == tokenize.NUMBER:
                shown = "0"
            elif kind == tokenize.STRING or kind in _FSTRING:
                shown = "S"
            elif kind == tokenize.NEWLINE:
                shown = ";"
            elif kind == tokenize.INDENT:
                shown = "{"
            elif kind == tokenize.DEDENT:
                shown = "}"
            else:
                shown = token.string
            previous = token.string
            code.tokens.append(shown)
            code.spans.append((token.start, token.end))
    except (tokenize.TokenError, IndentationError, SyntaxError):
        pass
    code.hashes = [_hash(code.tokens[i : i + K]) for i in range(len(code.tokens) - K + 1)]
    return code


_FSTRING = {getattr(tokenize, name) for name in ("FSTRING_START", "FSTRING_MIDDLE", "FSTRING_END") if hasattr(tokenize, name)}


def _hash(tokens: list[str]) -> int:
    return int.from_bytes(hashlib.blake2b("\x1f".join(tokens).encode(), digest_size=8).digest(), "big")


@dataclass(frozen=True)
class Pair:
    a: Code
    b: Code
    share_a: float  # of a's tokens, the share covered by fingerprints shared with b
    share_b: float
    marked_a: frozenset[int]  # a's tokens that are shared
    marked_b: frozenset[int]

    @property
    def similarity(self) -> float:
        return min(self.share_a, self.share_b)


def _covered(code: Code, shared: set[int]) -> frozenset[int]:
    marked: set[int] = set()
    for start, value in enumerate(code.hashes):
        if value in shared:
            marked.update(range(start, start + K))
    return frozenset(marked)


@dataclass
class Comparison:
    pairs: list[Pair]  # at SIMILAR or more, most similar first (at most MOST_PAIRS)
    compared: int  # submissions compared
    ignored_common: int  # fingerprints ignored as common to much of the class
    starter_removed: int  # fingerprints of the starter code removed
    found: int = 0  # pairs at SIMILAR or more, before the cut at MOST_PAIRS


def compare(codes: list[Code], starter: str = "") -> Comparison:
    """Every pair of `codes` whose similarity is SIMILAR or more (see the module's docstring)."""
    starter_hashes = set(normalised("starter", starter).hashes) if starter else set()
    holders: dict[int, set[int]] = defaultdict(set)
    for index, code in enumerate(codes):
        for value in set(code.hashes) - starter_hashes:
            holders[value].add(index)
    common_limit = max(COMMON_LEAST, int(COMMON_SHARE * len(codes)))
    common = {value for value, who in holders.items() if len(who) > common_limit}
    shared_by: dict[tuple[int, int], set[int]] = defaultdict(set)
    for value, who in holders.items():
        if value in common or len(who) < 2:
            continue
        for pair in combinations(sorted(who), 2):
            shared_by[pair].add(value)
    pairs = []
    for (i, j), shared in shared_by.items():
        a, b = codes[i], codes[j]
        marked_a, marked_b = _covered(a, shared), _covered(b, shared)
        pair = Pair(a, b, len(marked_a) / max(1, len(a.tokens)), len(marked_b) / max(1, len(b.tokens)), marked_a, marked_b)
        if pair.similarity >= SIMILAR:
            pairs.append(pair)
    pairs.sort(key=lambda p: (-p.similarity, p.a.id, p.b.id))
    return Comparison(pairs[:MOST_PAIRS], len(codes), len(common), len(starter_hashes), len(pairs))
