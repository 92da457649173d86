#!/usr/bin/env python3
"""Stands in for `nvidia-cuda-mps-control` in the kubelet plugin's tests, on a machine without GPU.

It behaves as the real command does towards its caller, with a real background process as the
daemon: `-d` starts a daemon for the pipe folder in CUDA_MPS_PIPE_DIRECTORY (refused when one
runs there already) and returns once it is up; otherwise a command is read from stdin and sent
to that daemon, failing with "Cannot find MPS control daemon process" when none runs. Commands:
`get_server_list` (answers), `quit` (the daemon exits). Every call is recorded, with the GPUs it
was started for (CUDA_VISIBLE_DEVICES), as one JSON line in CUDA_MPS_LOG_DIRECTORY/calls.jsonl,
where the real daemon writes its control.log. The daemon writes a marker into the /dev/shm it
sees, so tests can tell which shared-memory folder it got. It ends itself after ten minutes at
the latest, so a failed test leaves nothing running.
"""

import json
import os
import signal
import sys
import time

PIPE = os.environ.get("CUDA_MPS_PIPE_DIRECTORY", "/tmp/nvidia-mps")
LOG = os.environ.get("CUDA_MPS_LOG_DIRECTORY", "/var/log/nvidia-mps")
PIDFILE = os.path.join(PIPE, "fake-daemon.pid")


def record(call):
    os.makedirs(LOG, exist_ok=True)
    entry = {"call": call, "visible": os.environ.get("CUDA_VISIBLE_DEVICES", ""), "pipe": PIPE}
    with open(os.path.join(LOG, "calls.jsonl"), "a") as file:
        file.write(json.dumps(entry) + "\n")


def alive(pid):
    """Whether `pid` runs (a killed daemon nobody reaped yet is a zombie: not running)."""
    try:
        with open(f"/proc/{pid}/stat") as file:
            return file.read().rpartition(")")[2].split()[0] != "Z"
    except OSError:
        return False


def daemon_pid():
    try:
        with open(PIDFILE) as file:
            pid = int(file.read())
    except (OSError, ValueError):
        return None
    return pid if alive(pid) else None


def serve():
    os.setsid()
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)
    visible = os.environ.get("CUDA_VISIBLE_DEVICES", "none")
    with open(f"/dev/shm/allot-fake-mps-{visible}", "w") as file:
        file.write(str(os.getpid()))
    with open(PIDFILE + ".tmp", "w") as file:
        file.write(str(os.getpid()))
    os.replace(PIDFILE + ".tmp", PIDFILE)
    signal.signal(signal.SIGTERM, lambda *_: os._exit(0))
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline:
        time.sleep(0.5)
    os._exit(0)


def main():
    if "-d" in sys.argv[1:]:
        if daemon_pid() is not None:
            print("An instance of this daemon is already running")
            return 1
        record("start")
        if os.fork() == 0:
            serve()
        deadline = time.monotonic() + 10
        while daemon_pid() is None and time.monotonic() < deadline:
            time.sleep(0.02)
        return 0 if daemon_pid() is not None else 1
    command = sys.stdin.read().strip()
    pid = daemon_pid()
    if pid is None:
        print("Cannot find MPS control daemon process")
        return 1
    record(command)
    if command == "quit":
        os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + 10
        while daemon_pid() is not None and time.monotonic() < deadline:
            time.sleep(0.02)
        os.unlink(PIDFILE)
    return 0


if __name__ == "__main__":
    sys.exit(main())
