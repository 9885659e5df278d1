"""One question at a time per model (the in-process llama.cpp model is not re-entrant), in the order
asked, each waiting question told how many are ahead of it."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager


class Turns:
    """A ticket line: :meth:`turn` waits until every earlier ticket is done, calling ``on_wait`` with
    the number of questions ahead each time that number changes."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._issued = 0
        self._done = 0

    def waiting(self) -> int:
        """Questions asked and not finished (the one being answered included)."""
        with self._cond:
            return self._issued - self._done

    @contextmanager
    def turn(self, on_wait: Callable[[int], None] = lambda ahead: None) -> Iterator[None]:
        """Hold the model for the block; wait for the questions asked earlier first."""
        with self._cond:
            mine = self._issued
            self._issued += 1
            told = None
            while self._done != mine:
                ahead = mine - self._done
                if ahead != told:
                    on_wait(ahead)
                    told = ahead
                self._cond.wait()
        try:
            yield
        finally:
            with self._cond:
                self._done += 1
                self._cond.notify_all()
