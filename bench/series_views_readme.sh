#!/bin/bash
# README series example, timed: this branch (new default) then main (old default), one thread
# from a folder holding curves.csv and curves.json (the README example's 400 curves:
# bench/results/italy_series_moved_notes.md says how they were made)
cd "${1:-.}"
for tree in "series2:${SERIES2_SRC:?the src of this branch}" "main:${MAIN_SRC:?the src of main}"; do
  name=${tree%%:*}; src=${tree#*:}
  rm -rf model-$name curves.csv.dpforge-budget.json*
  echo "== $name fit" >> times.log
  OMP_NUM_THREADS=1 PYTHONPATH=$src /usr/bin/time -f "%U user %S sys %e wall %M KB" nice -n 10 python -m dpforge.cli fit curves.csv --schema curves.json --epsilon 3 --out model-$name/ >> times.log 2>&1
  echo "== $name sample" >> times.log
  OMP_NUM_THREADS=1 PYTHONPATH=$src /usr/bin/time -f "%U user %S sys %e wall %M KB" nice -n 10 python -m dpforge.cli sample model-$name/ -n 500 -o syn-$name.csv >> times.log 2>&1
done
echo done >> times.log
