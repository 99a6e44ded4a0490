"""Sampling given values of any columns: conditions checked against the public schema
(:mod:`.resolve`), read from the command line (:mod:`.text`) and met by the model's own
conditional distribution (:mod:`.rejection`). Post-processing: no record is read, nothing is
charged to the privacy budget."""

from dpforge.conditions.rejection import conditioned_batch, conditioned_chunks, draw_cap
from dpforge.conditions.resolve import ColumnCondition, ResolvedConditions, resolve_conditions
from dpforge.conditions.text import conditions_from_texts, shown_condition

__all__ = [
    "ColumnCondition",
    "ResolvedConditions",
    "conditioned_batch",
    "conditioned_chunks",
    "conditions_from_texts",
    "draw_cap",
    "resolve_conditions",
    "shown_condition",
]
