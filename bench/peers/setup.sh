#!/usr/bin/env bash
# The peers' own virtual environment: smartnoise-synth (MST, AIM on Private-PGM / mbi).
#
# smartnoise-synth 1.0.x pins opacus 0.14, which conflicts with dpforge's dependencies, so it
# lives apart from them; bench/peers/adapter.py talks to it through CSV files only.
#
#   bash bench/peers/setup.sh            # venv at ${DPFORGE_PEERS_VENV:-~/.cache/dpforge-peers-venv}
#
# torch is held at 2.13.0 by a constraints file. On this machine pip's find-links (/opt/wheels)
# holds torch-2.13.0+cpu, which `pip download torch==2.13.0 --no-deps` picks over PyPI's CUDA
# build, so no CPU wheel index is needed (and only PyPI is reachable here anyway). Without that
# local wheel, PyPI's torch 2.13.0 resolves with 15 nvidia-*-cu13 packages (checked with
# `pip install --isolated --dry-run torch==2.13.0`): it still works on CPU, only some GB
# heavier; where pytorch's CPU wheel index is reachable, pass it in PIP_EXTRA_INDEX_URL.
#
# Idempotent: does nothing when the venv already imports snsynth with the pinned torch.
# Time: 71 s on the 2-core dev machine for a fresh venv (smartnoise-synth 1.0.8, mbi 1.1.0 with
# jax, opacus 0.14.0, torch 2.13.0+cpu from the local wheel; the rest downloaded from PyPI);
# a few seconds when already installed (the import check only).
set -euo pipefail

VENV="${DPFORGE_PEERS_VENV:-$HOME/.cache/dpforge-peers-venv}"
SMARTNOISE_SYNTH="${SMARTNOISE_SYNTH:-smartnoise-synth==1.0.8}"
# shellcheck source=venv.sh
source "$(dirname "$0")/venv.sh"  # build_venv and TORCH_PIN

check() {
  "$VENV/bin/python" - <<'PY' 2>/dev/null
import importlib.metadata as md
import torch  # noqa: F401
from snsynth.aim import AIMSynthesizer  # noqa: F401
from snsynth.mst import MSTSynthesizer  # noqa: F401
assert md.version("torch").split("+")[0] == "2.13.0", md.version("torch")
PY
}

if [ -x "$VENV/bin/python" ] && check; then
  echo "peers venv ready at $VENV (nothing to do)"
  exit 0
fi

start=$(date +%s)
build_venv "$VENV" "$SMARTNOISE_SYNTH"

if ! check; then
  echo "setup.sh: the venv at $VENV was built but cannot import snsynth's MST/AIM" >&2
  exit 1
fi
if "$VENV/bin/python" -m pip list 2>/dev/null | grep -qi '^nvidia-'; then
  echo "setup.sh: note: CUDA packages (nvidia-*) were installed with torch; harmless on CPU" >&2
fi
"$VENV/bin/python" -m pip list 2>/dev/null | grep -iE '^(smartnoise-synth|smartnoise-sql|mbi|private-pgm|opacus|torch|numpy|pandas) '
echo "peers venv ready at $VENV ($(( $(date +%s) - start )) s)"
