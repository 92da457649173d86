"""The fuzz harness's worker: imports allot once, then runs each case in a forked child.

Started by `runner.Worker` as `python worker.py`. Reads one JSON request per
line on stdin: {"argv": [...], "cwd": DIR, "stdin": FILE, "stdout": FILE,
"stderr": FILE, "ceiling": BYTES, "timeout": SECONDS}. For each it forks;
the child changes into `cwd`, caps its address space at `ceiling` bytes
(RLIMIT_AS: a runaway allocation fails there instead of taking the machine
down), points file descriptors 0-2 at the given files and calls the real
`allot` entry point with `argv`, exactly as the installed `allot` script
does, then exits with its status. An exception that escapes `main` is
printed as Python prints it (so the harness sees the traceback) and exits
1, as the interpreter would. The worker answers with one JSON line:
{"code": int | null, "signal": int | null, "timed_out": bool,
"max_rss_kib": int}.

Forking from a process that has imported allot costs milliseconds where
starting `allot` anew costs a second, which is what lets CI run dozens of
cases through the real entry point in seconds.
"""

from __future__ import annotations

import json
import os
import resource
import signal
import sys
import time
import traceback
import warnings

# One thread only: forking a multi-threaded process is unsafe (and warned about from Python 3.12).
for _variable in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_variable] = "1"
os.environ["MPLBACKEND"] = "Agg"
warnings.simplefilter("ignore", DeprecationWarning)

from allot.cli.main import main  # noqa: E402  (after the environment above)

POLL_SECONDS = 0.005


def _child(request: dict[str, object]) -> None:
    code = 1
    try:
        os.chdir(str(request["cwd"]))
        ceiling = int(str(request["ceiling"]))
        resource.setrlimit(resource.RLIMIT_AS, (ceiling, ceiling))
        for fd, key, mode in (
            (0, "stdin", os.O_RDONLY),
            (1, "stdout", os.O_WRONLY),
            (2, "stderr", os.O_WRONLY),
        ):
            opened = os.open(str(request[key]), mode)
            os.dup2(opened, fd)
            os.close(opened)
        sys.argv = ["allot", *[str(a) for a in request["argv"]]]  # type: ignore[attr-defined]
        try:
            main()
            code = 0
        except SystemExit as done:
            code = done.code if isinstance(done.code, int) else (0 if done.code is None else 1)
        except BaseException:
            traceback.print_exc()
            code = 1
        sys.stdout.flush()
        sys.stderr.flush()
    finally:
        os._exit(code)


def _run(request: dict[str, object]) -> dict[str, object]:
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        _child(request)
    deadline = time.monotonic() + float(str(request["timeout"]))
    timed_out = False
    while True:
        waited, status, usage = os.wait4(pid, os.WNOHANG)
        if waited:
            break
        if time.monotonic() > deadline:
            timed_out = True
            os.kill(pid, signal.SIGKILL)
            waited, status, usage = os.wait4(pid, 0)
            break
        time.sleep(POLL_SECONDS)
    return {
        "code": os.WEXITSTATUS(status) if os.WIFEXITED(status) else None,
        "signal": os.WTERMSIG(status) if os.WIFSIGNALED(status) else None,
        "timed_out": timed_out,
        "max_rss_kib": usage.ru_maxrss,
    }


def serve() -> None:
    for line in sys.stdin:
        if line.strip():
            sys.stdout.write(json.dumps(_run(json.loads(line))) + "\n")
            sys.stdout.flush()


if __name__ == "__main__":
    serve()
