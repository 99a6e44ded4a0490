# Sourced by setup.sh and setup_sdv.sh: a fresh venv at $1 with torch held at 2.13.0 (pip takes
# the local CPU wheel, see setup.sh) and the package spec $2 installed under that constraint.
TORCH_PIN="torch==2.13.0"

build_venv() {
  local venv="$1" package="$2" constraints
  python3 -m venv "$venv"
  "$venv/bin/python" -m pip install --quiet --upgrade pip
  constraints="$(mktemp)"
  echo "$TORCH_PIN" > "$constraints"
  "$venv/bin/python" -m pip install --constraint "$constraints" "$TORCH_PIN" "$package"
  rm -f "$constraints"
}
