"""Empirical privacy audits: statistical LOWER bounds on ε, to set next to the accountant's.

* :func:`one_run_audit` (Steinke, Nasr & Jagielski 2023): gradient canaries in one DP-SGD run of
  DP-CGAN's discriminator on a real table;
* :func:`many_runs_audit`: many short runs of the DP-SGD step with and without a canary record,
  a distinguishing event and Clopper-Pearson intervals.

Those two drive the DP-SGD parts on a step assembled for the audit. The audits of the code a fit
really runs, with the same statistics:

* :func:`release_audit`: every release a run makes outside the discriminator step (the
  anchoring's marginals, cells and pair selection; the metadata estimates: bounds, categories,
  date ranges, the label prior; code histograms; the record and person counts; the k rows a
  person may have; a federated site's answers; GS-WGAN's sanitizer; :data:`RELEASES`), each
  through its real function with and without a canary record;
* :func:`step_audit`: the methods' own ``train_step`` (ghost-norm clipping, microbatches,
  DP-WGAN's gradient penalty) with and without a canary record.

``dpforge audit --release NAME`` runs either on the command line; ``bench/audits.py`` runs them
all with their planted defects.

A bound above the claimed ε proves the implementation (or its accounting) wrong; a bound below
it is what a correct implementation must give, and says nothing about how tight the claim is.
"""

from dpforge.audit.many_runs import ManyRunsConfig, many_runs_audit
from dpforge.audit.one_run import OneRunConfig, one_run_audit
from dpforge.audit.parts import DpSgdParts, package_parts
from dpforge.audit.releases import RELEASES, ReleaseAuditConfig, release_audit
from dpforge.audit.result import AuditResult
from dpforge.audit.training_step import StepAuditConfig, step_audit

__all__ = [
    "RELEASES",
    "AuditResult",
    "DpSgdParts",
    "ManyRunsConfig",
    "OneRunConfig",
    "ReleaseAuditConfig",
    "StepAuditConfig",
    "many_runs_audit",
    "one_run_audit",
    "package_parts",
    "release_audit",
    "step_audit",
]
