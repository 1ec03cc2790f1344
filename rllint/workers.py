"""Worker processes that lint one file at a time, each file under a time bound.

Why not `concurrent.futures.ProcessPoolExecutor`: it cannot stop one task (a file that takes
too long), a crashed worker breaks the whole pool and every queued task with it, and on
Ctrl-C it waits for the queued work. Here the parent owns each worker and the one file it
is linting, so:
- a worker that dies (libcst's native parser can crash the process) costs that file only, and
  a fresh worker takes its place;
- a file that runs past the time limit has its worker killed and replaced;
- Ctrl-C (KeyboardInterrupt in the parent) kills every worker at once and leaves the queue;
- workers ignore SIGINT (the parent decides) and exit when the parent dies, however it dies;
- a worker's memory is that of a fresh one plus the file it lints: one that holds `RECYCLE_BYTES`
  more than when it started (memory Python freed but keeps, caches) is replaced before its next
  file, and a task the caller marks heavy (a large file) goes to a worker that has linted nothing.

Workers are forked where the platform can (they start warm, with rllint already imported) and
always from the parent's main thread; elsewhere they are spawned.
"""
from __future__ import annotations

import multiprocessing
import os
import signal
import sys
import threading
import time
from collections import deque
from multiprocessing.connection import Connection, wait
from typing import Any, Callable, Dict, Iterable, List, Optional, Tuple

CRASHED = "the parser crashed on this file (too deeply nested?); not linted"
# Memory a worker may hold beyond what it held when it started before it is replaced: the modules and
# caches of a warm worker take about 75 MiB; what a large file leaves behind (freed, but kept by the
# allocator) would add to the peak of every later file (a worker that had linted CPython's standard
# library held 240 MiB between files, 313 MiB at its peak).
RECYCLE_BYTES = 96 * 2 ** 20


class Failure:
    """What the pool reports for a task whose worker died or ran out of time."""

    def __init__(self, message: str) -> None:
        self.message = message


def _context():
    methods = multiprocessing.get_all_start_methods()
    return multiprocessing.get_context("fork" if "fork" in methods and sys.platform != "darwin" else "spawn")


class _Worker:
    def __init__(self, context, function: Callable, inherited: List[Connection]) -> None:
        parent_end, child_end = context.Pipe()
        self.process = context.Process(target=_serve, args=(child_end, parent_end, function, os.getpid(),
                                                            inherited if context.get_start_method() == "fork" else []),
                                       daemon=True, name="rllint-worker")
        self.process.start()
        child_end.close()  # the child holds it now: its death shows here as end of file
        self.connection = parent_end
        self.task: Optional[Tuple[Any, ...]] = None
        self.deadline = 0.0
        self.served = 0  # tasks done
        self.grown = 0  # bytes it holds beyond what it held at its start, after its last task

    def give(self, task: Tuple[Any, ...], time_limit: float) -> None:
        self.task = task
        self.deadline = time.monotonic() + time_limit
        self.connection.send(task)

    def stop(self, kill: bool) -> None:
        try:
            if kill:
                self.process.kill()
            else:
                self.connection.send(None)
        except (OSError, ValueError):
            pass
        self.process.join(timeout=None if kill else 5)
        if self.process.is_alive():
            self.process.kill()
            self.process.join()
        self.connection.close()


def run(tasks: Iterable[Tuple[Any, ...]], function: Callable, jobs: int, time_limit: float,
        heavy: Callable[[Tuple[Any, ...]], bool] = lambda task: False) -> Dict[Any, Any]:
    """`function(*task)` for each task in up to `jobs` worker processes: {task[1]: result, or a Failure}.

    The second item of a task is its key (a path); a task `heavy` accepts is given to a worker that has
    done no task yet. Raises KeyboardInterrupt after killing the workers.
    """
    queue = deque(tasks)
    results: Dict[Any, Any] = {}
    context = _context()
    workers: List[_Worker] = []
    killed = False
    try:
        for _ in range(min(jobs, len(queue))):
            workers.append(_Worker(context, function, [w.connection for w in workers]))
        for worker in workers:
            worker.give(queue.popleft(), time_limit)
        while any(w.task is not None for w in workers):
            busy = [w for w in workers if w.task is not None]
            timeout = max(0.0, min(w.deadline for w in busy) - time.monotonic())
            wait([w.connection for w in busy] + [w.process.sentinel for w in busy], timeout)
            for worker in busy:
                failure = _collect(worker, results, time_limit)
                if failure is None:
                    continue
                results[worker.task[1]] = Failure(failure)
                worker.stop(kill=True)
                _replace(workers, workers.index(worker), context, function)
            for index, worker in enumerate(workers):
                if worker.task is None and queue:
                    task = queue.popleft()
                    if worker.grown > RECYCLE_BYTES or (worker.served and heavy(task)):
                        worker.stop(kill=False)
                        worker = _replace(workers, index, context, function)
                    worker.give(task, time_limit)
    except BaseException:
        killed = True
        # A second Ctrl-C must not interrupt the clean-up and leave workers behind.
        previous = signal.signal(signal.SIGINT, signal.SIG_IGN) if _main_thread() else None
        try:
            for worker in workers:
                worker.stop(kill=True)
        finally:
            if previous is not None:
                signal.signal(signal.SIGINT, previous)
        raise
    finally:
        if not killed:
            for worker in workers:
                worker.stop(kill=False)
    return results


def _replace(workers: List[_Worker], index: int, context, function: Callable) -> _Worker:
    """A fresh worker in the place of `workers[index]`, which is stopped already."""
    others = [w.connection for i, w in enumerate(workers) if i != index]
    workers[index] = _Worker(context, function, others)
    return workers[index]


def _collect(worker: _Worker, results: Dict[Any, Any], time_limit: float) -> Optional[str]:
    """Take the worker's result if it is there; the reason it failed, if it did."""
    if worker.connection.poll():
        try:
            key, result, worker.grown = worker.connection.recv()
        except (EOFError, OSError):
            return CRASHED
        results[key] = result
        worker.task = None
        worker.served += 1
        return None
    if not worker.process.is_alive():
        return CRASHED
    if time.monotonic() >= worker.deadline:
        return f"took longer than {time_limit:g} s to lint; stopped, not linted"
    return None


def _main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


def _serve(connection: Connection, parent_end: Connection, function: Callable, parent: int,
           inherited: List[Connection]) -> None:
    """A worker's life: tasks in, results out, until the parent says stop, closes the pipe or dies."""
    for other in [parent_end, *inherited]:  # forked copies of the parent's pipe ends keep pipes open
        other.close()
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _die_with(parent)
    start = _resident_bytes()
    while True:
        try:
            task = connection.recv()
        except (EOFError, OSError):
            return
        if task is None:
            return
        try:
            result = function(*task)
        except Exception as error:  # a bug in rllint: one file's error, not the run's
            if os.environ.get("RLLINT_DEBUG"):
                raise
            result = Failure(f"internal error: {type(error).__name__}: {error} (a bug in rllint: please report it "
                             "with the file that caused it; RLLINT_DEBUG=1 shows the traceback)")
        connection.send((task[1], result, _resident_bytes() - start))


def _resident_bytes() -> int:
    """This process's resident memory: now where the system says (Linux), else its peak so far (which
    only makes a worker replaced sooner); 0 where neither is known."""
    try:
        with open("/proc/self/statm") as statm:
            return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        pass
    try:
        import resource
    except ImportError:  # Windows
        return 0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak if sys.platform == "darwin" else peak * 1024  # bytes on macOS, KiB elsewhere


def _die_with(parent: int) -> None:
    """Exit when the parent process dies: the kernel's parent-death signal on Linux, a watcher elsewhere."""
    if sys.platform.startswith("linux"):
        try:
            import ctypes

            pr_set_pdeathsig = 1
            ctypes.CDLL(None, use_errno=True).prctl(pr_set_pdeathsig, signal.SIGKILL)
        except (OSError, AttributeError):
            pass
        else:
            if os.getppid() != parent:  # it died before the signal was set
                os._exit(1)
            return

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(1.0)
        os._exit(1)

    threading.Thread(target=watch, daemon=True, name="rllint-parent-watch").start()
