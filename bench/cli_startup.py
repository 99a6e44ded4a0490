"""Start-up cost of dpforge's package and CLI: CPU (user+sys of the child) and wall seconds.

``python bench/cli_startup.py SRC [REPEATS]``: SRC is the ``src`` folder to time (PYTHONPATH).
"""

import os
import resource
import statistics
import subprocess
import sys
import time

src = sys.argv[1]
repeats = int(sys.argv[2]) if len(sys.argv) > 2 else 5
cases = {
    "import dpforge": ["-c", "import dpforge"],
    "import dpforge.cli": ["-c", "import dpforge.cli"],
    "dpforge --help": ["-m", "dpforge.cli", "--help"],
    "dpforge fit --help": ["-m", "dpforge.cli", "fit", "--help"],
    "dpforge audit --help": ["-m", "dpforge.cli", "audit", "--help"],
}
env = {**os.environ, "PYTHONPATH": src, "OMP_NUM_THREADS": "1"}
for name, args in cases.items():
    cpu, wall = [], []
    for _ in range(repeats):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t = time.perf_counter()
        subprocess.run(
            ["nice", "-n", "10", sys.executable, *args],
            env=env,
            check=True,
            stdout=subprocess.DEVNULL,
        )
        wall.append(time.perf_counter() - t)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    cpu_text = f"cpu median {statistics.median(cpu):.2f} s (min {min(cpu):.2f}, max {max(cpu):.2f})"
    wall_text = (
        f"wall median {statistics.median(wall):.2f} s (min {min(wall):.2f}, max {max(wall):.2f})"
    )
    print(f"{name:24s} {cpu_text}  {wall_text}  n={repeats}", flush=True)
