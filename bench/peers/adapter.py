"""Our side of the bridge to smartnoise-synth's MST and AIM (they live in their own venv).

smartnoise-synth 1.0.x pins opacus 0.14, which conflicts with dpforge's dependencies, so it is
installed apart (``bash bench/peers/setup.sh``) and the two sides exchange CSV/JSON files only:
this module writes the cells and the public domain to a temporary folder, runs
``smartnoise_run.py`` with the peers' python in a subprocess and reads the synthetic cells back.

Every tool compared sees the same public cells (``peers/cells.py``):

    from peers.adapter import run_peer
    from peers.cells import cell_domain, from_cells, to_cells

    cells, domain = to_cells(train, schema, 64), cell_domain(schema, 64)
    synth_cells, timing = run_peer(cells, domain, "mst", 1.0, 1e-5, seed=0, rows=len(train),
                                   sampler="iid", cache_dir=Path("/work/peer-cache"))
    synth = from_cells(synth_cells, schema, 64, np.random.default_rng(0))

With ``cache_dir`` a result is kept in the cache of ``peers/cache.py``, and a cache miss samples
EVERY sampler from the one fit it pays for (the fit dominates; sampling takes seconds), so asking
for the other sampler later costs nothing. Results are not reproducible bit for bit even at a
fixed seed: smartnoise draws its measurement noise from OpenDP's unseedable secure generator (see
smartnoise_run.py).
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import tempfile
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from peers.cache import Entry, cache_key, sha256

__all__ = [
    "METHODS",
    "SAMPLERS",
    "PeerEnvironmentError",
    "PeerNotCachedError",
    "PeerTimeoutError",
    "peers_python",
    "run_peer",
    "run_peer_samplers",
]

PEERS_DIR = Path(__file__).resolve().parent
RUNNER = PEERS_DIR / "smartnoise_run.py"
VENV_ENV = "DPFORGE_PEERS_VENV"
DEFAULT_VENV = Path.home() / ".cache" / "dpforge-peers-venv"
METHODS = ("mst", "aim")
SAMPLERS = ("default", "iid")


class PeerEnvironmentError(RuntimeError):
    """The peers' virtual environment is missing or broken."""


class PeerNotCachedError(LookupError):
    """``cache_only=True`` and the cache lacks a requested sampler's result."""


class PeerTimeoutError(RuntimeError):
    """The peer's fit ran past its ``timeout`` (the benchmark's cap on a fit's wall time);
    ``cpu_seconds``: the CPU time it had used when it was stopped."""

    def __init__(self, message: str, cpu_seconds: float) -> None:
        super().__init__(message)
        self.cpu_seconds = cpu_seconds


def _children_cpu() -> float:
    """CPU seconds (user + system) of this process's finished children."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


# -- the peers' environment -------------------------------------------------------------------
def peers_python() -> Path:
    """The peers' venv python (``$DPFORGE_PEERS_VENV``, default ~/.cache/dpforge-peers-venv)."""
    venv = Path(os.environ.get(VENV_ENV) or DEFAULT_VENV).expanduser()
    python = venv / "bin" / "python"
    if not python.exists():
        raise PeerEnvironmentError(
            f"no peers' virtual environment at {venv} (smartnoise-synth lives apart from "
            f"dpforge's dependencies): run `bash bench/peers/setup.sh` first"
            + (f" (or unset {VENV_ENV})" if os.environ.get(VENV_ENV) else "")
        )
    return python


# -- running ---------------------------------------------------------------------------------
def _inputs(cells: pd.DataFrame, domain: Mapping[str, int]) -> tuple[bytes, bytes]:
    """The bytes of the cells CSV and of the domain JSON, exactly as the runner reads them."""
    names = list(domain)
    missing = [n for n in names if n not in cells.columns]
    if missing:
        raise ValueError(f"the cells lack the domain's columns {missing}")
    frame = cells[names].astype(np.int64)
    for name, size in domain.items():
        col = frame[name].to_numpy()
        if col.size and (col.min() < 0 or col.max() >= size):
            raise ValueError(f"column '{name}' holds cells outside 0..{size - 1}")
    csv = frame.to_csv(index=False).encode()
    domain_json = (json.dumps({n: int(s) for n, s in domain.items()}) + "\n").encode()
    return csv, domain_json


def _check(method: str, samplers: Sequence[str], epsilon: float, delta: float, rows: int):
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    bad = [s for s in samplers if s not in SAMPLERS]
    if bad or not samplers or len(set(samplers)) != len(samplers):
        raise ValueError(f"samplers must be distinct values of {SAMPLERS}, got {list(samplers)}")
    if not epsilon > 0 or not 0 <= delta < 1 or rows < 1:
        raise ValueError("need epsilon > 0, 0 <= delta < 1 and rows >= 1")


def _run(
    csv: bytes,
    domain_json: bytes,
    method: str,
    epsilon: float,
    delta: float,
    seed: int,
    rows: int,
    samplers: Sequence[str],
    columns: list[str],
    timeout: float | None,
    log_path: Path | None,
) -> dict[str, tuple[pd.DataFrame, dict]]:
    python = peers_python()
    with tempfile.TemporaryDirectory(prefix="dpforge-peer-") as tmp:
        folder = Path(tmp)
        (folder / "cells.csv").write_bytes(csv)
        (folder / "domain.json").write_bytes(domain_json)
        cmd = [
            str(python), str(RUNNER),
            "--train", str(folder / "cells.csv"), "--domain", str(folder / "domain.json"),
            "--method", method, "--epsilon", repr(float(epsilon)), "--delta", repr(float(delta)),
            "--seed", str(int(seed)), "--rows", str(int(rows)),
            "--timing", str(folder / "timing.json"),
        ]  # fmt: skip
        for sampler in samplers:
            cmd += ["--sampler", sampler, "--out", str(folder / f"synth_{sampler}.csv")]
        if log_path is not None:
            cmd.append("--verbose")
        # The venv must not see our environment's packages; unbuffered for a live log.
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
        env["PYTHONUNBUFFERED"] = "1"
        output = Path(log_path) if log_path is not None else folder / "output.txt"
        start = output.stat().st_size if output.exists() else 0
        with open(output, "ab") as sink:
            cpu = _children_cpu()
            try:
                proc = subprocess.run(
                    cmd, stdout=sink, stderr=subprocess.STDOUT, env=env, timeout=timeout
                )
            except subprocess.TimeoutExpired:
                used = _children_cpu() - cpu  # the stopped child is reaped by run()
                raise PeerTimeoutError(
                    f"{method} (peer) ran past {timeout:g} s ({used:.0f} CPU s by then)", used
                ) from None
        if proc.returncode != 0:
            with open(output, "rb") as f:
                f.seek(max(start, output.stat().st_size - 6000))
                tail = f.read().decode(errors="replace").strip()
            raise RuntimeError(f"{method} (peer) failed with exit {proc.returncode}:\n{tail}")
        timing = json.loads((folder / "timing.json").read_text())
        fit_id = uuid.uuid4().hex
        out = {}
        for sampler in samplers:
            synth = pd.read_csv(folder / f"synth_{sampler}.csv", dtype=np.int64)
            if list(synth.columns) != columns or len(synth) != rows:
                raise RuntimeError(f"{method} (peer) wrote an unexpected table for {sampler}")
            info = dict(timing, sampler=sampler, fit_id=fit_id, cached=False)
            info["sample_seconds"] = timing["sample_seconds"][sampler]
            info["sample_seconds_by_sampler"] = timing["sample_seconds"]
            info["samplers_from_fit"] = list(samplers)
            out[sampler] = (synth, info)
        return out


def run_peer_samplers(
    cells: pd.DataFrame,
    domain: Mapping[str, int],
    method: str,
    epsilon: float,
    delta: float,
    seed: int,
    rows: int,
    samplers: Sequence[str] = SAMPLERS,
    cache_dir: Path | None = None,
    *,
    timeout: float | None = None,
    log_path: Path | None = None,
    cache_only: bool = False,
) -> dict[str, tuple[pd.DataFrame, dict]]:
    """Like :func:`run_peer`, for several samplers drawn from ONE fit: sampler -> result.

    With ``cache_dir``, cached samplers are read back; if any is missing, one fit samples all
    of ``SAMPLERS`` (the requested ones and the rest, all cached) and the fit's results are used.
    ``cache_only``: never fit; raise :class:`PeerNotCachedError` when a sampler is not cached.
    ``log_path``: append the peer's output (with the synthesizer's verbose progress) there.
    """
    samplers = list(samplers)
    _check(method, samplers, epsilon, delta, rows)
    csv, domain_json = _inputs(cells, domain)
    columns = list(domain)
    if cache_only and cache_dir is None:
        raise ValueError("cache_only needs a cache_dir")
    if cache_dir is None:
        return _run(
            csv, domain_json, method, epsilon, delta, seed, rows, samplers, columns, timeout,
            log_path,
        )  # fmt: skip

    cache_dir = Path(cache_dir)
    cache_dir.mkdir(parents=True, exist_ok=True)
    cells_sha, domain_sha = sha256(csv), sha256(domain_json)

    def entry(sampler: str) -> Entry:
        key = cache_key(cells_sha, domain_sha, method, epsilon, delta, seed, rows, sampler)
        return Entry(cache_dir, key, method, epsilon, seed, sampler)

    out = {s: hit for s in samplers if (hit := entry(s).read()) is not None}
    if len(out) == len(samplers):
        return out
    if cache_only:
        missing = [s for s in samplers if s not in out]
        raise PeerNotCachedError(
            f"{method} eps={epsilon:g} seed={seed} ({', '.join(missing)}) is not in {cache_dir}"
        )

    fitted = _run(
        csv, domain_json, method, epsilon, delta, seed, rows, list(SAMPLERS), columns, timeout,
        log_path,
    )  # fmt: skip
    for sampler, (synth, info) in fitted.items():
        cached = entry(sampler)
        info = dict(info, cache_key=cached.key, cells_sha256=cells_sha, domain_sha256=domain_sha)
        cached.write(synth, info)
        fitted[sampler] = (synth, info)
    return {s: fitted[s] for s in samplers}


def run_peer(
    cells: pd.DataFrame,
    domain: Mapping[str, int],
    method: str,
    epsilon: float,
    delta: float,
    seed: int,
    rows: int,
    sampler: str,
    cache_dir: Path | None = None,
    *,
    timeout: float | None = None,
    log_path: Path | None = None,
) -> tuple[pd.DataFrame, dict]:
    """Fit smartnoise-synth's ``method`` ("mst" or "aim") at (epsilon, delta) on ``cells``
    (integer codes 0..domain[c]-1 per column) and sample ``rows`` synthetic cells with
    ``sampler`` ("default": smartnoise's ``sample``; "iid": i.i.d. from the fitted Private-PGM
    model). Returns the synthetic cells (columns in domain order) and the timing dict
    (``fit_seconds``, ``sample_seconds``, library versions, ``cached``...).

    Raises :class:`PeerEnvironmentError` when the peers' venv is missing (run
    ``bash bench/peers/setup.sh``), RuntimeError when the peer run fails.
    """
    results = run_peer_samplers(
        cells, domain, method, epsilon, delta, seed, rows, [sampler], cache_dir,
        timeout=timeout, log_path=log_path,
    )  # fmt: skip
    return results[sampler]
