"""Queries to federated sites as Flower messages; SecAgg+ through Flower's own workflow.

The server side is a :class:`FlowerTransport` over a Flower ``Grid`` (a real deployment's, or
the in-process :class:`SiteGrid` of a simulation). A query is a ``ConfigRecord`` holding its
JSON (and an ``ArrayRecord`` for the model the pair scores compare with). Under ``local`` trust,
and for the steps that release nothing or are thresholded at the sites (checks, categories),
each site answers a ``query`` message and the server sums. Under ``secagg`` every numeric
release runs Flower's ``SecAggPlusWorkflow`` (server) and ``secaggplus_mod`` (sites): the
site's noisy share, on a public fixed-point grid, is the ``FitRes`` the mod masks, and the
server learns only the sum. flwr is imported only here (``pip install 'dpforge[federated]'``).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from dpforge.engines.federated import Transport
from dpforge.engines.federated_site import Site
from dpforge.engines.federated_trust import (
    NOISE_STEPS,
    Trust,
    max_secagg_sites,
    secagg_grid,
)
from dpforge.errors import DataError, DpforgeError, PrivacyError

try:
    from flwr.app import ArrayRecord, ConfigRecord, Context, Message, RecordDict
    from flwr.client.mod import secaggplus_mod
    from flwr.clientapp import ClientApp
    from flwr.common import Code, FitIns, FitRes, Status, ndarrays_to_parameters
    from flwr.common import parameters_to_ndarrays as to_arrays
    from flwr.compat.common import recorddict_compat as compat
    from flwr.server import ServerConfig
    from flwr.server.client_proxy import ClientProxy
    from flwr.server.compat.legacy_context import LegacyContext
    from flwr.server.strategy import Strategy
    from flwr.server.workflow import SecAggPlusWorkflow
except ImportError as exc:  # pragma: no cover - the optional extra
    raise DpforgeError("federated runs need Flower: pip install 'dpforge[federated]'") from exc

QUERY, ANSWER, VALUES = "dpforge.query", "dpforge.answer", "dpforge.values"
SITE_STATE = "dpforge.site"
MODULUS = 2**32  # SecAgg+'s modulus (Flower's largest)
DEFAULT_MAX_SITE_RECORDS = 2**20


# ---------------------------------------------------------------------------- the sites


class ContextSites:
    """Sites rebuilt for each message from the state Flower keeps in their ``Context``
    (:meth:`Site.state`): ``site_of(context, answers)`` gives the site new, from its own
    records, schema, trust model, ledger and the noise generator of its next answer (the OS's
    entropy in a deployment)."""

    def __init__(self, site_of: Callable[[Context, int], Site]) -> None:
        self.site_of = site_of

    def answer(self, context: Context, query: dict, arrays: list[np.ndarray]) -> Any:
        """The site's answer; its state is saved in ``context`` once the answer is ready."""
        state = site_state(context)
        answers = 0 if state is None else int(state["answers"])
        site = Site.restore(self.site_of(context, answers), state)
        answer = site.answer(query, arrays)
        context.state.config_records[SITE_STATE] = ConfigRecord({"json": json.dumps(site.state())})
        return answer


def site_state(context: Context) -> dict | None:
    """The state a site left in its context (None before its first answer)."""
    if SITE_STATE not in context.state.config_records:
        return None
    return json.loads(str(context.state.config_records[SITE_STATE]["json"]))


def site_app(sites: ContextSites) -> ClientApp:
    """The sites' ClientApp: ``query`` messages answered directly, ``train`` messages (the
    SecAgg+ rounds) through Flower's ``secaggplus_mod``."""
    app = ClientApp()

    @app.query()
    def answer(msg: Message, context: Context) -> Message:
        query = json.loads(str(msg.content.config_records[QUERY]["json"]))
        arrays = _arrays(msg.content)
        return Message(_reply(sites.answer(context, query, arrays)), reply_to=msg)

    @app.train(mods=[secaggplus_mod])
    def share(msg: Message, context: Context) -> Message:
        fitins = compat.recorddict_to_fitins(msg.content, keep_input=True)
        query = json.loads(str(fitins.config["json"]))
        share = sites.answer(context, query, to_arrays(fitins.parameters))
        res = FitRes(Status(Code.OK, ""), ndarrays_to_parameters([share]), 1, {})
        return Message(compat.fitres_to_recorddict(res, keep_input=True), reply_to=msg)

    return app


def _arrays(content: RecordDict) -> list[np.ndarray]:
    if ANSWER not in content.array_records:
        return []
    record = content.array_records[ANSWER]
    return [record[k].numpy() for k in sorted(record, key=int)]


def _reply(answer: Any) -> RecordDict:
    if answer is None:
        return RecordDict({VALUES: ConfigRecord({"json": "null"})})
    if isinstance(answer, list):
        return RecordDict({VALUES: ConfigRecord({"json": json.dumps(answer)})})
    return RecordDict({ANSWER: ArrayRecord({"0": _array(answer)})})


def _array(values: np.ndarray) -> Any:
    from flwr.app import Array

    return Array(np.ascontiguousarray(values, dtype=np.float64))


# ---------------------------------------------------------------------------- the server


class FlowerTransport(Transport):
    """Queries over a Flower grid to the sites ``node_ids``."""

    def __init__(self, grid: Any, node_ids: Sequence[int], trust: Trust,
                 max_site_records: int = DEFAULT_MAX_SITE_RECORDS) -> None:  # fmt: skip
        if len(node_ids) != trust.n_sites:
            raise PrivacyError(
                f"{len(node_ids)} sites joined, the trust model names {trust.n_sites}"
            )
        self.grid, self.nodes, self.trust = grid, list(node_ids), trust
        self.max_site_records = int(max_site_records)
        most = max_secagg_sites(self.max_site_records, NOISE_STEPS)  # before any query
        if trust.mode == "secagg" and trust.n_sites > most:
            raise PrivacyError(
                f"SecAgg+ serves at most {most} sites exactly with --max-site-records "
                f"{self.max_site_records} (see dpforge.engines.federated_trust); lower "
                "--max-site-records, use fewer sites, or --trust local"
            )
        self.rounds = 0

    def command(self, query: dict[str, Any]) -> None:
        self._ask(query, [])

    def union(self, query: dict[str, Any]) -> list[str]:
        replies = self._ask(query, [])
        found = set()
        for reply in replies:
            found.update(json.loads(str(reply.content.config_records[VALUES]["json"])))
        return sorted(found)

    def noisy_sum(self, query: dict[str, Any], arrays: Sequence[np.ndarray]) -> np.ndarray:
        if self.trust.mode == "local":
            replies = self._ask(query, arrays)
            return np.sum([_arrays(r.content)[0] for r in replies], axis=0)
        return self._secure_sum(query, arrays)

    def _ask(self, query: dict[str, Any], arrays: Sequence[np.ndarray]) -> list[Message]:
        query = {**query, "trust": self.trust.key()}
        content = RecordDict({QUERY: ConfigRecord({"json": json.dumps(query)})})
        if arrays:
            content[ANSWER] = ArrayRecord({str(i): _array(a) for i, a in enumerate(arrays)})
        self.rounds += 1
        messages = [
            Message(content, node, "query", group_id=str(self.rounds)) for node in self.nodes
        ]
        replies = list(self.grid.send_and_receive(messages))
        _raise_errors(replies, len(self.nodes))
        return replies

    def _secure_sum(self, query: dict[str, Any], arrays: Sequence[np.ndarray]) -> np.ndarray:
        """One SecAgg+ round (Flower's workflow): each site's share on the public grid."""
        grid, clip, quantization = self.secagg_grid(float(query["std"]))
        query = {**query, "grid": grid, "clip": clip, "trust": self.trust.key()}
        strategy = _OneQuery(self.nodes, query, arrays)
        workflow = SecAggPlusWorkflow(
            num_shares=self.trust.n_sites, reconstruction_threshold=self._threshold(),
            max_weight=1.0, clipping_range=clip, quantization_range=quantization,
            modulus_range=MODULUS,
        )  # fmt: skip
        self.rounds += 1
        workflow(self.grid, _legacy_context(strategy, self.rounds))
        if strategy.mean is None:
            raise DpforgeError(
                "secure aggregation halted: too few sites answered (see Flower's log)"
            )
        active = strategy.answered
        if self.nodes and len(self.nodes) - active > self.trust.tolerate:
            raise PrivacyError(
                f"{len(self.nodes) - active} sites dropped out of a secure sum, more than the "
                f"t = {self.trust.tolerate} tolerated: that release carried less than the "
                "central noise (see docs/federated.md); stop and rerun"
            )
        return np.rint(strategy.mean * active / grid) * grid

    def secagg_grid(self, std: float) -> tuple[float, float, int]:
        """(grid, clipping range, quantization range) of a secure sum of central noise std
        ``std`` (:func:`~.federated_trust.secagg_grid`: refused beyond the sites it serves)."""
        return secagg_grid(self.trust, std, self.max_site_records)

    def _threshold(self) -> int | float:
        """Shares needed to rebuild a site's masks: n - t (SecAgg+ then completes with up to
        t sites dropped out); t = 0 asks for all of them."""
        return 1.0 if self.trust.tolerate == 0 else self.trust.n_sites - self.trust.tolerate


def _raise_errors(replies: list[Message], expected: int) -> None:
    for reply in replies:
        if reply.has_error():
            raise DataError(f"a site refused the query: {reply.error.reason}")
    if len(replies) != expected:
        raise DpforgeError(f"{expected - len(replies)} sites did not answer")


def _legacy_context(strategy: Strategy, round_: int) -> LegacyContext:
    context = Context(run_id=0, node_id=0, node_config={}, state=RecordDict(), run_config={})
    legacy = LegacyContext(context, config=ServerConfig(num_rounds=1), strategy=strategy)
    legacy.state.config_records["config"] = ConfigRecord({"current_round": round_})
    legacy.state.array_records["parameters"] = ArrayRecord([])
    return legacy


class _Proxy(ClientProxy):
    """The node a SecAgg+ round addresses (the workflow needs only its id)."""

    def __init__(self, node_id: int) -> None:
        super().__init__(str(node_id))
        self.node_id = node_id

    def get_properties(self, *args: Any, **kwargs: Any) -> Any:
        raise DpforgeError("not used by dpforge's SecAgg rounds")

    get_parameters = fit = evaluate = reconnect = get_properties


class _OneQuery(Strategy):
    """A Flower strategy for one secure sum: the query to every site, the mean back."""

    def __init__(self, nodes: Sequence[int], query: dict, arrays: Sequence[np.ndarray]) -> None:
        self.nodes, self.query = nodes, query
        self.parameters = ndarrays_to_parameters([np.asarray(a) for a in arrays])
        self.mean: np.ndarray | None = None
        self.answered = 0

    def initialize_parameters(self, client_manager: Any) -> None:
        return None

    def configure_fit(self, server_round: int, parameters: Any, client_manager: Any) -> list:
        fitins = FitIns(self.parameters, {"json": json.dumps(self.query)})
        return [(_Proxy(n), fitins) for n in self.nodes]

    def aggregate_fit(self, server_round: int, results: list, failures: list) -> tuple:
        self.answered = len(results)
        if results:
            self.mean = to_arrays(results[0][1].parameters)[0]
        return None, {}

    def configure_evaluate(self, *args: Any) -> list:
        return []

    def aggregate_evaluate(self, *args: Any) -> tuple:
        return None, {}

    def evaluate(self, *args: Any) -> None:
        return None
