"""The budget file of a data set: composition across runs, refusal, write-ahead, resume."""

from __future__ import annotations

import json
import math
import multiprocessing
import os

import pytest

from dpforge.errors import ModelFileError, PrivacyError
from dpforge.privacy.accounting import dpsgd_event, epsilon
from dpforge.privacy.budget import (
    BUDGET_SUFFIX,
    BudgetExceededError,
    DataBudget,
    budget_path_for,
    charge_before_release,
    data_sha256,
    records_fingerprint,
    settle_charge,
)
from dpforge.privacy.ledger import PrivacyLedger
from dpforge.synthesizer import Synthesizer

DELTA = 1e-5


def _ledger(q: float = 0.01, sigma: float = 1.0, steps: int = 1000) -> PrivacyLedger:
    ledger = PrivacyLedger()
    ledger.record("dpsgd", dpsgd_event(q, sigma, steps))
    return ledger


@pytest.fixture
def data(tmp_path):
    path = tmp_path / "records.csv"
    path.write_text("a,b\n1,2\n3,4\n")
    return path


def _charge(budget: DataBudget, ledger: PrivacyLedger, epsilon: float = 3.0, **kw):
    """A run whose whole ledger is known before it starts: charged with it as its bound, then
    settled with it (the one charging path)."""
    run = charge_before_release(
        budget, epsilon=epsilon, delta=DELTA, description="test run", bound=ledger, **kw
    )
    return settle_charge(budget, run, ledger)


def test_composed_epsilon_is_the_accountants_not_a_sum(data):
    budget = DataBudget.for_data(data)
    assert budget.path == data.with_name("records.csv" + BUDGET_SUFFIX)
    one = _ledger()
    for _ in range(3):
        _charge(budget, one)
    status = budget.status()
    single = epsilon(one.event(), DELTA)
    # Three identical DP-SGD runs composed by PLD, at the runs' summed delta (no total set).
    three = epsilon(dpsgd_event(0.01, 1.0, 3000), 3 * DELTA)
    assert len(status.runs) == 3
    assert status.spent.epsilon == pytest.approx(three, rel=1e-6)
    assert status.spent.epsilon < 3 * single  # composition is tighter than adding ε's
    assert status.spent.accountant == "pld"


def test_a_run_beyond_the_total_is_refused_and_nothing_written(data):
    budget = DataBudget.for_data(data)
    budget.set_total(2.0, DELTA)
    first = _ledger(sigma=1.0, steps=1000)  # ε ≈ 1.3 at δ = 1e-5
    assert epsilon(first.event(), DELTA) < 2.0
    _charge(budget, first)
    before = budget.path.read_bytes()
    with pytest.raises(BudgetExceededError, match="refused before training.*declared total"):
        _charge(budget, first)
    assert budget.path.read_bytes() == before
    assert len(budget.status().runs) == 1


def test_a_non_private_run_spends_everything(data):
    budget = DataBudget.for_data(data)
    budget.set_total(10.0, DELTA)
    ledger = PrivacyLedger()
    ledger.record("baseline", dpsgd_event(0.01, 0.0, 10))
    with pytest.raises(BudgetExceededError):
        _charge(budget, ledger, epsilon=math.inf)


def test_the_file_round_trips_and_is_private(data):
    budget = DataBudget.for_data(data)
    budget.set_total(5.0, DELTA)
    run = _charge(budget, _ledger())
    saved = json.loads(budget.path.read_text())
    assert saved["format"] == "dpforge.data_budget"
    assert saved["total"] == {"epsilon": 5.0, "delta": DELTA}
    assert saved["runs"][0]["ledger"] == _ledger().to_dict()  # the ledger's own serialization
    assert saved["data_sha256"] == records_fingerprint(data)
    assert os.stat(budget.path).st_mode & 0o777 == 0o600
    again = DataBudget(budget.path).status()
    assert again.runs[0] == run and again.total_epsilon == 5.0


def test_a_renamed_copy_finds_the_budget_file_by_its_hash(data):
    DataBudget.for_data(data).set_total(4.0, DELTA)
    copy = data.with_name("renamed.csv")
    copy.write_bytes(data.read_bytes())
    assert DataBudget.for_data(copy).path == budget_path_for(data)
    other = data.with_name("other.csv")
    other.write_text("a,b\n9,9\n")
    assert DataBudget.for_data(other).path == budget_path_for(other)


def test_the_same_records_find_the_budget_whatever_the_bytes_or_order(tmp_path):
    """Issue 43.8: a CRLF copy or a row-shuffled copy of the same rows, in the same folder,
    started a fresh budget (the file was keyed on its bytes). The fingerprint is of the
    records: line endings, row order, column order and the spaces around values do not count;
    one changed value does (docs/budget.md says so)."""
    data = tmp_path / "records.csv"
    data.write_text("a,b\n1,x\n3,y\n5,z\n")
    DataBudget.for_data(data).set_total(4.0, DELTA)
    copies = {
        "crlf.csv": b"a,b\r\n1,x\r\n3,y\r\n5,z\r\n",
        "shuffled.csv": b"a,b\n5,z\n1,x\n3,y\n",
        "columns.csv": b"b;a\ny; 3\nz;5\nx;1\n",
    }
    for name, text in copies.items():
        (tmp_path / name).write_bytes(text)
        assert DataBudget.for_data(tmp_path / name).path == budget_path_for(data), name
    changed = tmp_path / "changed.csv"
    changed.write_text("a,b\n1,x\n3,y\n6,z\n")
    assert DataBudget.for_data(changed).path == budget_path_for(changed)
    assert data_sha256(data) != data_sha256(tmp_path / "crlf.csv")  # the bytes do differ


def test_a_budget_file_that_recorded_the_bytes_still_finds_its_copy(data):
    """Budget files written before the records' fingerprint recorded the bytes' SHA-256."""
    budget = DataBudget.for_data(data)
    budget.set_total(4.0, DELTA)
    saved = json.loads(budget.path.read_text())
    saved["data_sha256"] = data_sha256(data)
    budget.path.write_text(json.dumps(saved))
    copy = data.with_name("renamed.csv")
    copy.write_bytes(data.read_bytes())
    assert DataBudget.for_data(copy).path == budget.path


def test_a_run_is_resumed_by_its_id_never_by_its_folder(data, tmp_path):
    budget = DataBudget.for_data(data)
    folder = tmp_path / "ckpt"
    first = _charge(budget, _ledger(), checkpoint=folder)
    again = _charge(budget, _ledger(), checkpoint=folder)  # same folder, same events: a new run
    assert again != first and len(budget.status().runs) == 2
    held = budget.reserve(epsilon=1.0, delta=DELTA, description="r", checkpoint=folder)
    resumed = budget.reserve(epsilon=1.0, delta=DELTA, description="r", resume_of=held.run_id)
    assert resumed == held and len(budget.status().runs) == 3


def test_a_reservation_counts_its_whole_target_until_settled(data):
    budget = DataBudget.for_data(data)
    budget.set_total(2.0, DELTA)
    held = budget.reserve(epsilon=1.5, delta=DELTA / 2, description="a fit")
    assert budget.status().spent.epsilon == pytest.approx(1.5)
    assert "1 unfinished" in budget.status().summary()
    with pytest.raises(BudgetExceededError):  # 1.5 reserved + 1.0 > 2
        budget.reserve(epsilon=1.0, delta=DELTA / 2, description="another")
    settled = budget.settle(held, _ledger(steps=10))
    assert not settled.reserved
    assert budget.status().spent.epsilon == pytest.approx(_ledger(steps=10).report(DELTA).epsilon)
    budget.settle(settled, PrivacyLedger())  # refused before any release: the run is removed
    assert budget.status().runs == ()


def test_a_foreign_or_corrupt_file_is_never_overwritten(data):
    path = budget_path_for(data)
    path.write_text('{"something": "else"}')
    with pytest.raises(ModelFileError, match="not a dpforge budget file"):
        _charge(DataBudget(path), _ledger())
    assert path.read_text() == '{"something": "else"}'
    path.write_text("{not json")
    with pytest.raises(ModelFileError, match="not a readable"):
        DataBudget(path).status()


def test_bad_totals_are_refused(data):
    budget = DataBudget.for_data(data)
    for eps, delta in [(0, DELTA), (math.inf, DELTA), (1.0, 0.0), (1.0, 1.5), ("2", DELTA)]:
        with pytest.raises(PrivacyError):
            budget.set_total(eps, delta)
    assert not budget.path.exists()


def _charge_in_process(path: str, barrier) -> None:
    barrier.wait()
    budget = DataBudget(path)
    for _ in range(3):
        _charge(budget, _ledger(steps=100))


def test_concurrent_charges_are_all_kept(tmp_path):
    path = tmp_path / ("shared" + BUDGET_SUFFIX)
    context = multiprocessing.get_context("fork")
    barrier = context.Barrier(3)
    workers = [
        context.Process(target=_charge_in_process, args=(str(path), barrier)) for _ in range(3)
    ]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(60)
    assert all(worker.exitcode == 0 for worker in workers)
    assert len(DataBudget(path).status().runs) == 9


@pytest.mark.slow
def test_fit_charges_before_training_and_refuses_beyond_the_total(cancer, tmp_path, monkeypatch):
    frame, schema = cancer
    budget = DataBudget(tmp_path / ("cancer" + BUDGET_SUFFIX))

    def synthesizer(eps: float) -> Synthesizer:
        return Synthesizer(
            schema, epsilon=eps, delta=DELTA, anchor=None, epochs=12.0, seed=0, progress=False
        )

    import dpforge.pipeline.refine as refine_stage

    trained = []
    real_train = refine_stage.train
    monkeypatch.setattr(
        refine_stage, "train", lambda *a, **k: trained.append(1) or real_train(*a, **k)
    )
    synth = synthesizer(2.0).fit(frame, budget=budget)
    run = budget.status().runs[0]
    assert run.ledger.to_dict() == synth.ledger_.to_dict()  # what was charged is what ran
    assert synth.budget_run_ == run
    budget.set_total(2.5, DELTA)
    with pytest.raises(BudgetExceededError):
        synthesizer(2.0).fit(frame, budget=budget)
    assert len(trained) == 1  # the refused run never trained
    assert len(budget.status().runs) == 1


@pytest.mark.slow
def test_a_fit_resumed_from_its_checkpoint_is_charged_once(cancer, tmp_path):
    frame, schema = cancer
    budget = DataBudget(tmp_path / ("cancer" + BUDGET_SUFFIX))
    options = dict(epsilon=2.0, delta=DELTA, anchor=None, epochs=12.0, seed=0, progress=False)
    folder = tmp_path / "checkpoint"
    Synthesizer(schema, checkpoint_dir=folder, **options).fit(frame, budget=budget)
    Synthesizer(schema, checkpoint_dir=folder, **options).fit(frame, budget=budget)
    assert len(budget.status().runs) == 1
    Synthesizer(schema, **options).fit(frame, budget=budget)  # a new run pays again
    assert len(budget.status().runs) == 2


@pytest.mark.slow
def test_a_fit_is_resumed_by_its_checkpoint_record_never_by_its_folder(cancer, tmp_path):
    """Issue 20.1: a later fit naming the same --checkpoint-dir is a resume only when the
    folder holds that run's own record; otherwise it is a new release and is charged."""
    from dpforge.pipeline.checkpoints import MEASURED
    from dpforge.statistics.anchor import AnchorConfig

    frame, schema = cancer
    budget = DataBudget(tmp_path / ("cancer" + BUDGET_SUFFIX))
    budget.set_total(4.0, DELTA)
    folder = tmp_path / "ck"
    options = dict(epsilon=3.0, delta=DELTA, seed=0, progress=False, checkpoint_dir=folder)
    anchor = AnchorConfig(steps=20, batch_size=256)
    first = Synthesizer(schema, anchor=anchor, **options).fit(frame, budget=budget)
    again = Synthesizer(schema, anchor=anchor, **options).fit(frame, budget=budget)
    assert len(budget.status().runs) == 1  # the measure stage's checkpoint: nothing measured
    assert again.ledger_.to_dict() == first.ledger_.to_dict()
    (folder / MEASURED).unlink()  # the same folder name, but no record of the run: a new run
    with pytest.raises(BudgetExceededError):
        Synthesizer(schema, anchor=anchor, **options).fit(frame, budget=budget)
    assert len(budget.status().runs) == 1 and budget.status().spent.epsilon <= 4.0


def test_a_fit_stopped_by_a_dp_outcome_has_spent_its_budget(cancer, tmp_path):
    """Issue 20.2: the budget file is charged before the first release, so a fit that stops
    on a DP outcome ('no category is frequent enough') has paid for it."""
    from dpforge.schema.table import Column, Schema

    frame, schema = cancer
    frame = frame.assign(code=[f"c{i}" for i in range(len(frame))])  # every value unique
    columns = (*schema.columns, Column("code", "categorical"))  # categories: estimated under DP
    schema = Schema(columns, label=schema.label, label_prior=schema.label_prior)
    budget = DataBudget(tmp_path / ("cancer" + BUDGET_SUFFIX))
    synth = Synthesizer(schema, epsilon=1.0, delta=DELTA, seed=0, progress=False)
    with pytest.raises(PrivacyError, match="frequent enough"):
        synth.fit(frame, budget=budget)
    (run,) = budget.status().runs
    assert not run.reserved and len(run.ledger) >= 1  # the category release ran and is charged
    assert budget.status().spent.epsilon > 0


def test_a_killed_fit_keeps_its_whole_reservation(cancer, tmp_path, monkeypatch):
    import dpforge.pipeline as pipeline

    frame, schema = cancer

    def killed(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(pipeline, "plan_training", killed)
    budget = DataBudget(tmp_path / ("cancer" + BUDGET_SUFFIX))
    with pytest.raises(KeyboardInterrupt):
        Synthesizer(schema, epsilon=2.0, delta=DELTA, seed=0, progress=False).fit(
            frame, budget=budget
        )
    (run,) = budget.status().runs
    # Counted as its bound: one Gaussian at the run's target, read at the target's delta less
    # the thresholded categories' share (so a little above 2, never below).
    assert run.reserved and 2.0 <= budget.status().spent.epsilon <= 2.02


def test_a_fit_refused_before_any_release_leaves_no_charge(cancer, tmp_path):
    frame, schema = cancer
    budget = DataBudget(tmp_path / ("cancer" + BUDGET_SUFFIX))
    bad = frame.assign(diagnosis="unknown class")
    with pytest.raises(Exception, match="unknown class"):
        Synthesizer(schema, epsilon=2.0, delta=DELTA, progress=False).fit(bad, budget=budget)
    assert budget.status().runs == ()


@pytest.mark.parametrize("seed", [0, 2])  # one fits, one is refused at both sizes
def test_the_delta_check_reads_the_released_count_not_n(cancer, seed):
    """Issue 43.9: at delta = 0.0029, 344 records fitted and 345 were refused (1/N checked on
    the exact N). The check now reads the count released under DP: one record more moves the
    outcome only when the noise lands within half a record of the threshold, and with the same
    seed the noisy counts differ by one record, so (for these seeds) both sizes agree."""
    frame, schema = cancer
    outcomes = []
    for n in (344, 345):
        synth = Synthesizer(schema, epsilon=1.0, delta=0.0029, seed=seed, progress=False)
        try:
            synth.fit(frame.iloc[:n])
            outcomes.append("fitted")
        except PrivacyError as exc:
            assert "not below 1/N" in str(exc) and str(n) not in str(exc)
            outcomes.append("refused")
    assert outcomes[0] == outcomes[1]


def test_a_refusal_on_delta_says_delta_binds(data):
    """Issue 46.2: a run refused because no δ was left was told to lower --epsilon. An
    unfinished run counted at its whole (ε, δ) holds all of the total's δ here: the refusal
    says δ binds, not ε, and what to do."""
    budget = DataBudget.for_data(data)
    budget.set_total(4.0, DELTA)
    charge_before_release(budget, epsilon=0.5, delta=DELTA, description="no bound known")
    with pytest.raises(BudgetExceededError, match="δ binds, not ε") as caught:
        _charge(budget, _ledger(steps=10), epsilon=0.5)
    assert "unfinished run" in str(caught.value) and "Lower --epsilon" not in str(caught.value)
    assert len(budget.status().runs) == 1
