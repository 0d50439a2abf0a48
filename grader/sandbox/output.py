"""The child's stdout and stderr: drained as they come, capped, and labelled by the case that
printed them; what was printed once the hidden cases began is held back from the candidate."""

import array
import fcntl
import os
import re
import select
import termios
import threading
from typing import BinaryIO

from grader.child import wire

WITHHELD_OUTPUT = "[... what the submission printed once the hidden cases began is not shown]"
# A label line the runner writes (wire.OUTPUT_LABEL, then what it labels): a case's name, then the call.
_LABEL = re.compile(rb"(import)|([A-Za-z0-9_.-]{1,100}) (forward|gradient)")  # a case's name: grader/spec.py CASE_NAME
MAX_LABEL_BYTES = 128  # a label line longer than this is not a label: it is output
MAX_LABELS = 4096  # labels kept per stream (two per case); later ones are dropped, their output kept


def label_text(payload: bytes) -> str | None:
    """How a label line reads in the report, or None when the payload is not a label."""
    found = _LABEL.fullmatch(payload)
    if found is None:
        return None
    if found.group(1):
        return "[while importing the file]"
    return f"[case {found.group(2).decode()}, {found.group(3).decode()} call]"


class CappedBuffer:
    """Keeps the first `cap` bytes of what a stream's writer printed and counts the rest, with the
    runner's label lines (wire.OUTPUT_LABEL) taken out and kept as labels at the place they came.
    After hold_back(), what arrives is kept for staff (text()) and left out of what the candidate is
    shown (shown()); labels arriving after it too. Which bytes are held back is decided by offsets
    in the stream alone, never by the labels."""

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.kept = bytearray()  # what was printed, labels taken out, up to cap bytes
        self.total = 0  # bytes printed, labels taken out
        self.labels: list[tuple[int, str]] = []  # (offset in what was printed, label text), in order
        self.received = 0  # bytes read from the stream, labels included
        self.held_from: int | None = None  # offset in the stream where hold_back() was called
        self.shown_bytes: int | None = None  # bytes printed before that offset (once the reading passed it)
        self.shown_labels: int | None = None  # labels before that offset
        self._pending = b""  # the end of the stream read so far, when it may be the start of a label line
        self._lock = threading.Lock()
        self._fd: int | None = None

    def feed(self, chunk: bytes) -> None:
        """Take in the next bytes of the stream."""
        data = self._pending + chunk
        at = self.received - len(self._pending)  # offset in the stream of data[0]
        self.received += len(chunk)
        self._pending = b""
        i = 0
        while i < len(data):
            j = data.find(wire.OUTPUT_LABEL, i)
            if j < 0:
                keep = _label_start_at_end(data, i)
                self._printed(data[i : len(data) - keep], at + i)
                self._pending = data[len(data) - keep :]
                return
            self._printed(data[i:j], at + i)
            start = j + len(wire.OUTPUT_LABEL)
            end = data.find(b"\n", start, start + MAX_LABEL_BYTES + 1)
            if end < 0 and len(data) - start <= MAX_LABEL_BYTES:  # the rest of the line is still to come
                self._pending = data[j:]
                return
            text = None if end < 0 else label_text(data[start:end])
            if text is None:  # not a label: output like any other
                self._printed(data[j:start], at + j)
                i = start
                continue
            self._label(text, at + j, at + end + 1)
            i = end + 1

    def end(self) -> None:
        """The stream ended: what was waiting to be told apart from a label line is output."""
        pending, self._pending = self._pending, b""
        self._printed(pending, self.received - len(pending))

    def _passed_hold_back(self) -> None:
        if self.shown_bytes is None:
            self.shown_bytes, self.shown_labels = self.total, len(self.labels)

    def _printed(self, data: bytes, offset: int) -> None:
        """Output that began at `offset` in the stream; the part from hold_back() on is held back."""
        if self.held_from is not None and offset + len(data) > self.held_from:
            before = max(0, self.held_from - offset)
            self._keep(data[:before])
            self._passed_hold_back()
            data = data[before:]
        self._keep(data)

    def _keep(self, data: bytes) -> None:
        self.total += len(data)
        room = self.cap - len(self.kept)
        if room > 0:
            self.kept += data[:room]

    def _label(self, text: str, start: int, end: int) -> None:
        """A label line from `start` to `end` in the stream: shown only when all of it came before hold_back()."""
        if self.held_from is not None and end > self.held_from:
            self._passed_hold_back()
        if len(self.labels) < MAX_LABELS and self.total <= self.cap:
            self.labels.append((self.total, text))

    def drain(self, stream: BinaryIO) -> None:
        """Read the stream to its end. Each read happens under the lock, once the pipe is readable,
        so that hold_back() sees every byte either counted or still in the pipe."""
        try:
            fd = stream.fileno()
            self._fd = fd
            while True:
                select.select([fd], [], [])
                with self._lock:
                    chunk = os.read(fd, 65536)
                    if not chunk:
                        self.end()
                        return
                    self.feed(chunk)
        except (OSError, ValueError):  # closed under us at the end of the run: what was read is kept
            pass

    def text(self) -> str:
        """Everything kept, labelled, and how much more there was."""
        return self._text(self.total, len(self.labels))

    def _text(self, upto: int, labels: int) -> str:
        """What was printed up to `upto`, each part under its label (a label with nothing printed
        after it is left out), and how much more there was."""
        kept = bytes(self.kept[:upto])
        marks = [(min(offset, len(kept)), text) for offset, text in self.labels[:labels]]
        parts: list[str] = []
        for k, (start, text) in enumerate([(0, ""), *marks]):
            stop = marks[k][0] if k < len(marks) else len(kept)
            if start >= stop:
                continue
            if text:
                if parts and not parts[-1].endswith("\n"):
                    parts.append("\n")
                parts.append(text + "\n")
            parts.append(kept[start:stop].decode("utf-8", errors="replace"))
        body = "".join(parts)
        if upto > len(kept):
            body += f"\n[... {upto - len(kept)} more bytes not kept]"
        return body

    def hold_back(self) -> None:
        """From now on, what arrives is for staff only (called just before the first hidden case is
        sent: what the child writes after it may spell out hidden data). What the child wrote
        before, and the pipe still holds, is shown: it is counted in."""
        with self._lock:
            if self.held_from is None:
                try:
                    pending = 0 if self._fd is None else unread_bytes(self._fd)
                except OSError:  # closed: nothing is pending
                    pending = 0
                self.held_from = self.received + pending

    @property
    def held_back(self) -> bool:
        """Whether the submission printed anything after hold_back() (labels are not printing)."""
        return self.shown_bytes is not None and self.total > self.shown_bytes

    def shown(self) -> str:
        """What the candidate may read: text() up to hold_back(), then one line saying the rest is not shown."""
        if not self.held_back:
            return self._text(self.total, len(self.labels) if self.shown_labels is None else self.shown_labels)
        before = self._text(self.shown_bytes or 0, self.shown_labels or 0).rstrip("\n")
        return f"{before}\n{WITHHELD_OUTPUT}" if before else WITHHELD_OUTPUT


def unread_bytes(fd: int) -> int:
    """How many bytes the pipe `fd` is an end of holds that its reader has not read."""
    pending = array.array("i", [0])
    fcntl.ioctl(fd, termios.FIONREAD, pending)
    return pending[0]


def _label_start_at_end(data: bytes, start: int) -> int:
    """How many bytes at the end of data[start:] may be the beginning of a label line."""
    for size in range(min(len(wire.OUTPUT_LABEL) - 1, len(data) - start), 0, -1):
        if wire.OUTPUT_LABEL.startswith(data[len(data) - size :]):
            return size
    return 0
