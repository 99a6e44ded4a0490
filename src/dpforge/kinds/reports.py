"""Which part of the reports each kind's model gets (:mod:`dpforge.evaluation.report`,
:mod:`dpforge.evaluation.array_report`): tables :class:`~dpforge.kinds.table_report.TableReport`,
images :class:`~dpforge.kinds.image_report.ImageReport`, series
:class:`~dpforge.kinds.series_report.SeriesReport`. The reports ask here and never branch on
the kind. Not imported by :mod:`dpforge.kinds` itself: a fit loads no plotting.
"""

from __future__ import annotations

from dpforge.kinds.array_report import ArrayReport
from dpforge.kinds.image_report import ImageReport
from dpforge.kinds.series_report import SeriesReport
from dpforge.kinds.table_report import TableReport
from dpforge.schema.array import IMAGE, ArraySchema
from dpforge.schema.table import Schema

__all__ = ["report_of"]


def report_of(schema: Schema | ArraySchema) -> TableReport | ArrayReport:
    """The report part of ``schema``'s kind."""
    if isinstance(schema, Schema):
        return TableReport()
    return ImageReport() if schema.kind == IMAGE else SeriesReport()
