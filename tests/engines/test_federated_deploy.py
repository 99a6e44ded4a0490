"""``dpforge federated server|client`` (issue 23.2): a real deployment on Flower's runtime.

The refusals come before any process starts (TLS files, a site table that does not fit the
schema) or from a real SuperNode that finds no server. The slow test runs a whole federation
on localhost: the server and three site processes over TLS (a CA and a server certificate
made here), and checks that the model folder and the ledgers are those of
``dpforge federated simulate`` on the same sites, seed and trust model.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest
from tests.cli_support import run

pytest.importorskip("flwr", reason="Flower is not installed (pip install dpforge[federated])")
pytest.importorskip("cryptography", reason="the test certificates need cryptography")

from tests.engines.test_federated import _declared, _table  # noqa: E402
from tests.engines.tls_files import write_tls_files  # noqa: E402

import dpforge  # noqa: E402
from dpforge.engines.federated_deploy import wait_for_port  # noqa: E402
from dpforge.engines.federated_sim import split_table  # noqa: E402

SEED, SITES = 11, 3


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _sites(tmp_path: Path, n_rows: int = 900) -> tuple[Path, Path, list[Path]]:
    """The whole table, the declared schema and the sites' CSV files (split as simulate does)."""
    frame, schema = _table(n_rows)
    whole, schema_path = tmp_path / "all.csv", tmp_path / "schema.json"
    frame.to_csv(whole, index=False)
    schema_path.write_text(_declared(schema).to_json())
    files = []
    for i, part in enumerate(split_table(frame, SITES, None, np.random.default_rng(SEED))):
        files.append(tmp_path / f"site{i}.csv")
        part.to_csv(files[-1], index=False)
    return whole, schema_path, files


def test_tls_is_required_unless_insecure_is_asked_for(tmp_path, monkeypatch, capsys):
    _, schema_path, files = _sites(tmp_path, 60)
    server = ["federated", "server", "--schema", schema_path, "--out", tmp_path / "m",
              "--sites", "3"]  # fmt: skip
    code, text = run(server, monkeypatch, capsys, unwrap=True)
    assert code == 2 and "TLS needs --certificate, --key, --ca" in text and "--insecure" in text
    missing = ["--certificate", tmp_path / "no.pem", "--key", files[0], "--ca", files[0]]
    code, text = run([*server, *missing], monkeypatch, capsys, unwrap=True)
    assert code == 2 and f"--certificate {tmp_path / 'no.pem'}: no such file" in text
    code, text = run([*server, "--insecure", "--ca", files[0]], monkeypatch, capsys, unwrap=True)
    assert code == 2 and "exclude each other" in text
    client = ["federated", "client", files[0], "--server", "localhost:9092", "--schema",
              schema_path, "--sites", "3"]  # fmt: skip
    code, text = run(client, monkeypatch, capsys, unwrap=True)
    assert code == 2 and "TLS needs --ca" in text
    code, text = run([*client, "--ca", tmp_path / "ca.pem"], monkeypatch, capsys, unwrap=True)
    assert code == 2 and "no such file" in text
    assert not (tmp_path / "m").exists()


def test_a_site_whose_table_does_not_fit_the_schema_is_refused_before_joining(
    tmp_path, monkeypatch, capsys
):
    _, schema_path, files = _sites(tmp_path, 60)
    lines = files[1].read_text().splitlines()
    row = lines[3].split(",")
    row[2] = "atlantis"  # the city column: not a declared category
    files[1].write_text("\n".join([*lines[:3], ",".join(row), *lines[4:]]) + "\n")
    client = ["federated", "client", files[1], "--server", "localhost:9", "--schema",
              schema_path, "--sites", "3", "--insecure"]  # fmt: skip
    code, text = run(client, monkeypatch, capsys, unwrap=True)
    assert code == 2 and "column 'city'" in text and "row 3" in text and "atlantis" in text
    assert "SuperNode" not in text  # refused before Flower started


def test_a_site_that_reaches_no_server_says_what_to_check(tmp_path, monkeypatch, capsys):
    _, schema_path, files = _sites(tmp_path, 60)
    address = f"127.0.0.1:{_free_port()}"  # nothing listens there
    client = ["federated", "client", files[0], "--server", address, "--schema", schema_path,
              "--sites", "3", "--insecure", "--connect-timeout", "2",
              "--port", str(_free_port())]  # fmt: skip
    code, text = run(client, monkeypatch, capsys, unwrap=True)
    assert code == 2
    assert f"could not reach the server at {address} within 2 s" in text
    assert "--insecure is passed on both sides" in text and "--connect-timeout" in text


def _cli(args: list) -> list[str]:
    return [sys.executable, "-m", "dpforge.cli", "federated", *map(str, args)]


def _env() -> dict[str, str]:
    """This checkout's dpforge in the child processes (and Flower's, which inherit it)."""
    source = str(Path(dpforge.__file__).resolve().parents[1])
    path = os.pathsep.join(p for p in (source, os.environ.get("PYTHONPATH", "")) if p)
    return {**os.environ, "PYTHONPATH": path, "OMP_NUM_THREADS": "1"}


def _start(args: list, log: Path) -> subprocess.Popen:
    with log.open("w") as out:
        return subprocess.Popen(_cli(args), env=_env(), stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True)  # fmt: skip


def _stop(process: subprocess.Popen) -> None:
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(10)


def _deploy(tmp_path: Path, schema_path: Path, files: list[Path], trust: list[str]) -> Path:
    """Server and sites as processes over TLS; the model folder (asserts they finished)."""
    tls, port = write_tls_files(tmp_path), _free_port()
    out = tmp_path / "deployed"
    server = _start(["server", "--schema", schema_path, "--out", out, "--sites", SITES,
                     "--listen", f"127.0.0.1:{port}", "--certificate", tls["certificate"],
                     "--key", tls["key"], "--ca", tls["ca"], "--seed", SEED, "--wait", 120,
                     "--budget", tmp_path / "federation.budget.json",
                     *trust], tmp_path / "server.log")  # fmt: skip
    wait_for_port("127.0.0.1", port, server, 120.0)  # else the sites could give up first
    sites = [
        _start(
            [
                "client",
                f,
                "--server",
                f"localhost:{port}",
                "--ca",
                tls["ca"],
                "--schema",
                schema_path,
                "--sites",
                SITES,
                "--ledger",
                tmp_path / f"site{i}.ledger.json",
                "--port",
                _free_port(),
                "--connect-timeout",
                10,
                *trust,
            ],
            tmp_path / f"site{i}.log",
        )  # fmt: skip
        for i, f in enumerate(files)
    ]
    try:
        assert server.wait(400) == 0, (tmp_path / "server.log").read_text()[-3000:]
        for i, site in enumerate(sites):  # each stops once the server is gone for 10 s
            assert site.wait(60) == 0, (tmp_path / f"site{i}.log").read_text()[-3000:]
    finally:
        for process in (server, *sites):
            _stop(process)
    return out


def _ledger(folder: Path) -> list[dict]:
    return json.loads((folder / "model.json").read_text())["privacy"]["ledger"]["entries"]


@pytest.mark.slow
def test_a_deployment_over_tls_writes_the_model_and_the_simulated_ledger(
    tmp_path, monkeypatch, capsys
):
    whole, schema_path, files = _sites(tmp_path)
    trust = ["--trust", "local"]  # a Flower round a query (SecAgg+: four; test_federated.py)
    deployed = _deploy(tmp_path, schema_path, files, trust)
    charged = json.loads((tmp_path / "federation.budget.json").read_text())["runs"]
    assert len(charged) == 1 and not charged[0]["reserved"]  # settled with the run's ledger
    simulated = tmp_path / "simulated"
    code, text = run(["federated", "simulate", whole, "--schema", schema_path, "--out",
                      simulated, "--sites", SITES, "--seed", SEED, *trust],
                     monkeypatch, capsys)  # fmt: skip
    assert code == 0, text
    assert _ledger(deployed) == _ledger(simulated)
    report = json.loads((tmp_path / "deployed.federation.json").read_text())
    expected = json.loads((tmp_path / "simulated.federation.json").read_text())
    for key in ("trust", "sites", "tolerate", "statement", "epsilon",
                "epsilon_if_k_sites_collude"):  # fmt: skip
        assert report[key] == expected[key]
    for i in range(SITES):  # each site kept its own ledger: the simulated sites' ledger
        site = json.loads((tmp_path / f"site{i}.ledger.json").read_text())
        assert site == expected["site_ledgers"][i]


def test_flower_reads_back_the_node_config_and_the_app_dpforge_writes(tmp_path):
    """The site's node config through Flower's own parser, and the app folder through
    Flower's own validation (components importable, run config values kept)."""
    from flwr.common.config import get_project_config, parse_config_args, validate_config

    from dpforge.engines.federated_deploy import node_config_text, write_app

    config = {"data": str(tmp_path / "my site" / "données.csv"), "trust": "secagg",
              "sites": 3, "tolerate": 1, "max-epsilon": 1.5, "max-delta": 1e-5}  # fmt: skip
    assert parse_config_args([node_config_text(config)]) == config
    run_config = {"schema": "/srv/a b.json", "out": "/srv/model", "epsilon": 0.5,
                  "delta": 1e-6, "sites": 10, "overwrite": False, "seed": 3}  # fmt: skip
    project = get_project_config(write_app(tmp_path / "app", run_config))
    valid, errors, _ = validate_config(project, check_module=True)
    assert valid, errors
    assert project["tool"]["flwr"]["app"]["config"] == run_config


def _fake_node(script: str, tmp_path: Path):
    """A stand-in for flower-supernode: a shell script, its output piped as ``start`` does."""
    from dpforge.engines.federated_deploy import start

    return start(["sh", "-c", script], tmp_path, None)


def test_the_site_stops_reading_when_the_node_exits_though_its_child_holds_the_pipe(tmp_path):
    """flower-superexec (here: a sleep) inherits the node's stdout and outlives it."""
    from dpforge.engines.federated_deploy import stop
    from dpforge.engines.federated_serve import _lines_until_done

    node = _fake_node("sleep 60 & echo 'Exit Code: 305'; exit 1", tmp_path)
    began = time.monotonic()
    try:
        lines = list(_lines_until_done(node, "127.0.0.1:9", patience=30.0))
    finally:
        stop(node)
    assert lines == ["Exit Code: 305"] and time.monotonic() - began < 10


def test_a_connected_site_goes_on_while_the_server_port_answers_then_stops(tmp_path):
    """Flower gives up on a single call while the server is there: the site keeps going,
    and stops once the server's port has refused connections for ``patience`` seconds."""
    from dpforge.engines.federated_deploy import stop
    from dpforge.engines.federated_serve import _lines_until_done

    listener = socket.create_server(("127.0.0.1", 0))
    server = f"127.0.0.1:{listener.getsockname()[1]}"
    node = _fake_node("echo 'SuperNode ID: 7'; echo 'Giving up reconnection after 1 s'; "
                      "sleep 60", tmp_path)  # fmt: skip
    closing = threading.Timer(3.0, listener.close)
    began = time.monotonic()
    closing.start()
    try:
        lines = list(_lines_until_done(node, server, patience=1.0))
    finally:
        closing.cancel()
        listener.close()
        stop(node)
    assert lines == ["SuperNode ID: 7", "Giving up reconnection after 1 s"]
    assert 3.0 <= time.monotonic() - began < 15 and node.returncode is not None
