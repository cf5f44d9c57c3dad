"""Checks of the `strata` tool run as a whole (infer_outputs.py,
infer_input.py): one line per check, runs under a timeout (a hang is a
failure, not a wait), and the verdict line CTest matches."""
import subprocess
import sys

failures = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what, flush=True)
    if not ok:
        failures.append(what)


def run(cmd, cwd, timeout, preexec=None):
    """The finished process, or None (and a failed check) past the timeout."""
    try:
        return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout,
                              preexec_fn=preexec)
    except subprocess.TimeoutExpired:
        check(False, f"finished within {timeout} s: {' '.join(cmd[3:])}")
        return None


def finish(success):
    print(f"{len(failures)} failed" if failures else success)
    sys.exit(1 if failures else 0)
