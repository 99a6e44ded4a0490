#!/usr/bin/env bash
# Issue 11 part 3: the DP-SGD GAN recipe of Bie et al. (TMLR 2023) at CPU scale on MNIST,
# eps 10: many discriminator steps per generator step and large expected batches, against
# the default step pattern, each GAN alone (--anchor none), then as refinement of the moment
# anchor (share 0.5). Each run writes bench/results/recipe/<name>.{json,md}; the summary is
# bench/results/recipe.md. Run from the repository root:  bash bench/recipe_runs.sh DATA_DIR
set -euo pipefail
data=${1:-../shared/datasets}
common=(--dataset mnist --data-dir "$data" --epsilon 10 --method dpcgan --generator-hidden 256,512
        --generator mlp --discriminator mlp --discriminator-hidden 256)
run() { name=$1; shift; [ -f "bench/results/recipe/$name.json" ] ||
        python bench/bench_images.py "${common[@]}" "$@" --out "bench/results/recipe/$name.json" > /dev/null; }
run gan_b64_nd1 --anchor none --batch-size 64 --epochs 2
run gan_b600_nd5 --anchor none --batch-size 600 --epochs 20 --option d_steps=5
run gan_b600_adaptive --anchor none --batch-size 600 --epochs 20 --option adaptive_d_steps=true
run moments_refined_b600_nd5 --anchor-share 0.5 --generator gaussian --batch-size 600 --epochs 20 --option d_steps=5
