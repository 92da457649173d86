"""Scenario files: reading them with located errors, and turning them into what the simulator runs.

`parse` reads a scenario YAML into a `Scenario` (`schema`), with `reader`
locating every problem; `build` draws the jobs and generates the objects a
run needs; the other modules each parse one section (arrivals,
distributions, devices, nodes, Kueue objects, jobs).
"""
