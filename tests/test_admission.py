"""Backpressure (grader/service/admission.py): `jobs` at a time, first come first served, a bounded
number of places beyond which a request is refused at once with a Retry-After; a grading that waits
past its deadline, or whose caller goes away, leaves the queue and holds nothing."""

import asyncio

import pytest

from grader.batch.schedule import Deadline
from grader.service.admission import Admission, Expired, Full


def test_places_are_jobs_plus_queue_and_the_next_is_refused_with_a_retry_after():
    admission = Admission(jobs=2, queue=1)
    places = [admission.admit() for _ in range(3)]
    with pytest.raises(Full) as refused:
        admission.admit()
    assert refused.value.retry_after >= 1
    with places[0]:
        pass
    assert admission.places == 2
    with admission.admit():  # the place given back is taken again
        assert admission.places == 3


def test_retry_after_grows_with_the_queue_at_the_recent_pace():
    async def scenario() -> None:
        admission = Admission(jobs=2, queue=10)
        for _ in range(5):
            admission.record(4.0)
        assert admission.retry_after() == 2  # nobody waiting: about one grading's time over two jobs
        hold = asyncio.Event()

        async def grading() -> None:
            async with admission.job(Deadline.after(30)):
                await hold.wait()

        tasks = [asyncio.create_task(grading()) for _ in range(7)]
        await asyncio.sleep(0.01)
        assert (admission.running, admission.waiting) == (2, 5)
        assert admission.retry_after() == 12  # six gradings of 4 s ahead of a newcomer, over two jobs
        hold.set()
        await asyncio.gather(*tasks)

    asyncio.run(scenario())


def test_jobs_are_given_in_order_and_a_cancelled_or_expired_waiter_leaves_the_queue():
    async def scenario() -> list[str]:
        admission = Admission(jobs=1, queue=10)
        order: list[str] = []
        release = asyncio.Event()

        async def grading(name: str, seconds: float = 30) -> None:
            async with admission.job(Deadline.after(seconds)):
                order.append(name)
                await release.wait()

        first = asyncio.create_task(grading("first"))
        await asyncio.sleep(0.01)
        gone = asyncio.create_task(grading("gone"))
        late = asyncio.create_task(grading("late", seconds=0.05))
        second = asyncio.create_task(grading("second"))
        await asyncio.sleep(0.01)
        assert admission.waiting == 3 and admission.running == 1
        gone.cancel()
        with pytest.raises(Expired):
            await late
        await asyncio.gather(gone, return_exceptions=True)
        assert admission.waiting == 1
        release.set()
        await asyncio.gather(first, second)
        assert (admission.running, admission.waiting) == (0, 0)
        return order

    assert asyncio.run(scenario()) == ["first", "second"]
