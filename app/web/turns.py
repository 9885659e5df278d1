"""The line of questions waiting for the model: at most ``capacity`` answered at once (one for the
in-process llama.cpp model, which is not re-entrant; LLM_CONCURRENCY for a server that batches), in the
order asked, each waiting question told how many are ahead of it whenever that changes.

Waiting holds no thread: the line lives on the event loop (every method is called from it), so the
server's worker threads stay free for the other routes however many questions wait; a question whose
asker goes away leaves the line at once and everyone behind it moves up.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field


@dataclass(eq=False)
class Ticket:
    """One question's place: ``started`` once it holds the model; ``on_wait`` hears how many are ahead."""

    on_wait: Callable[[int], None]
    ready: asyncio.Event = field(default_factory=asyncio.Event)
    started: bool = False
    told: int | None = None

    def tell(self, ahead: int) -> None:
        """Say how many are ahead, when that changed."""
        if ahead != self.told:
            self.told = ahead
            self.on_wait(ahead)


class Turns:
    """A ticket line for ``capacity`` models: :meth:`join`, ``await`` :meth:`wait`, then :meth:`leave`
    when the answer's work has ended (or :meth:`drop` a ticket whose asker went away)."""

    def __init__(self, capacity: int = 1) -> None:
        self.capacity = max(1, capacity)
        self._line: deque[Ticket] = deque()
        self._running = 0

    def waiting(self) -> int:
        """Questions asked and not finished (those being answered included)."""
        return self._running + len(self._line)

    def join(self, on_wait: Callable[[int], None] = lambda ahead: None) -> Ticket:
        """A place at the end of the line (started at once when a model is free)."""
        ticket = Ticket(on_wait)
        self._line.append(ticket)
        self._advance()
        return ticket

    async def wait(self, ticket: Ticket) -> None:
        """Until ``ticket`` holds a model; cancelled (the asker went away), it leaves the line."""
        try:
            await ticket.ready.wait()
        except BaseException:
            self.drop(ticket)
            raise

    def drop(self, ticket: Ticket) -> None:
        """Take ``ticket`` out: from the line, or, when it had started, give its model back."""
        if ticket.started:
            self.leave()
        elif ticket in self._line:
            self._line.remove(ticket)
            self._advance()

    def leave(self) -> None:
        """An answer's work ended: the next in line starts."""
        self._running -= 1
        self._advance()

    def _advance(self) -> None:
        """Start the first in line while a model is free; tell the others their place."""
        while self._line and self._running < self.capacity:
            ticket = self._line.popleft()
            ticket.started = True
            self._running += 1
            ticket.ready.set()
        for place, ticket in enumerate(self._line):
            ticket.tell(self._running - self.capacity + 1 + place)
