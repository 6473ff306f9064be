"""Start an SGLang server in its own process group, wait until it serves, talk HTTP, stop it.

Standard library only (urllib), because this runs on the device before anything is installed.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def http_json(url: str, body: dict | None = None, timeout: float = 120.0) -> tuple[int, object]:
    """POST `body` (or GET when None); returns (status, parsed JSON or text)."""
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            status, raw = resp.status, resp.read()
    except urllib.error.HTTPError as exc:
        status, raw = exc.code, exc.read()
    text = raw.decode("utf-8", errors="replace")
    try:
        return status, json.loads(text)
    except ValueError:
        return status, text


def http_stream(url: str, body: dict, timeout: float = 120.0) -> tuple[int, list]:
    """POST a streaming request; returns (status, the list of parsed `data:` events)."""
    req = urllib.request.Request(url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
    events: list = []
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            for line in resp:
                line = line.decode("utf-8", errors="replace").strip()
                if not line.startswith("data:"):
                    continue
                payload = line[5:].strip()
                if payload == "[DONE]":
                    break
                try:
                    events.append(json.loads(payload))
                except ValueError:
                    events.append(payload)
            return resp.status, events
    except urllib.error.HTTPError as exc:
        return exc.code, [exc.read().decode("utf-8", errors="replace")]


@dataclass
class Server:
    proc: subprocess.Popen
    port: int
    log: Path
    started: float
    ready_s: float | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def log_tail(self, lines: int = 40) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""


def start(model: Path, flags: list[str], env: dict[str, str], log: Path, cwd: Path) -> Server:
    port = free_port()
    cmd = [sys.executable, "-m", "sglang.launch_server", "--model-path", str(model),
           "--host", "127.0.0.1", "--port", str(port), *flags]
    log.parent.mkdir(parents=True, exist_ok=True)
    fh = log.open("w")
    fh.write("$ " + " ".join(cmd) + "\n")
    fh.flush()
    proc = subprocess.Popen(cmd, stdout=fh, stderr=subprocess.STDOUT, env=env, cwd=str(cwd), start_new_session=True)
    return Server(proc=proc, port=port, log=log, started=time.monotonic())


def wait_ready(server: Server, timeout: float) -> bool:
    """Poll /health until 200 (the server answers only after its warm-up), the process dies, or timeout."""
    deadline = server.started + timeout
    while time.monotonic() < deadline:
        if server.proc.poll() is not None:
            return False
        try:
            status, _ = http_json(server.url + "/health", timeout=5)
            if status == 200:
                server.ready_s = time.monotonic() - server.started
                return True
        except (OSError, urllib.error.URLError):
            pass
        time.sleep(0.2)  # start-up ratios compare ~55 s launches: 0.2 s is under 0.5 %
    return False


def stop(server: Server, grace: float = 20.0) -> None:
    """SIGTERM the whole process group (the server's scheduler and detokenizer too), then SIGKILL."""
    if server.proc.poll() is None:
        try:
            os.killpg(server.proc.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
        try:
            server.proc.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            pass
    try:
        os.killpg(server.proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    try:
        server.proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        pass
    wait_gpu_free()


def wait_gpu_free(timeout: float = 30.0) -> None:
    """Wait until no compute process holds the GPU (the next launch sizes its memory from what is free)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            out = subprocess.run(["nvidia-smi", "--query-compute-apps=pid", "--format=csv,noheader"],
                                 capture_output=True, text=True, timeout=10).stdout.strip()
        except (OSError, subprocess.TimeoutExpired):
            return
        if not out:
            return
        time.sleep(0.5)
