"""allot.sim: the discrete-event simulator behind `allot simulate`, and its inputs and numbers.

Layering: a driver over `allot.engine`; it never imports `allot.report`
(the CLI composes the two). Modules, roughly in the order data flows:

* `scenario` (package): scenario files parsed with located errors
  (`parse`), distributions and arrival processes, the device shorthand,
  the Kueue objects tenants imply, and `build.prepare`, which turns a
  scenario and a seed into manifests, a `workload.Workload` and policies;
* `traces` (package): synthetic Philly-like jobs, Philly/Helios CSVs, the
  openb trace (read by `openb`);
* `policies`: the named policy bundles `--compare` runs;
* `events`, `clock`: the event kinds, their order at one instant, the heap;
* `simulator`: the loop that drives the engine; `topology`: slowdown from
  alignment; `inventory`: physical GPUs and what allocations take of them;
  `recorder`, `records`: what a run produces (`SimResult`);
* `metrics`, `fairshare`, `stats`, `series`: pure functions over results;
* `parallel`: several policies at once, one process each.

`openb` and `experiments` hold the FGD fragmentation experiment
(`allot experiment fragmentation`).
"""
