"""The fuzz harness: every input kind through the real `allot` entry point, under a memory ceiling.

`inputs` draws cases (manifests, scenario files, traces, scheduler
configurations, command-line options); `runner` runs each in a forked
child of `worker` with RLIMIT_AS set and checks the invariant (exit 0-3
with a message, no traceback, no runaway memory or time, no partial file).
`test_fuzz_cli` is the bounded, derandomised run CI does; `python -m
tests.fuzz` is the long randomised one for developers.
"""
