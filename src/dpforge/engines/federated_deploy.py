"""A real federation on Flower's deployment runtime, driven from dpforge's two commands.

``dpforge federated server`` starts Flower's SuperLink (``flower-superlink``: the sites'
address, the TLS certificate, key and CA) and submits the dpforge run to it with Flower's own
``flwr run`` (a Flower app folder whose components are :mod:`.federated_app`'s, written here
with the run config), then waits for the run, checks the model folder and stops the
SuperLink. ``dpforge federated client`` starts one site's SuperNode (``flower-supernode``:
the server's address, the CA certificate, the site's node config). Flower 1.42's supported
interface for a deployment is these processes (its Python ``start_server``/``start_client``
are the deprecated pre-1.x API), so dpforge wraps them and writes nothing on the wire itself.
Each wrapped process runs in its own process group, stopped with the command.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dpforge.errors import DpforgeError

__all__ = [
    "Tls",
    "flower_tool",
    "start",
    "node_config_text",
    "stop",
    "superlink_argv",
    "terminated_as_exit",
    "supernode_argv",
    "wait_for_port",
    "write_app",
    "write_connection",
]

CONNECTION = "dpforge"  # the SuperLink connection's name in the server's private FLWR_HOME
APP_NAME = "dpforge-federation"
TABLES_APP = "dpforge.engines.federated_app"  # modules holding server_app and client_app
IMAGES_APP = "dpforge.engines.federated_images_app"


@dataclass(frozen=True)
class Tls:
    """TLS files for Flower's processes, or ``insecure`` (asked for explicitly, never implied).

    The server gives ``certificate``, ``key`` and ``ca``; a site gives ``ca`` alone (the
    certificate authority that signed the server's certificate)."""

    insecure: bool = False
    certificate: Path | None = None
    key: Path | None = None
    ca: Path | None = None

    @classmethod
    def checked(cls, insecure: bool, files: dict[str, Path | None]) -> Tls:
        """The TLS choice from the command's options: every named file must exist; either all
        of them or ``--insecure``, never both, never neither."""
        given = {k: v for k, v in files.items() if v is not None}
        if insecure and given:
            named = ", ".join(f"--{k}" for k in given)
            raise DpforgeError(f"--insecure and {named} exclude each other: pick one")
        if insecure:
            return cls(insecure=True)
        missing = [f"--{k}" for k, v in files.items() if v is None]
        if missing:
            raise DpforgeError(
                f"TLS needs {', '.join(missing)}; pass them, or --insecure for an unencrypted "
                "connection (a local trial only: the noisy answers then cross the network "
                "in clear)"
            )
        for option, path in given.items():
            if not Path(path).is_file():
                raise DpforgeError(f"--{option} {path}: no such file")
        paths = {k: Path(v).resolve() for k, v in given.items()}
        return cls(False, paths.get("certificate"), paths.get("key"), paths.get("ca"))


def superlink_argv(host: str, port: int, tls: Tls) -> list[str]:
    """``flower-superlink`` listening on ``host:port`` (Fleet, Control and runtime APIs share
    the port in Flower 1.42); dpforge is installed already, so no runtime ``uv sync``."""
    argv = [flower_tool("flower-superlink"), "--host", host, "--port", str(port),
            "--disable-runtime-dependency-installation"]  # fmt: skip
    if tls.insecure:
        return [*argv, "--insecure"]
    return [*argv, "--ssl-certfile", str(tls.certificate), "--ssl-keyfile", str(tls.key),
            "--ssl-ca-certfile", str(tls.ca)]  # fmt: skip


def supernode_argv(server: str, tls: Tls, node_config: dict[str, Any], port: int,
                   connect_timeout: float) -> list[str]:  # fmt: skip
    """``flower-supernode`` for one site; it gives up after ``connect_timeout`` seconds
    without the SuperLink; ``port`` is its own local runtime API (one per site and host)."""
    argv = [flower_tool("flower-supernode"), "--superlink", server, "--port", str(port),
            "--max-wait-time", f"{connect_timeout:g}", "--node-config",
            node_config_text(node_config)]  # fmt: skip
    if tls.insecure:
        return [*argv, "--insecure"]
    return [*argv, "--root-certificates", str(tls.ca)]


def node_config_text(config: dict[str, Any]) -> str:
    """Flower's ``--node-config`` text: space-separated ``key=value`` in TOML values (Flower
    reads a quoted value up to the next double quote, so a value may not hold one)."""
    for key, value in config.items():
        if '"' in str(value):
            raise DpforgeError(f"{key} {value!r}: Flower's node config cannot carry a '\"'; "
                               "rename the file")  # fmt: skip
    return " ".join(f"{k}={_toml(v)}" for k, v in config.items())


def _toml(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    return json.dumps(str(value))  # a TOML basic string (JSON's escapes are TOML's)


def write_app(folder: Path, run_config: dict[str, Any], module: str = TABLES_APP) -> Path:
    """A Flower app folder (``pyproject.toml`` only): the ``server_app`` and ``client_app``
    of ``module`` (dpforge's tables or images), with the run config as its defaults;
    ``flwr run`` builds it into the bundle it submits."""
    folder.mkdir(parents=True, exist_ok=True)
    config = "\n".join(f"{k} = {_toml(v)}" for k, v in run_config.items())
    (folder / "pyproject.toml").write_text(
        '[build-system]\nrequires = ["hatchling"]\nbuild-backend = "hatchling.build"\n\n'
        f'[project]\nname = "{APP_NAME}"\nversion = "1.0.0"\n'
        f'description = "dpforge federation ({module})"\nlicense = "Apache-2.0"\n'
        'dependencies = []\n\n[tool.flwr.app]\npublisher = "dpforge"\n\n'
        "[tool.flwr.app.components]\n"
        f'serverapp = "{module}:server_app"\nclientapp = "{module}:client_app"\n\n'
        f"[tool.flwr.app.config]\n{config}\n"
    )
    return folder


def write_connection(flwr_home: Path, address: str, tls: Tls) -> None:
    """The SuperLink connection ``flwr run`` uses, in a private ``FLWR_HOME``."""
    flwr_home.mkdir(parents=True, exist_ok=True)
    security = "insecure = true" if tls.insecure else f"root-certificates = {_toml(tls.ca)}"
    (flwr_home / "config.toml").write_text(
        f'[superlink]\ndefault = "{CONNECTION}"\n\n[superlink.{CONNECTION}]\n'
        f"address = {_toml(address)}\n{security}\n"
    )


def start(argv: Sequence[str], flwr_home: Path, log: Path | None) -> subprocess.Popen:
    """``argv`` in its own process group, with its own ``FLWR_HOME``; output to ``log`` (or
    piped to the caller when None)."""
    flwr_home.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "FLWR_HOME": str(flwr_home)}
    if log is None:
        return subprocess.Popen(
            list(argv), env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            start_new_session=True, text=True,
        )  # fmt: skip
    with log.open("ab") as out:  # the child keeps its own handle
        return subprocess.Popen(
            list(argv), env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )


@contextlib.contextmanager
def terminated_as_exit() -> Iterator[None]:
    """SIGTERM raises SystemExit inside the block (instead of ending Python on the spot), so
    the ``finally`` that stops Flower's processes runs when a service manager stops us."""

    def _exit(signum: int, frame: Any) -> None:
        raise SystemExit(128 + signum)

    previous = signal.signal(signal.SIGTERM, _exit)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def stop(process: subprocess.Popen, grace: float = 10.0) -> None:
    """Stop ``process`` and its group (Flower's own children: SuperExec, the apps)."""
    if process.poll() is None:
        _signal_group(process, signal.SIGTERM)
        try:
            process.wait(grace)
        except subprocess.TimeoutExpired:
            _signal_group(process, signal.SIGKILL)
            process.wait(grace)
    _signal_group(process, signal.SIGKILL)  # children the leader left behind
    if process.stdout is not None:
        process.stdout.close()


def _signal_group(process: subprocess.Popen, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, sig)


def wait_for_port(host: str, port: int, process: subprocess.Popen, timeout: float) -> None:
    """Until ``host:port`` accepts connections; refused if ``process`` exits or ``timeout``
    passes first (the caller shows its log)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise DpforgeError(f"Flower's SuperLink stopped (exit status {process.returncode})")
        try:
            with socket.create_connection((host, port), timeout=1.0):
                return
        except OSError:
            time.sleep(0.3)
    raise DpforgeError(f"Flower's SuperLink did not listen on {host}:{port} within {timeout:g} s")


def flower_tool(name: str) -> str:
    """Flower's command ``name`` beside this Python (its console scripts), else on PATH."""
    beside = Path(sys.executable).with_name(name)
    found = str(beside) if beside.is_file() else shutil.which(name)
    if found is None:
        raise DpforgeError(f"Flower's '{name}' is not installed: pip install 'dpforge[federated]'")
    return found
