"""The public side of a data set: what dpforge may use without paying privacy.

Two faces of one concept: :mod:`~dpforge.schema.table` describes the columns of a table
(types, bounds, categories, label, label prior), :mod:`~dpforge.schema.array` the shape,
channel ranges and classes of images and time series. Both share the JSON conventions (format
version, review flags of drafts) defined in the table module. Anything left ``null`` is
estimated under differential privacy during ``fit`` and charged to the budget.
"""

from dpforge.schema.array import ArraySchema, Channel, image_schema
from dpforge.schema.table import Column, Schema

__all__ = ["ArraySchema", "Channel", "Column", "Schema", "image_schema"]
