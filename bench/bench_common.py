"""What every benchmark records about the machine it ran on."""

from __future__ import annotations

import os
import platform
from typing import Any

import torch


def machine() -> dict[str, Any]:
    """Platform, processor, cores and library versions, for the results files."""
    return {
        "platform": platform.platform(),
        "processor": platform.processor() or platform.machine(),
        "cpu_count": os.cpu_count(),
        "python": platform.python_version(),
        "torch": torch.__version__,
        "torch_threads": torch.get_num_threads(),
    }
