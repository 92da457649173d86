"""Transactions over the cluster state: an undo journal with nested checkpoints.

Every mutation of `ClusterState` records how to undo itself while a
transaction is open. A transaction that is not committed is rolled back by
replaying its undo steps in reverse, which restores the state exactly; this
is what makes gangs all-or-nothing and lets preemption and candidate
placements be tried and forgotten. Nested transactions commit into their
parent, so only the outermost commit makes changes permanent.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, MutableMapping
from contextlib import contextmanager
from typing import TypeVar

# An undo step; its return value, if any, is ignored.
Undo = Callable[[], object]
K = TypeVar("K")
V = TypeVar("V")


class Transaction:
    """An open what-if. Use through `Journal.transaction()`."""

    __slots__ = ("_done", "_journal", "_start")

    def __init__(self, journal: Journal, start: int) -> None:
        self._journal = journal
        self._start = start
        self._done = False

    def commit(self) -> None:
        """Keep the changes (they become part of the enclosing transaction, if any)."""
        self._check_open()
        self._done = True
        self._journal._close(self, keep=True)

    def rollback(self) -> None:
        """Undo every change made since the transaction began."""
        self._check_open()
        self._done = True
        self._journal._close(self, keep=False)

    @property
    def open(self) -> bool:
        return not self._done

    def _check_open(self) -> None:
        if self._done:
            raise RuntimeError("transaction already finished")


class Journal:
    """Records undo steps while at least one transaction is open."""

    __slots__ = ("_open", "_replaying", "_steps")

    def __init__(self) -> None:
        self._steps: list[Undo] = []
        self._open: list[Transaction] = []
        # Undo steps may call the same mutators that record; nothing is recorded while replaying.
        self._replaying = False

    @property
    def recording(self) -> bool:
        return bool(self._open)

    def record(self, undo: Undo) -> None:
        if self._open and not self._replaying:
            self._steps.append(undo)

    def put(self, mapping: MutableMapping[K, V], key: K, value: V) -> None:
        """`mapping[key] = value`, undone by restoring what was there (or removing the key)."""
        if key in mapping:
            previous = mapping[key]
            mapping[key] = value
            self.record(lambda: mapping.__setitem__(key, previous))
        else:
            mapping[key] = value
            self.record(lambda: mapping.pop(key, None))

    def pop(self, mapping: MutableMapping[K, V], key: K) -> None:
        """`del mapping[key]` if present, undone by putting it back."""
        if key in mapping:
            previous = mapping.pop(key)
            self.record(lambda: mapping.__setitem__(key, previous))

    def begin(self) -> Transaction:
        transaction = Transaction(self, len(self._steps))
        self._open.append(transaction)
        return transaction

    @contextmanager
    def transaction(self) -> Iterator[Transaction]:
        """A transaction rolled back on exit unless committed (also on exceptions)."""
        transaction = self.begin()
        try:
            yield transaction
        finally:
            if transaction.open:
                transaction.rollback()

    def _close(self, transaction: Transaction, *, keep: bool) -> None:
        if not self._open or self._open[-1] is not transaction:
            raise RuntimeError("transactions must finish innermost first")
        self._open.pop()
        if not keep:
            self._replaying = True
            try:
                while len(self._steps) > transaction._start:
                    self._steps.pop()()
            finally:
                self._replaying = False
        elif not self._open:
            self._steps.clear()
