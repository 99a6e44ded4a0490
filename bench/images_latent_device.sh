#!/bin/bash
# One device call: the images_latent.py trial at full scale (60,000 private images), several
# processes sharing one GPU, each writing its rows as they come; the outputs come back as one
# tarball. From the repository root (PYTHONPATH extras, e.g. wheels unpacked to /tmp/site, in
# EXTRA_SITE; SET=second for the second call's runs; LIMIT seconds per process):
#   OUT=/some/dir BUDGET=200 bash bench/images_latent_device.sh
# bench/results/images_latent/NOTES.md says which call ran which runs and seeds.
set -u
cd "$(dirname "$0")"
export PYTHONPATH=../src:${EXTRA_SITE:-} OMP_NUM_THREADS=2
run() {  # name, then images_latent.py arguments
  local name=$1; shift
  timeout "${LIMIT:-100000}" python images_latent.py --data-dir ../data --device cuda --threads 2 --budget-s "${BUDGET:-330}" \
    --grids "$OUT/grids" --out "$OUT/$name.json" "$@" > "$OUT/$name.log" 2>&1 &
}
if [ "${SET:-first}" = first ]; then
run m10_b512 --datasets mnist --epsilons 10 --modes dp --batch 512 --steps 2000 --pooled-covariance
run m10_b2048 --datasets mnist --seeds 2, --epsilons 10 --modes dp --batch 2048 --chunk 1024 --steps 1000 --pooled-covariance
run m10_b2048_classcov --datasets mnist --seeds 0, --epsilons 10 --modes dp --batch 2048 --chunk 1024 --steps 1000
run m10_b2048_l16 --datasets mnist --seeds 0,1 --epsilons 10 --modes dp --batch 2048 --chunk 1024 --steps 1000 --latent 16 --pooled-covariance
run m_np --datasets mnist --seeds 0, --modes np,real --batch 512 --steps 2000 --pooled-covariance
run m1_b4096 --datasets mnist --seeds 0,1 --epsilons 1 --modes dp --batch 4096 --chunk 1024 --steps 500 --pooled-covariance
run f10_b2048 --datasets fashion-mnist --seeds 2, --epsilons 10 --modes dp,np,real --batch 2048 --chunk 1024 --steps 1000 --pooled-covariance
run f1_b4096 --datasets fashion-mnist --seeds 2, --epsilons 1 --modes dp --batch 4096 --chunk 1024 --steps 500 --pooled-covariance
else  # the second call: per-class covariances on the other seeds
run m10_classcov_s1 --datasets mnist --seeds 1, --epsilons 10 --modes dp --batch 2048 --chunk 1024 --steps 1000
run m10_classcov_s2 --datasets mnist --seeds 2, --epsilons 10 --modes dp --batch 2048 --chunk 1024 --steps 1000
run f10_classcov_s0 --datasets fashion-mnist --seeds 0, --epsilons 10 --modes dp --batch 2048 --chunk 1024 --steps 1000
fi
wait
nvidia-smi --query-gpu=name,memory.used --format=csv > "$OUT/gpu.txt" 2>&1
cd "$OUT" && tar czf /tmp/latent_out.tgz --exclude gpu.txt . && rm -rf ./* && mv /tmp/latent_out.tgz .
