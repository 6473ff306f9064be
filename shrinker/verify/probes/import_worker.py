"""Fork-server import worker, run with the verify environment's python (stdlib only: no shrinker).

    python import_worker.py CONFIG.json < tasks

CONFIG: {"timeout": s, "preload": [third-party names], "tops": [tree packages], "root": tree root,
"pretend": pretend_cuda.py's spec or null}.
Tasks come on stdin, one JSON line each: {"parent": package, "modules": [its children]}, or
{"base": module, "groups": [[package, [its children]], ...]}; after each the worker prints
{"task_done": true}, so the caller can hand out work as workers free up.

Every module is imported by a fresh forked child that imports exactly that module, so a module that
fails, hangs or poisons the interpreter cannot touch another's result. Two things are shared to make
that fast, neither of which changes what an isolated `python -c "import X"` would do:
- the third-party `preload` packages (torch alone takes seconds) are imported once by the server;
- modules are grouped by parent package, and each group's children fork from a sub-server that has
  imported that parent: Python imports a module's parent packages before the module itself, so
  they would run first anyway. When the parent fails to import, its children fork from the server
  instead (and fail on the parent themselves).
A task's `base` goes further (a tree module imported once by a base server, from which the groups'
sub-servers fork): it runs before the module's own imports would reach it, so the caller only names
one it checked in a fresh process first and that each module's own import loads anyway
(verify/import_bases.py), and re-runs fresh what then differs from upstream. If the base fails here,
the groups run without it.
One JSON line per module goes to stdout: {"module", "status": "ok" | "error" | "timeout" | "crash",
"seconds", "error": last traceback lines, "loaded": tree modules in sys.modules afterwards,
"files" / "dirs": paths under the tree root the import opened / listed (an audit hook sees them:
data files, C++ sources built at import, directory scans), relative to the root}.
"""

from __future__ import annotations

import gc
import importlib
import json
import os
import select
import signal
import sys
import time
import traceback

TAIL_LINES = 6
OUT_FD = 1
ROOT = ""
OPENED: set[str] = set()
LISTED: set[str] = set()


def _audit(event: str, args: tuple) -> None:
    """Record files opened and folders listed under the tree root (inherited by forked children)."""
    if event not in ("open", "os.listdir", "os.scandir") or not args:
        return
    if event != "open" and sys._getframe(1).f_code.co_filename.startswith("<frozen importlib"):
        return  # the import system's own directory cache: which modules exist is checked apart
    path = args[0]
    if isinstance(path, int) or path is None:
        return
    try:
        path = os.path.abspath(os.fsdecode(path))
    except (TypeError, ValueError):
        return
    if path.startswith(ROOT):
        (OPENED if event == "open" else LISTED).add(os.path.relpath(path, ROOT))


def _emit(record: dict) -> None:
    data = (json.dumps(record) + "\n").encode()
    while data:
        data = data[os.write(OUT_FD, data):]


def _loaded(tops: set[str]) -> list[str]:
    return sorted(m for m in list(sys.modules) if m.partition(".")[0] in tops and sys.modules.get(m) is not None)


def _child(module: str, wfd: int, tops: set[str]) -> None:
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)
    try:
        importlib.import_module(module)
        payload = {"status": "ok"}
    except BaseException as exc:  # SystemExit and KeyboardInterrupt from module code count too
        lines = traceback.format_exception(type(exc), exc, exc.__traceback__)
        text = "".join(lines).rstrip().splitlines()
        payload = {"status": "error", "error": "\n".join(text[-TAIL_LINES:]), "exception": type(exc).__name__}
    payload["loaded"] = _loaded(tops)
    payload["files"], payload["dirs"] = sorted(OPENED), sorted(LISTED)
    data = json.dumps(payload).encode()
    try:
        while data:
            data = data[os.write(wfd, data):]
    finally:
        os._exit(0)


def _run_one(module: str, timeout: float, tops: set[str]) -> dict:
    rfd, wfd = os.pipe()
    start = time.monotonic()
    pid = os.fork()
    if pid == 0:
        os.close(rfd)
        _child(module, wfd, tops)
    os.close(wfd)
    chunks, deadline, timed_out = [], start + timeout, False
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            os.kill(pid, signal.SIGKILL)
            timed_out = True
            break
        ready, _, _ = select.select([rfd], [], [], left)
        if ready:
            chunk = os.read(rfd, 1 << 20)
            if not chunk:
                break
            chunks.append(chunk)
    os.close(rfd)
    _, wstatus = os.waitpid(pid, 0)
    seconds = round(time.monotonic() - start, 3)
    if timed_out:
        return {"module": module, "status": "timeout", "seconds": seconds,
                "error": f"import did not finish in {timeout:.0f} s", "loaded": []}
    try:
        result = json.loads(b"".join(chunks).decode())
    except ValueError:
        how = (f"signal {os.WTERMSIG(wstatus)}" if os.WIFSIGNALED(wstatus)
               else f"exit code {os.WEXITSTATUS(wstatus)}")
        result = {"status": "crash", "error": f"the importing process died ({how}) before reporting", "loaded": []}
    return {"module": module, "seconds": seconds, **result}


def _import_quietly(name: str, timeout: float) -> None:
    """Import `name` in a (sub-)server, or exit 3 so the process above runs the work itself."""
    devnull = os.open(os.devnull, os.O_RDWR)
    saved = os.dup(2)
    os.dup2(devnull, 2)  # the import's warnings are the children's business
    signal.alarm(int(timeout) + 1)  # a hanging import kills this sub-server (SIGALRM)
    try:
        importlib.import_module(name)
    except BaseException:
        os._exit(3)
    finally:
        signal.alarm(0)
        os.dup2(saved, 2)
        os.close(devnull)


def _serve_group(parent: str, modules: list[str], timeout: float, tops: set[str]) -> None:
    """In a forked sub-server: import the parent package once, then one child per module."""
    if parent:
        _import_quietly(parent, timeout)
    gc.freeze()  # children then leave the shared heap's pages alone (no copy-on-write by the collector)
    for module in modules:
        _emit(_run_one(module, timeout, tops))
    os._exit(0)


def main() -> None:
    global OUT_FD, ROOT
    config = json.loads(open(sys.argv[1]).read())
    ROOT = os.path.join(os.path.abspath(config["root"]), "")
    # Results go to the real stdout; anything a preload prints goes to stderr instead.
    OUT_FD = os.dup(1)
    os.dup2(2, 1)
    timeout = float(config.get("timeout", 60))
    tops = set(config.get("tops", []))
    for name in config.get("preload", []):
        try:
            importlib.import_module(name)
        except BaseException:
            pass  # a missing third-party package shows up in the modules that need it
    if config.get("pretend"):  # after the preload: third-party packages import on the real machine
        import pretend_cuda

        pretend_cuda.install(config["pretend"])
    sys.addaudithook(_audit)  # after the preload: only tree code's reads matter
    gc.freeze()
    for line in sys.stdin:
        task = json.loads(line)
        groups = task.get("groups") or [[task["parent"], task["modules"]]]
        if task.get("base"):
            _serve_based(task["base"], groups, timeout, tops)
        else:
            for parent, modules in groups:
                _serve_task(parent, modules, timeout, tops)
        _emit({"task_done": True})


def _serve_based(base: str, groups: list, timeout: float, tops: set[str]) -> None:
    """Fork a base server that imports `base`, then serves the groups from there."""
    pid = os.fork()
    if pid == 0:
        _import_quietly(base, timeout)
        gc.freeze()
        for parent, modules in groups:
            _serve_task(parent, modules, timeout, tops)
        os._exit(0)
    _, wstatus = os.waitpid(pid, 0)
    if os.WIFEXITED(wstatus) and os.WEXITSTATUS(wstatus) == 0:
        return
    # The base failed here (or its server died): every group again without it; the last line wins.
    for parent, modules in groups:
        _serve_task(parent, modules, timeout, tops)


def _serve_task(parent: str, modules: list[str], timeout: float, tops: set[str]) -> None:
    pid = os.fork()
    if pid == 0:
        _serve_group(parent, modules, timeout, tops)
    # The sub-server reports per module; if it cannot import the parent it exits 3 at once.
    _, wstatus = os.waitpid(pid, 0)
    if os.WIFEXITED(wstatus) and os.WEXITSTATUS(wstatus) == 0:
        return
    # Parent failed (or the sub-server died): run the group's modules from here. Modules it
    # already reported are reported again; the reader keeps the last line per module.
    for module in modules:
        _emit(_run_one(module, timeout, tops))


if __name__ == "__main__":
    main()
