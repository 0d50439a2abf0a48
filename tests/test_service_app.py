"""The service's checks of a request (grader/service/app.py), with no service running: the bearer
token compared in constant time, and a body read no further than its limit whatever its
Content-Length says. The same checks over HTTP, against a running service: tests/test_service.py."""

import asyncio
import hmac

import pytest
from starlette.requests import Request

from grader.service import app
from grader.service.app import Refused, Service, Settings

TOKEN = "app-test-token-p2Lq"


def service() -> Service:
    return Service(Settings(("mlm-forward-tied",), "app-test-seed", "process", 1, 1, token=TOKEN))


def request(headers: list[tuple[bytes, bytes]], chunks: list[bytes] | None = None, read: list[int] | None = None) -> Request:
    """A POST whose body comes in `chunks` (counted in `read` as the service takes them)."""
    left = list(chunks or [])

    async def receive() -> dict:
        if read is not None:
            read.append(1)
        return {"type": "http.request", "body": left.pop(0) if left else b"", "more_body": len(left) > 0}

    return Request({"type": "http", "method": "POST", "path": "/v1/grade", "headers": headers}, receive)


def test_the_bearer_token_is_compared_in_constant_time_and_only_the_exact_header_passes(monkeypatch):
    compared: list[tuple[bytes, bytes]] = []
    real = hmac.compare_digest
    monkeypatch.setattr(app.hmac, "compare_digest", lambda given, expected: compared.append((given, expected)) or real(given, expected))
    checking = service()
    checking.check_token(request([(b"authorization", f"Bearer {TOKEN}".encode())]))
    for given in (f"Bearer {TOKEN[:-1]}", f"Bearer {TOKEN}x", f"bearer {TOKEN}", TOKEN, "Bearer \xe9", ""):
        with pytest.raises(Refused) as refused:
            checking.check_token(request([(b"authorization", given.encode("latin-1"))]))
        assert refused.value.status == 401 and refused.value.headers == {"WWW-Authenticate": "Bearer"}
        assert TOKEN not in refused.value.message
    with pytest.raises(Refused):
        checking.check_token(request([]))  # no header at all
    assert len(compared) == 8 and {expected for _, expected in compared} == {f"Bearer {TOKEN}".encode()}


@pytest.mark.parametrize(
    ("headers", "chunks_read"),
    [
        ([], 11),  # no Content-Length (a chunked body): 11 KiB read, past the 10 KiB limit, then no more
        ([(b"content-length", b"100")], 11),  # a Content-Length that lies small
        ([(b"content-length", str(64 << 10).encode())], 0),  # one over the limit: refused before a byte is read
    ],
)
def test_a_body_is_read_no_further_than_its_limit_whatever_its_content_length_says(headers, chunks_read):
    read: list[int] = []
    body = request(headers, [b"x" * 1024] * 64, read)
    with pytest.raises(Refused) as refused:
        asyncio.run(service().read_json(body, 10 * 1024))
    assert refused.value.status == 413 and "10240 bytes" in refused.value.message
    assert len(read) == chunks_read
