"""The engines' shared fixture: one embedded Spark session per test process."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def spark():
    """One embedded Spark session (local[1], one shuffle partition), started once per process
    (starting the JVM is most of a Spark test's time)."""
    pytest.importorskip("pyspark", reason="pyspark is not installed (pip install dpforge[spark])")
    from dpforge.engines.spark import spark_session

    try:
        session = spark_session("local[1]")
    except Exception as exc:  # noqa: BLE001 - any start failure (no Java, no port) skips
        pytest.skip(f"Spark cannot start here: {type(exc).__name__}")
    session.conf.set("spark.sql.shuffle.partitions", "1")
    yield session
