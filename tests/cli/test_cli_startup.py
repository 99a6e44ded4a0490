"""The command line starts fast: ``dpforge --help`` and every ``dpforge COMMAND --help`` answer
without importing torch, scikit-learn, scipy, matplotlib, dp-accounting or pandas, and still name
every option. Each check runs in a fresh interpreter, since this test process has imported them
all long ago."""

from __future__ import annotations

import json
import subprocess
import sys

HEAVY = ("torch", "sklearn", "scipy", "matplotlib", "dp_accounting", "pandas")

HELP_OF_EVERY_COMMAND = """
import json, sys

import click
import typer.main
from typer.testing import CliRunner

import dpforge.cli

HEAVY = {heavy!r}
loaded = {{"import": [m for m in HEAVY if m in sys.modules]}}


def commands(command, path):
    if isinstance(command, click.Group):
        yield path, command
        for name, sub in command.commands.items():
            yield from commands(sub, [*path, name])
    else:
        yield path, command


helps = {{}}
runner = CliRunner()
for path, command in commands(typer.main.get_command(dpforge.cli.app), []):
    result = runner.invoke(dpforge.cli.app, [*path, "--help"], env={{"COLUMNS": "200"}})
    options = [o for p in command.params for o in (*p.opts, *p.secondary_opts) if o[:1] == "-"]
    helps[" ".join(path)] = {{
        "code": result.exit_code, "output": result.output, "options": options,
    }}
loaded["help"] = [m for m in HEAVY if m in sys.modules]
print(json.dumps({{"loaded": loaded, "helps": helps}}))
"""


def _run(code: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_help_of_every_command_loads_no_heavy_library_and_names_its_options():
    found = json.loads(_run(HELP_OF_EVERY_COMMAND.format(heavy=HEAVY)))
    assert found["loaded"] == {"import": [], "help": []}
    helps = found["helps"]
    expected = {
        "", "fit", "sample", "schema", "evaluate", "report", "audit", "privacy", "demo",
        "budget", "budget show", "budget set", "federated", "federated simulate",
        "federated server", "federated client", "federated simulate-images",
        "federated server-images", "federated client-images",
    }  # fmt: skip
    assert expected <= set(helps)
    for name, help_ in helps.items():
        assert help_["code"] == 0, (name, help_["output"])
        missing = [o for o in help_["options"] if o not in help_["output"]]
        assert not missing, (name, missing)
    assert "fit" in helps[""]["output"] and "budget" in helps[""]["output"]
    assert "--refine" in helps["fit"]["options"] and "--options" in helps["fit"]["options"]
    assert "Fit a private model of DATA" in helps["fit"]["output"]
    assert "mlp,lr,rf,gb,svm,knn,nb,dt,ada,bag" in helps["evaluate"]["output"]


def test_importing_the_package_loads_no_heavy_library():
    code = f"import sys, dpforge; print([m for m in {HEAVY!r} if m in sys.modules])"
    assert _run(code).strip() == "[]"
