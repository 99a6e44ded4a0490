#!/usr/bin/env bash
# Side by side (issue 22, speed): the default of BASE (a checkout of the commit this work
# started from) against this tree's, per table and epsilon, 3 seeds, one thread, written to
# results/small_table_speed.jsonl as they come (tags base / default). Run from bench/:
#   BASE=/tmp/speed-base nohup nice -n 10 bash small_table_speed.sh &
set -u
BASE=${BASE:?a checkout of the base commit}
HERE=$(cd .. && pwd)
OUT=${OUT:-results/small_table_speed.jsonl}
export OMP_NUM_THREADS=1 DPFORGE_DATA_DIR=${DPFORGE_DATA_DIR:-/work/shared/datasets}
for job in psid:1,3 thyroid:3.7 nmes:1,3 fair:1,3 wage:1,3 healthins:1,3; do
    table=${job%%:*}
    for eps in $(echo "${job#*:}" | tr , ' '); do
        PYTHONPATH=$BASE/src python quality_trials.py "$table" --epsilons "$eps" --seeds 3 \
            --tag base --out "$OUT"
        PYTHONPATH=$HERE/src python quality_trials.py "$table" --epsilons "$eps" --seeds 3 \
            --tag default --out "$OUT"
    done
done
