"""Larger images (issue 24, part 5): 64x64 grey and 32x32 colour images of drawn shapes fit in
bounded memory, and every release has the size planned from public inputs.

The planned sizes (:mod:`dpforge.statistics.image_sizes`) are compared with what the release
functions produce on generated images; one fit per shape runs through the public API in a
fresh process with few steps, and its peak resident memory must stay under the planned bound.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import torch

from dpforge.data.array_encoder import ArrayEncoder
from dpforge.data.arrays import validate_arrays
from dpforge.datasets.shapes import drawn_shapes, shapes_schema
from dpforge.errors import SchemaError
from dpforge.nets.init import initialise
from dpforge.statistics import image_sizes, perceptual
from dpforge.statistics.features import FeatureAnchorConfig, measure_embedding
from dpforge.statistics.moments import class_moments, principal_subspace
from dpforge.synthesizer import Synthesizer

SHAPES = [(1, 64, 64), (3, 32, 32)]
PERCEPTUAL = FeatureAnchorConfig(statistic="perceptual", steps=4, batch_size=50)


@pytest.mark.parametrize("shape", SHAPES)
def test_validated_uint8_images_are_not_copied_and_encode_to_float32(shape):
    data = drawn_shapes(20, shape, np.random.default_rng(0))
    checked = validate_arrays(data, shapes_schema(shape))
    assert checked.values.dtype == np.uint8  # no float64 copy of the records
    x, labels = ArrayEncoder(shapes_schema(shape)).transform(checked)
    expected = data.values.astype(np.float64) / 127.5 - 1.0
    assert x.dtype == np.float32 and x.shape == (20, *shape)
    np.testing.assert_allclose(x, expected, atol=1e-6)
    assert data.values.dtype == np.uint8  # the caller's array untouched
    assert sorted(set(labels)) == [0, 1, 2]


@pytest.mark.parametrize("shape", SHAPES)
def test_each_release_has_its_planned_size(shape):
    k, n, d = 3, 64, int(np.prod(shape))
    data = drawn_shapes(n, shape, np.random.default_rng(1))
    x, y = ArrayEncoder(shapes_schema(shape)).transform(data)
    subspace_plan, moments_plan, features_plan = image_sizes.planned_releases(
        shape, k, PERCEPTUAL, n
    )
    rng = np.random.default_rng(2)
    subspace = principal_subspace(x, k, PERCEPTUAL.rank, 0.0, 1.0, rng)  # no noise: full rank
    moments = class_moments(x, y, k, subspace, 0.0, 1.0, rng)
    assert subspace_plan.values == d * (d + 1) // 2 + d + 1
    assert subspace.basis.shape == (d, PERCEPTUAL.rank)
    released = moments.sums.size + moments.counts.size
    released += k * PERCEPTUAL.rank * (PERCEPTUAL.rank + 1) // 2  # the upper triangles
    assert moments_plan.values == released
    extractor = perceptual.Extractor(shape[0], 4)  # untrained: the sizes are the same
    initialise(extractor, torch.Generator().manual_seed(0))
    features = perceptual.PerceptualFeatures(extractor, shape)
    embedding = measure_embedding(features, x, y, k, 1.0, 1.0, rng)
    assert features_plan.values == embedding.noisy_sums.size + embedding.noisy_counts.size
    assert features.dim == perceptual.FEATURE_DIM  # the same for every image size


def test_images_too_large_for_the_subspace_are_refused_before_any_record_is_read():
    shape = (3, 96, 96)
    synth = Synthesizer(shapes_schema(shape), epsilon=1.0, seed=0, progress=False)
    with pytest.raises(SchemaError, match="resize the images"):
        synth.check_options()  # what the command line runs before reading the data
    with pytest.raises(SchemaError, match="resize the images"):
        synth.fit(drawn_shapes(10, shape, np.random.default_rng(0)))
    assert getattr(synth, "ledger_", None) is None
    embedding = FeatureAnchorConfig(statistic="embedding")
    assert len(image_sizes.planned_releases(shape, 3, embedding)) == 1  # no d x d statistic
    Synthesizer(shapes_schema(shape), epsilon=1.0, anchor=embedding).check_options()


FIT = """
import json, sys, numpy as np, torch
from dpforge import Synthesizer
from dpforge.data.export import write_images
from dpforge.datasets.shapes import drawn_shapes, shapes_schema
from dpforge.statistics import perceptual
from dpforge.statistics.features import FeatureAnchorConfig
torch.set_num_threads(1)
perceptual.EXTRACTOR_STEPS = 20  # the test's speed: the extractor's size is what matters
shape, out = tuple(json.loads(sys.argv[1])), sys.argv[2]
data = drawn_shapes(400, shape, np.random.default_rng(0))
public = drawn_shapes(200, shape, np.random.default_rng(1))
anchor = FeatureAnchorConfig(statistic="perceptual", steps=4, batch_size=50)
synth = Synthesizer(shapes_schema(shape), epsilon=10.0, seed=0, progress=False,
                    anchor=anchor, public_data=public).fit(data)
sample = synth.sample(30, seed=0)
write_images(sample, out, npz=False)
# VmHWM, not ru_maxrss: Linux carries the spawning process's peak into the child's ru_maxrss
# across exec, so under xdist ru_maxrss reported the worker's peak from earlier tests.
hwm = next(line for line in open("/proc/self/status") if line.startswith("VmHWM:"))
print(json.dumps({"peak": int(hwm.split()[1]) * 1024,
                  "ledger": [e.name for e in synth.ledger_.entries],
                  "epsilon": synth.privacy_spent().epsilon,
                  "sample": list(sample.values.shape)}))
"""


@pytest.mark.slow
@pytest.mark.parametrize("shape", SHAPES)
def test_a_fit_stays_under_the_planned_memory_and_writes_its_images(shape, tmp_path):
    argv = [sys.executable, "-c", textwrap.dedent(FIT), json.dumps(shape), str(tmp_path / "s")]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    bound = image_sizes.memory_bound(shape, 3, PERCEPTUAL, 400, 200)
    assert result["peak"] <= bound, (result["peak"] / 2**20, bound / 2**20)
    planned = [p.name for p in image_sizes.planned_releases(shape, 3, PERCEPTUAL)]
    anchors = [name for name in result["ledger"] if name.startswith("anchor:")]
    assert len(anchors) == len(planned) == 3
    assert any("perceptual" in name for name in anchors)
    assert result["epsilon"] <= 10.0 + 1e-6
    assert result["sample"] == [30, *shape]
    grid = tmp_path / "s" / "grid.png"
    from PIL import Image

    with Image.open(grid) as image:
        assert image.mode == ("L" if shape[0] == 1 else "RGB")
    assert len(list((tmp_path / "s" / "images").rglob("*.png"))) == 30


def test_in_place_noise_and_top_eigenpairs_match_the_plain_computation():
    from dpforge.statistics import moments

    base = np.random.default_rng(0).normal(size=(30, 30))
    base = base + base.T
    in_place = base.copy()
    moments._noise_symmetric(in_place, 0.7, np.random.default_rng(5))
    np.testing.assert_array_equal(in_place, in_place.T)  # the upper triangle, mirrored
    noise = (in_place - base)[np.triu_indices(30)]  # 465 draws of N(0, 0.7^2)
    assert abs(noise.mean()) < 4 * 0.7 / np.sqrt(noise.size)
    assert abs(noise.std() / 0.7 - 1) < 0.1
    plain = in_place.copy()
    values, vectors = moments._top_eigenpairs(in_place.copy(), 4)
    full_values, full_vectors = np.linalg.eigh(plain)
    np.testing.assert_allclose(values, full_values[::-1][:4])
    overlap = np.abs(vectors.T @ full_vectors[:, ::-1][:, :4])  # same directions, up to sign
    np.testing.assert_allclose(overlap, np.eye(4), atol=1e-8)
