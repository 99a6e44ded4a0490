"""Empirical privacy audits: statistical LOWER bounds on ε, to set next to the accountant's.

* :func:`one_run_audit` (Steinke, Nasr & Jagielski 2023): gradient canaries in one DP-SGD run of
  DP-CGAN's discriminator on a real table;
* :func:`many_runs_audit`: many short runs of the DP-SGD step with and without a canary record,
  a distinguishing event and Clopper-Pearson intervals.

A bound above the claimed ε proves the implementation (or its accounting) wrong; a bound below
it is what a correct implementation must give, and says nothing about how tight the claim is.
"""

from dpforge.audit.many_runs import ManyRunsConfig, many_runs_audit
from dpforge.audit.one_run import OneRunConfig, one_run_audit
from dpforge.audit.parts import DpSgdParts, package_parts
from dpforge.audit.result import AuditResult

__all__ = [
    "AuditResult",
    "DpSgdParts",
    "ManyRunsConfig",
    "OneRunConfig",
    "many_runs_audit",
    "one_run_audit",
    "package_parts",
]
