"""Kept for bench/bench_audit.py (owned elsewhere): what it imports now lives in harness.py.

New code imports ``harness`` directly; once bench_audit.py does too, this file can go.
"""

from __future__ import annotations

from harness import machine

__all__ = ["machine"]
