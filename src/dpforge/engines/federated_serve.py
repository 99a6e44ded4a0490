"""The server's and a site's side of a deployed federation (``dpforge federated server|client``).

:func:`serve` runs the SuperLink, submits the dpforge run with ``flwr run`` and waits for it;
:func:`join` runs one site's SuperNode until the server goes away. Flower's processes and
their files are :mod:`.federated_deploy`'s; what a site answers is :mod:`.federated_app`'s.
"""

from __future__ import annotations

import queue
import socket
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from dpforge.engines.federated_deploy import (
    CONNECTION,
    TABLES_APP,
    Tls,
    flower_tool,
    start,
    stop,
    superlink_argv,
    supernode_argv,
    wait_for_port,
    write_app,
    write_connection,
)
from dpforge.errors import DpforgeError

__all__ = ["ServerPlan", "SitePlan", "join", "serve"]

WILDCARDS = ("0.0.0.0", "::", "")
# Flower 1.42's SuperNode logs these: once the SuperLink accepted it; when it stops retrying
# a call (after --max-wait-time, or on an error it does not retry); and, as it exits, the
# documented exit code 305 (SUPERNODE_CONNECTION_ERROR: it never reached the SuperLink)
CONNECTED, GAVE_UP, NOT_REACHED = "SuperNode ID", "Giving up reconnection", "Exit Code: 305"


@dataclass(frozen=True)
class ServerPlan:
    """What the server runs: where it listens (``host:port``), the host name the certificate
    names (the steward's own ``flwr run`` connects through it), TLS, and the run config."""

    host: str
    port: int
    name: str
    tls: Tls
    run_config: dict[str, Any]
    start_timeout: float = 60.0
    app: str = TABLES_APP  # the module of the Flower apps (tables or images)


def serve(plan: ServerPlan, work: Path, echo: Callable[[str], None]) -> None:
    """SuperLink up, the run submitted and streamed to ``echo``, SuperLink down; refused
    when the run wrote no model folder (its log was streamed, the SuperLink's is shown)."""
    log, out = work / "superlink.log", Path(str(plan.run_config["out"])) / "model.json"
    before = _stamp(out)  # with --overwrite, an old model folder is no proof of this run
    link = start(superlink_argv(plan.host, plan.port, plan.tls), work / "superlink", log)
    try:
        local = "127.0.0.1" if plan.host in WILDCARDS else plan.host
        try:
            wait_for_port(local, plan.port, link, plan.start_timeout)
        except DpforgeError as exc:
            raise DpforgeError(f"{exc}; its log ends:\n{_tail(log)}") from None
        app = write_app(work / "app", plan.run_config, plan.app)
        write_connection(work / "cli", f"{plan.name}:{plan.port}", plan.tls)
        submit = start([flower_tool("flwr"), "run", str(app), CONNECTION, "--stream"],
                       work / "cli", None)  # fmt: skip
        try:
            for line in submit.stdout:
                echo(line.rstrip("\n"))
            submit.wait()
        finally:
            stop(submit)
    finally:
        stop(link)
    if _stamp(out) in (None, before):
        raise DpforgeError(
            f"the federated run wrote no model folder at {out.parent}: see the run's log above "
            f"(the SuperLink's log ends:\n{_tail(log)})"
        )


@dataclass(frozen=True)
class SitePlan:
    """One site: the server's ``host:port``, TLS (the CA), its node config, its local runtime
    port and how long it tries to reach the server."""

    server: str
    tls: Tls
    node_config: dict[str, Any]
    port: int
    connect_timeout: float


def join(plan: SitePlan, work: Path, echo: Callable[[str], None]) -> None:
    """The site's SuperNode until the server goes away for ``connect_timeout`` seconds
    (its log streamed to ``echo``). Refused with what to check when the server was never
    reached."""
    argv = supernode_argv(plan.server, plan.tls, plan.node_config, plan.port,
                          plan.connect_timeout)  # fmt: skip
    node = start(argv, work, None)
    connected = unreached = False
    try:
        for line in _lines_until_done(node, plan.server, plan.connect_timeout):
            echo(line)
            connected = connected or CONNECTED in line
            unreached = unreached or (not connected and NOT_REACHED in line)
    finally:
        stop(node)
    if connected:
        echo(f"the server at {plan.server} closed or went out of reach: this site stops")
        return
    if not unreached:
        raise DpforgeError(f"Flower's SuperNode stopped (exit status {node.returncode}) before "
                           "it reached the server: see its log above")  # fmt: skip
    check = "that --insecure is passed on both sides" if plan.tls.insecure else (
        f"that {plan.tls.ca} is the CA that signed the server's certificate and that the "
        "certificate names the host in --server"
    )  # fmt: skip
    raise DpforgeError(
        f"could not reach the server at {plan.server} within {plan.connect_timeout:g} s: "
        f"check the address and port, that 'dpforge federated server' runs there, that a "
        f"firewall lets this site through, and {check} (raise --connect-timeout to wait longer)"
    )


def _lines_until_done(node: subprocess.Popen, server: str, patience: float) -> Iterator[str]:
    """The SuperNode's log lines until it is done: it exited (it does when it never reached
    the server), or, once connected, it said it gave up and the server's port refuses
    connections (Flower 1.42 leaves the process running after a lost connection). Flower also
    gives up on single calls while the server is still there: the site then goes on, and
    stops only once the port has refused connections for ``patience`` seconds. The pipe
    itself may never close: flower-superexec, the node's child, keeps it open."""
    lines: queue.Queue[str | None] = queue.Queue()
    threading.Thread(target=_pump, args=(node.stdout, lines), daemon=True).start()
    connected, gave_up, lost = False, False, None
    while True:
        try:
            line = lines.get(timeout=1.0)
        except queue.Empty:  # a second without output: has the node or the server gone?
            if node.poll() is not None:
                return  # it exited and all it wrote was read
            if gave_up:  # once the port has refused connections for patience seconds
                lost = None if _reachable(server) else (lost or time.monotonic())
                if lost is not None and time.monotonic() - lost >= patience:
                    return
            continue
        if line is None:  # the end of the pipe
            return
        connected = connected or CONNECTED in line
        yield line.rstrip("\n")
        if connected and GAVE_UP in line:
            if not _reachable(server):  # Flower has retried for patience seconds already
                return
            gave_up = True


def _pump(stream: IO[str], lines: queue.Queue[str | None]) -> None:
    for line in stream:
        lines.put(line)
    lines.put(None)


def _reachable(server: str) -> bool:
    """Whether ``host:port`` accepts a TCP connection now (the SuperLink listens there)."""
    host, _, port = server.rpartition(":")
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=2.0):
            return True
    except (OSError, ValueError):
        return False


def _stamp(path: Path) -> int | None:
    return path.stat().st_mtime_ns if path.is_file() else None


def _tail(log: Path, lines: int = 15) -> str:
    if not log.is_file():
        return "(no log)"
    return "\n".join(log.read_text(errors="replace").splitlines()[-lines:])
