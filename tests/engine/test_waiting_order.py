"""Waiting work listed class by class gives what a walk of the whole line gives, while the caller
drops classes and changes which it skips between items."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from allot.engine.waiting import QueuedClass, _in_admission_order


def _naive(classes, dropped, skip):
    line = sorted(((c.score, sort_key), sort_key[2], c.klass) for c in classes for sort_key in c.members)
    for _, key, klass in line:
        if klass in dropped or skip(klass):
            continue
        yield key, klass


line_of_classes = st.lists(
    st.tuples(
        st.sampled_from([0.0, 1.0, 2.0]),
        st.lists(st.tuples(st.integers(0, 2), st.integers(0, 9)), min_size=1, max_size=6),
    ),
    min_size=1,
    max_size=5,
)


def _classes(drawn) -> list[QueuedClass]:
    classes = []
    for number, (score, members) in enumerate(drawn):
        keys = sorted(
            {(-priority, float(time), f"c{number}-{i}") for i, (priority, time) in enumerate(members)}
        )
        classes.append(QueuedClass(number, score, keys))
    return classes


@settings(max_examples=300, deadline=None, derandomize=True)
@given(line_of_classes, st.lists(st.tuples(st.integers(0, 4), st.booleans(), st.booleans()), max_size=40))
def test_class_by_class_matches_a_walk_of_the_whole_line(drawn, reactions) -> None:
    classes = _classes(drawn)

    def run(walk):
        dropped: set[int] = set()
        skipped: set[int] = set()
        seen = []
        steps = iter(reactions)
        for key, klass in walk(classes, dropped, skipped.__contains__):
            seen.append(key)
            # What the caller does between items: drop the class, start or stop skipping another.
            step = next(steps, None)
            if step is None:
                continue
            other, drop, skip = step
            if drop:
                dropped.add(klass)
            if skip:
                skipped.add(other)
            else:
                skipped.discard(other)
        return seen

    assert run(_in_admission_order) == run(_naive)


def test_a_class_skipped_for_a_while_comes_back_after_the_items_it_missed() -> None:
    first = QueuedClass(0, 0.0, [(0, 1.0, "a1"), (0, 4.0, "a4")])
    second = QueuedClass(1, 0.0, [(0, 2.0, "b2"), (0, 3.0, "b3"), (0, 5.0, "b5")])
    skipped = {1}
    seen = []
    for key, _ in _in_admission_order([first, second], set(), skipped.__contains__):
        seen.append(key)
        if key == "a4":
            skipped.clear()
    # b2 and b3 came up while class 1 was skipped; b5 comes after a4, when it no longer is.
    assert seen == ["a1", "a4", "b5"]
