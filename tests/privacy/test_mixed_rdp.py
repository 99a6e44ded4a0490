"""The RDP accountant that also takes GS-WGAN's partition choice, and nothing more."""

import dp_accounting
import pytest
from dp_accounting.rdp import RdpAccountant

from dpforge.errors import PrivacyError
from dpforge.privacy.accounting import dpsgd_event, epsilon, privacy_report
from dpforge.privacy.gswgan_accounting import gswgan_epsilon, gswgan_event


def test_equals_plain_rdp_on_add_remove_events():
    event = dp_accounting.ComposedDpEvent(
        [dpsgd_event(0.01, 1.15, 24_900), dp_accounting.GaussianDpEvent(20.0)]
    )
    plain = RdpAccountant().compose(event).get_epsilon(1e-5)
    assert epsilon(event, 1e-5, "rdp") == pytest.approx(plain, rel=1e-12)


def test_partition_choice_alone_matches_the_gswgan_bound():
    event = gswgan_event(1000, 1.07, 2000, batch_size=4)
    assert epsilon(event, 1e-5, "rdp") == pytest.approx(
        gswgan_epsilon(1000, 1.07, 2000, 1e-5, batch_size=4), rel=1e-9
    )


def test_composition_with_metadata_costs_more_and_reports_rdp_only():
    training = gswgan_event(100, 3.0, 500, batch_size=8)
    metadata = dp_accounting.GaussianDpEvent(10.0)
    both = dp_accounting.ComposedDpEvent([metadata, training])
    assert epsilon(both, 1e-5, "rdp") > epsilon(training, 1e-5, "rdp")
    report = privacy_report(both, 1e-5)
    assert report.epsilon_pld is None and report.epsilon == report.epsilon_rdp


def test_fixed_size_batches_of_records_stay_refused():
    batch = dp_accounting.SampledWithoutReplacementDpEvent(
        1000, 10, dp_accounting.GaussianDpEvent(1.0)
    )
    with pytest.raises(PrivacyError, match="SampledWithoutReplacementDpEvent"):
        epsilon(batch, 1e-5, "rdp")
