"""How a batch is stopped: by a signal, which only asks; running children are then killed and their
gradings dropped (a rerun grades them), and every finished line stays."""

import signal
import threading


class Stop:
    """SIGINT, SIGTERM and SIGHUP only ask the batch to stop; it then stops cleanly."""

    SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)

    def __init__(self) -> None:
        self.event = threading.Event()
        self.signum: int | None = None

    def __enter__(self) -> "Stop":
        self.previous = {s: signal.signal(s, self._handle) for s in self.SIGNALS}
        return self

    def _handle(self, signum: int, frame: object) -> None:
        self.signum = self.signum or signum
        self.event.set()

    def __exit__(self, *exc: object) -> None:
        for s, handler in self.previous.items():
            signal.signal(s, handler)
