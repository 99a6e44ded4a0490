"""Related tables on Spark: the checks, the child counts and the join as Spark SQL.

``RelationalSynthesizer(...).fit({"patients": spark_df, "visits": spark_df})`` runs each part's
fit on the Spark engine (:mod:`dpforge.engines.spark`): the records stay in Spark, and only the
count tables of the measurements come back to the driver. Before anything is charged, this
module does in Spark what :mod:`dpforge.data.relational` does in memory:

- every table's values are checked against its own schema (the Spark engine's checks, so that
  an error names the table's own row), every parent key is present and unique, and every child
  row names a parent that exists; each refusal names the table, the row (1-based, in the
  table's order), the value and the fix, as in memory (values wrapped in
  :func:`dpforge.errors.private`);
- the parent table gets one count column per child: its rows in the child, at most k;
- each child is joined with its parent's columns, named as
  :meth:`~dpforge.schema.relational.RelationalSchema.joined` names them.

The child is not cut to k rows per parent here: its part is fitted with the foreign key as the
privacy unit and k rows per unit, so the Spark engine keeps k rows per parent where the records
are (:meth:`~dpforge.engines.spark_table.SparkTable.bounded`), before any release, as for one
table. Keys are compared as trimmed text (1 and "1" alike; a key stored as the float 1.0 reads
"1.0" and is refused as naming no parent).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dpforge.data.relational import check_given
from dpforge.engines.spark import is_spark_dataframe
from dpforge.engines.spark_table import SparkTable, column
from dpforge.errors import DataError, SchemaError, private
from dpforge.privacy.person import UNIT_MISSING_TOKENS
from dpforge.schema.relational import RelationalSchema, RelationalTable, joined_name

__all__ = ["spark_part_tables"]

ROW = "__dpforge_row__"
KEY = "__dpforge_key__"
PARENT = "__dpforge_parent__"


def spark_part_tables(
    tables: Mapping[str, Any], schema: RelationalSchema, out_of_bounds: str
) -> dict[str, Any]:
    """What each part's fit reads, as Spark DataFrames: the parent with its child counts, each
    child joined with its parent (see the module docstring); bad input is refused here.
    Aggregates of children per parent are refused: they must be computed on the same k rows
    per parent that the child's fit keeps, and on Spark that fit chooses them."""
    with_aggregates = [c.name for c in schema.children if c.aggregates]
    if with_aggregates:
        raise SchemaError(
            f"child table '{with_aggregates[0]}' declares aggregates per parent, which the "
            "Spark engine does not compute yet: fit these tables in memory (pandas "
            "DataFrames or CSV files without [engine] name = \"spark\"), or remove the "
            "aggregates"
        )
    check_given(tables, schema)
    for table in schema.tables:
        _check_values(tables[table.name], table, out_of_bounds)
    parent = schema.parent
    parent_keys = _unique_keys(tables[parent.name], parent)
    parts = {parent.name: _with_counts(tables, schema, parent_keys)}
    for child in schema.children:
        _check_foreign_keys(tables[child.name], child, parent_keys)
        parts[child.name] = _joined(tables, schema, child)
    return parts


def refuse_mixed(tables: Mapping[str, Any]) -> None:
    """Spark DataFrames and pandas tables are not mixed: the tables are fitted on one engine."""
    kinds = {name: is_spark_dataframe(frame) for name, frame in tables.items()}
    if len(set(kinds.values())) > 1:
        spark = sorted(n for n, s in kinds.items() if s)
        other = sorted(n for n, s in kinds.items() if not s)
        raise DataError(
            f"tables {spark} are Spark DataFrames and {other} are not: give every table as a "
            "Spark DataFrame (fitted on Spark) or every one as a pandas DataFrame"
        )


# -- checks -------------------------------------------------------------------------------
def _check_values(frame: Any, table: RelationalTable, out_of_bounds: str) -> None:
    """The table's values against its own schema, with the Spark engine's checks."""
    try:
        checked = SparkTable(frame).validated(table.schema, out_of_bounds)
    except DataError as exc:
        raise DataError(f"table '{table.name}': {exc}") from None
    checked.unpersist()


def _key(name: str) -> Any:
    """The key column as trimmed text."""
    from pyspark.sql import functions as F

    return F.trim(column(name).cast("string"))


def _numbered(frame: Any, table: str, key: str) -> Any:
    """The table with each row's id (in the table's order) and its key as text; a missing key
    is refused, naming the row."""
    from pyspark.sql import functions as F

    if key not in frame.columns:
        raise DataError(
            f"table '{table}' has no column '{key}' (its columns: {list(frame.columns)}); "
            "fix the schema's key or the file's header"
        )
    numbered = frame.withColumn(ROW, F.monotonically_increasing_id())
    numbered = numbered.withColumn(KEY, _key(key))
    missing = F.col(KEY).isNull() | F.lower(F.col(KEY)).isin(sorted(UNIT_MISSING_TOKENS))
    first = _first_row(numbered, missing)
    if first is not None:
        raise DataError(
            f"table '{table}', row {private(first[0])}: key '{key}' is missing "
            f"({private(first[1], 'r')}); every row needs its key: fill it in, or remove the row"
        )
    return numbered


def _first_row(numbered: Any, flagged: Any) -> tuple[int, str] | None:
    """The first flagged row's 1-based position and key text (None: no row is flagged); two
    small queries, run only when a row is flagged."""
    from pyspark.sql import functions as F

    first = numbered.filter(flagged).agg(F.min(ROW)).collect()[0][0]
    if first is None:
        return None
    position = numbered.filter(F.col(ROW) < first).count() + 1
    return position, numbered.filter(F.col(ROW) == first).select(KEY).collect()[0][0]


def _unique_keys(frame: Any, parent: RelationalTable) -> Any:
    """The parent's keys (one row each); a key given twice is refused at its second row."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    numbered = _numbered(frame, parent.name, parent.key)
    rank = F.row_number().over(Window.partitionBy(KEY).orderBy(ROW))
    first = _first_row(numbered.withColumn("__rank", rank), F.col("__rank") > 1)
    if first is not None:
        raise DataError(
            f"table '{parent.name}', row {private(first[0])}: key '{parent.key}' value "
            f"{private(first[1], 'r')} appears twice; each parent needs a unique key: merge "
            "or renumber the duplicate rows"
        )
    return numbered.select(KEY)


def _check_foreign_keys(frame: Any, child: RelationalTable, parent_keys: Any) -> None:
    from pyspark.sql import functions as F

    link = child.link
    numbered = _numbered(frame, child.name, link.foreign_key)
    known = parent_keys.withColumn(PARENT, F.lit(True))
    first = _first_row(numbered.join(known, on=KEY, how="left"), F.col(PARENT).isNull())
    if first is not None:
        raise DataError(
            f"table '{child.name}', row {private(first[0])}: foreign key '{link.foreign_key}' "
            f"value {private(first[1], 'r')} names no row of '{link.parent}'; add that parent, "
            "or remove the row"
        )


# -- counts and the join ------------------------------------------------------------------
def _with_counts(tables: Mapping[str, Any], schema: RelationalSchema, keys: Any) -> Any:
    """The parent table with each child's count column (0..k rows per parent)."""
    from pyspark.sql import functions as F

    parent = schema.parent
    table = tables[parent.name].withColumn(KEY, _key(parent.key))
    for child in schema.children:
        name = schema.count_column(child).name
        frame = tables[child.name]
        counts = (
            frame.withColumn(KEY, _key(child.link.foreign_key))
            .groupBy(KEY)
            .agg(F.least(F.count(F.lit(1)), F.lit(child.max_rows)).alias(name))
        )
        table = table.join(counts, on=KEY, how="left").fillna(0, subset=[name])
    return table.drop(KEY)


def _joined(tables: Mapping[str, Any], schema: RelationalSchema, child: RelationalTable) -> Any:
    """Each child row with its parent's columns (the parent's key left out)."""
    parent = schema.parent
    source = tables[parent.name]
    others = [c for c in source.columns if c != parent.key]
    right = source.select(
        _key(parent.key).alias(KEY),
        *[column(c).alias(joined_name(child, child.schema.names, c)) for c in others],
    )
    rows = tables[child.name]
    left = rows.withColumn(KEY, _key(child.link.foreign_key))
    return left.join(right, on=KEY, how="inner").drop(KEY)
