"""`kill -USR1 <pid>` of cdc-replicate prints every Python thread's stack to stderr: where a stuck
micro-batch waits (foreachBatch runs in the driver process), without stopping the job.

A Python-level handler, not faulthandler.register: faulthandler walks the other threads' frames
from inside the C signal handler while those threads go on running, and a driver polled that way
(tests/integration/replicate/test_stopping.py, every 0.2 s) died of SIGSEGV in CI. This handler runs
in the main thread between bytecodes with the GIL held, so no thread changes its frames while they
are read (sys._current_frames). The job's main thread waits in a 0.2 s poll of the query
(pipelines/job/stopping.await_query), so the dump comes within that. Lines as faulthandler writes
them: `Thread 0x... (most recent call first):` (`Current thread` for the main thread's),
then `  File "<path>", line <n> in <function>`, innermost first.
"""
from __future__ import annotations

import os
import signal
import sys
import threading
from types import FrameType
MAX_FRAMES = 100  # per thread, as faulthandler
STDERR_FD = 2


def thread_stacks(current: int | None = None) -> str:
    """Every thread's stack, innermost frame first; `current`: the thread id marked as current."""
    # threading._active read as it is, not threading.enumerate(): that takes a lock the main thread
    # may hold where the signal interrupted it (Thread.start), and would wait for itself
    names = {ident: t.name for ident, t in dict(threading._active).items()}  # noqa: SLF001
    out = []
    for ident, frame in sys._current_frames().items():  # noqa: SLF001 - the documented way to read them
        head = "Current thread" if ident == current else "Thread"
        out.append(f"{head} 0x{ident:016x} [{names.get(ident, '?')}] (most recent call first):")
        out.extend(_frames(frame))
        out.append("")
    return "\n".join(out)


def _frames(frame: FrameType | None) -> list[str]:
    lines = []
    while frame is not None and len(lines) < MAX_FRAMES:
        code = frame.f_code
        lines.append(f'  File "{code.co_filename}", line {frame.f_lineno} in {code.co_name}')
        frame = frame.f_back
    return lines


def dump_on_signal(signum: int = signal.SIGUSR1, fd: int = STDERR_FD) -> None:
    """Install the handler (main thread only, as any Python signal handler). It writes to the file
    descriptor itself: the main thread may be inside a write to sys.stderr when the signal comes,
    and writing to that stream again from the handler is a reentrant call it refuses."""
    if threading.current_thread() is not threading.main_thread():  # cdc-replicate's main() called in a thread
        return

    dumping = [False]  # a plain flag: the handler takes no lock the code it interrupted may hold

    def dump(_signum, _frame) -> None:
        # a signal during a dump (Python runs its handler again inside this one): that dump serves
        if dumping[0]:
            return
        dumping[0] = True
        try:
            data = (thread_stacks(threading.get_ident()) + "\n").encode(errors="replace")
            while data:
                data = data[os.write(fd, data):]
        finally:
            dumping[0] = False
    signal.signal(signum, dump)
