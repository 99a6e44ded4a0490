#!/usr/bin/env bash
# SDV's own virtual environment: HMA (hierarchical modelling of related tables, NOT private),
# the structure ceiling of bench/related.py. SDV is never imported in dpforge's environment:
# bench/peers/sdv_hma.py runs in this venv and talks to the benchmark through CSV files only.
#
#   bash bench/peers/setup_sdv.sh        # venv at ${DPFORGE_SDV_VENV:-~/.cache/dpforge-sdv-venv}
#
# torch is held at 2.13.0 by a constraints file, as in bench/peers/setup.sh: pip's find-links
# (/opt/wheels) holds torch-2.13.0+cpu, which it takes over PyPI's CUDA build.
# Idempotent: does nothing when the venv already imports sdv's HMASynthesizer.
set -euo pipefail

VENV="${DPFORGE_SDV_VENV:-$HOME/.cache/dpforge-sdv-venv}"
SDV="${SDV:-sdv}"
# shellcheck source=venv.sh
source "$(dirname "$0")/venv.sh"  # build_venv and TORCH_PIN

check() {
  "$VENV/bin/python" -c "from sdv.multi_table import HMASynthesizer" 2>/dev/null
}

if [ -x "$VENV/bin/python" ] && check; then
  echo "sdv venv ready at $VENV (nothing to do)"
  exit 0
fi

start=$(date +%s)
build_venv "$VENV" "$SDV"

if ! check; then
  echo "setup_sdv.sh: the venv at $VENV was built but cannot import sdv's HMASynthesizer" >&2
  exit 1
fi
"$VENV/bin/python" -m pip list 2>/dev/null | grep -iE '^(sdv|rdt|copulas|torch|numpy|pandas|scipy) '
echo "sdv venv ready at $VENV ($(( $(date +%s) - start )) s)"
