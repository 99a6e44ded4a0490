"""A whole federation on one machine: sites in this process, Flower's messages between them.

Flower's simulation engine runs ClientApps on Ray, which is too heavy for CI and for a
two-core machine; :class:`SiteGrid` is an in-process Flower ``Grid`` instead: every message is
encoded to Flower's wire format (protobuf) and decoded again on the other side, the sites run
the same ClientApp (with Flower's ``secaggplus_mod``) and the server the same transport and
``SecAggPlusWorkflow`` as in a real deployment. Only the network is missing.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import pandas as pd
from flwr.app import Context, Error, Message, RecordDict
from flwr.clientapp import ClientApp
from flwr.common.serde import message_from_proto, message_to_proto
from flwr.serverapp import Grid
from flwr.supercore.task_identity import TaskIdentity

from dpforge.engines.federated import FederatedEngine
from dpforge.engines.federated_flower import (
    DEFAULT_MAX_SITE_RECORDS,
    ContextSites,
    FlowerTransport,
    site_app,
    site_state,
)
from dpforge.engines.federated_site import Site
from dpforge.engines.federated_trust import Trust
from dpforge.errors import DataError
from dpforge.privacy.ledger import PrivacyLedger
from dpforge.privacy.release_noise import noise_generator
from dpforge.schema.table import Schema

SERVER_NODE = 1
FIRST_SITE = 100


class SiteGrid(Grid):
    """An in-process Flower grid: messages go through Flower's wire encoding to the sites."""

    def __init__(self, app: ClientApp, node_configs: Sequence[dict]) -> None:
        TaskIdentity.run_id, TaskIdentity.node_id, TaskIdentity.task_id = 1, SERVER_NODE, 1
        logging.getLogger("flwr").setLevel(logging.WARNING)  # no per-round chatter
        self.app = app
        self.contexts = {
            FIRST_SITE + i: Context(
                run_id=1,
                node_id=FIRST_SITE + i,
                node_config=dict(config),
                state=RecordDict(),
                run_config={},
            )  # fmt: skip
            for i, config in enumerate(node_configs)
        }
        self._replies: dict[str, Message] = {}
        self._run: Any = None

    def set_run(self, run: Any) -> None:
        self._run = run

    @property
    def run(self) -> Any:
        return self._run

    def create_message(self, content, message_type, dst_node_id, group_id, ttl=None) -> Message:
        return Message(content, dst_node_id, message_type, group_id=group_id)

    def get_node_ids(self) -> Iterable[int]:
        return list(self.contexts)

    def site_ledgers(self) -> list[PrivacyLedger]:
        """Each site's own ledger, as its state holds it."""
        return [PrivacyLedger.from_dict(site_state(c)["ledger"]) for c in self.contexts.values()]

    def push_messages(self, messages: Iterable[Message]) -> Iterable[str]:
        ids = []
        for message in messages:
            message.metadata.__dict__["_message_id"] = uuid.uuid4().hex
            message.metadata.__dict__["_src_node_id"] = SERVER_NODE
            received = message_from_proto(message_to_proto(message))
            reply = self._deliver(received)
            self._replies[message.metadata.message_id] = message_from_proto(message_to_proto(reply))
            ids.append(message.metadata.message_id)
        return ids

    def _deliver(self, message: Message) -> Message:
        """The site's reply; a refusal becomes Flower's error reply (as a SuperNode sends)."""
        try:
            return self.app(message, self.contexts[message.metadata.dst_node_id])
        except Exception as exc:  # noqa: BLE001 - the site's refusal travels as an error reply
            reason = (
                str(exc.__cause__ or exc)
                if type(exc).__name__ == "ClientAppException"
                else str(exc)
            )
            return Message(Error(code=1, reason=reason), reply_to=message)

    def pull_messages(self, message_ids: Iterable[str]) -> Iterable[Message]:
        return [self._replies.pop(i) for i in message_ids if i in self._replies]

    def send_and_receive(self, messages: Iterable[Message], *, timeout: float | None = None):
        return self.pull_messages(self.push_messages(messages))


def split_table(frame: pd.DataFrame, n_sites: int, by: str | None, rng: np.random.Generator):
    """``frame`` split into ``n_sites`` parts: at random, or by the values of column ``by``
    (each value's rows to one site, values dealt to sites largest first)."""
    if by is None:
        order = rng.permutation(len(frame))
        return [
            frame.iloc[np.sort(part)].reset_index(drop=True)
            for part in np.array_split(order, n_sites)
        ]
    if by not in frame.columns:
        raise DataError(f"--split by {by}: no column '{by}' in the data")
    values = frame[by].astype(str).value_counts()
    if len(values) < n_sites:
        raise DataError(f"--split by {by}: {len(values)} values cannot fill {n_sites} sites")
    sizes, owner = [0] * n_sites, {}
    for value, count in values.items():  # largest first, to the emptiest site
        site = int(np.argmin(sizes))
        owner[value], sizes[site] = site, sizes[site] + count
    key = frame[by].astype(str).map(owner)
    return [frame[key == s].reset_index(drop=True) for s in range(n_sites)]


def simulated_engine(
    parts: Sequence[pd.DataFrame],
    schema: Schema,
    trust: Trust,
    seed: int | None,
    max_site_records: int = DEFAULT_MAX_SITE_RECORDS,
    out_of_bounds: str = "error",
) -> tuple[FederatedEngine, SiteGrid]:
    """An engine over in-process sites holding ``parts``, and their grid (site ledgers). Each
    site declares ``schema`` and ``out_of_bounds`` as its own (a steward's simulation)."""

    def site_of(context: Context, answers: int) -> Site:
        i = context.node_id - FIRST_SITE
        rng = site_generator(seed, i, answers)
        return Site(parts[i], schema, trust, rng, out_of_bounds=out_of_bounds)

    grid = SiteGrid(site_app(ContextSites(site_of)), [{} for _ in parts])
    transport = FlowerTransport(grid, list(grid.get_node_ids()), trust, max_site_records)
    return FederatedEngine(transport), grid


def site_generator(seed: int | None, site: int, answers: int) -> np.random.Generator:
    """The noise generator of a simulated site's next answer: from ``seed`` (reproducible),
    or from the OS's entropy when ``seed`` is None (a deployed site's only choice)."""
    if seed is None:
        return noise_generator(None)  # its release noise drawn by OpenDP or OS entropy
    return np.random.default_rng([seed, site, answers])
