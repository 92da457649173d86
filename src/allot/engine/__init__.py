"""One engine cycle: admission order, quota fit, placement and preemption, as decisions.

`engine.Engine.cycle(now)` returns `decisions` (Bound, Evicted, Admitted,
Waiting) already applied to the state; drivers (simulator, planner, live
scheduler) make them real. No I/O, no clock.
"""
