#!/usr/bin/env bash
# End-to-end reports (issue 12): train a small model with the CLI on Adult, Thyroid, MNIST
# (10,000 training images) and ItalyPowerDemand, then `dpforge evaluate` and `dpforge report`
# on each, as a user would. Data: written by bench/report_data.py into $DATA (outside the
# repository); models, metrics and reports go to $OUT. Timings and console output: $OUT/*.log.
#
#   bash bench/bench_reports.sh /tmp/dpforge-reports/data /tmp/dpforge-reports/out [sets]
set -euo pipefail
DATA=${1:?data folder}; OUT=${2:?output folder}; SETS=${3:-"adult thyroid italy mnist"}
mkdir -p "$OUT"
export OMP_NUM_THREADS=1
run() {  # name, then the command; wall time and output into $OUT/name.log
  local name=$1; shift
  echo "\$ $*" >> "$OUT/$name.log"
  local start=$(date +%s)
  nice -n 10 "$@" >> "$OUT/$name.log" 2>&1
  echo "[$name: $(( $(date +%s) - start )) s]" >> "$OUT/$name.log"
}
for set in $SETS; do
  d=$DATA/$set; o=$OUT/$set; mkdir -p "$o"
  case $set in
    adult)   fit=(dpforge fit "$d/train.csv" --schema "$d/schema.json" --epsilon 3 --delta 1e-5 --seed 0) ;;
    thyroid) fit=(dpforge fit "$d/train.csv" --schema "$d/schema.json" --epsilon 3 --delta 1e-5 --seed 0) ;;
    mnist)   fit=(dpforge fit "$d/train.npz" --schema "$d/schema.json" --epsilon 10 --delta 1e-5 --seed 0) ;;
    italy)   fit=(dpforge fit "$d/train.npz" --schema "$d/schema.json" --epsilon 3 --delta 1e-4 --seed 0) ;;
  esac
  rows=(); [ "$set" = mnist ] && rows=(--rows 5000)
  cls=(); [ "$set" = adult ] && cls=(--classifiers lr,rf,mlp,gb)
  run "$set" "${fit[@]}" --no-budget-file --quiet --out "$o/model" --overwrite
  case $set in mnist|italy) ext=npz ;; *) ext=csv ;; esac
  real=(--real-train "$d/train.$ext" --real-test "$d/test.$ext")
  run "$set" dpforge evaluate "$o/model" "${real[@]}" -o "$o/metrics.json" "${rows[@]}" "${cls[@]}" --overwrite
  run "$set" dpforge report "$o/model" "${real[@]}" -o "$o/report.html" "${rows[@]}" --overwrite
  run "$set" dpforge report "$o/model" --release -o "$o/release.html" --overwrite
done
