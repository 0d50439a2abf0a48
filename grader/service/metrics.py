"""What /metrics tells Prometheus (prometheus-client), in a registry of the service's own:

mlm_grader_requests_total{endpoint, status}      HTTP requests answered, by endpoint and status code
mlm_grader_verdicts_total{problem, verdict}      submissions graded, by verdict (grader_error included)
mlm_grader_grading_seconds{problem}              histogram: from a grading's arrival (its wait for a job included) to its report
mlm_grader_queue_depth                           gradings waiting for a job
mlm_grader_running                               gradings holding a job
mlm_grader_places                                requests admitted and not yet answered (at most jobs + queue)
mlm_grader_ready                                 1 when /readyz says ready
mlm_grader_pool_restarts_total{problem}          warm pool servers started again (one ended, or could not start)
mlm_grader_pool_fallbacks_total{problem}         gradings the warm pool could not give a child (graded in a child of their own)
"""

from collections.abc import Callable, Iterator

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.core import CounterMetricFamily, Metric
from prometheus_client.registry import Collector

# A grading takes from a fraction of a second to the challenge's limits (minutes), plus its wait in the queue.
BUCKETS = (0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 15.0, 30.0, 60.0, 120.0, 240.0, 480.0)


class _PoolCounts(Collector):
    """The pools' counts, read from the graders when Prometheus asks."""

    def __init__(self, counts: Callable[[], dict[str, tuple[int, int]]]) -> None:
        self.counts = counts

    def collect(self) -> Iterator[Metric]:
        restarts = CounterMetricFamily("mlm_grader_pool_restarts", "Warm pool servers started again", labels=["problem"])
        fallbacks = CounterMetricFamily("mlm_grader_pool_fallbacks", "Gradings the warm pool could not give a child", labels=["problem"])
        for problem, (restarted, fell_back) in sorted(self.counts().items()):
            restarts.add_metric([problem], restarted)
            fallbacks.add_metric([problem], fell_back)
        yield restarts
        yield fallbacks


class Metrics:
    def __init__(self, pool_counts: Callable[[], dict[str, tuple[int, int]]]) -> None:
        self.registry = CollectorRegistry()
        self.requests = Counter("mlm_grader_requests", "HTTP requests answered", ["endpoint", "status"], registry=self.registry)
        self.verdicts = Counter("mlm_grader_verdicts", "Submissions graded, by verdict", ["problem", "verdict"], registry=self.registry)
        self.seconds = Histogram("mlm_grader_grading_seconds", "From a grading's arrival to its report", ["problem"], buckets=BUCKETS, registry=self.registry)
        self.queue_depth = Gauge("mlm_grader_queue_depth", "Gradings waiting for a job", registry=self.registry)
        self.running = Gauge("mlm_grader_running", "Gradings holding a job", registry=self.registry)
        self.places = Gauge("mlm_grader_places", "Requests admitted and not yet answered", registry=self.registry)
        self.ready = Gauge("mlm_grader_ready", "1 when the service is ready", registry=self.registry)
        self.registry.register(_PoolCounts(pool_counts))
