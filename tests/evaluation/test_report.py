"""``dpforge report``: the self-contained HTML page, its release variant, and a real browser.

The model is a small DP-CGAN fitted on 400 breast-cancer rows (169 held out). The browser test
opens the page in headless Chromium, checks that no error was raised and every image loaded,
and keeps a screenshot (its path is printed).
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys

import dp_accounting
import pytest

import dpforge
from dpforge.cli import main
from dpforge.evaluation.report import (
    RELEASE_NOTICE,
    describe_event,
    model_description,
    verdict,
)
from dpforge.methods.dpcgan import DPCGANConfig
from dpforge.statistics.anchor import AnchorConfig

FAST = DPCGANConfig(batch_size=64, latent_dim=8, generator_hidden=(16,), discriminator_hidden=(16,))
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
NO_CHROMIUM = (
    "Chromium not found: install it (Debian/Ubuntu: apt-get install -y chromium) to render the "
    "report in a browser"
)


def run(args, capsys) -> tuple[int, str]:
    """Run the console script's entry point with ``args``: exit code and everything printed."""
    code = 0
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(sys, "argv", ["dpforge", *map(str, args)])
        try:
            main()
        except SystemExit as exc:
            code = exc.code or 0
    captured = capsys.readouterr()
    return code, captured.err + captured.out


@pytest.fixture(scope="module")
def fitted(cancer, tmp_path_factory):
    frame, schema = cancer
    folder = tmp_path_factory.mktemp("report")
    shuffled = frame.sample(frac=1.0, random_state=0).reset_index(drop=True)
    shuffled.iloc[:400].to_csv(folder / "train.csv", index=False)
    shuffled.iloc[400:].to_csv(folder / "test.csv", index=False)
    dpforge.Synthesizer(
        schema, epsilon=3.0, delta=1e-5, method_options=FAST, seed=0, progress=False,
        epochs=17, anchor=None,
    ).fit(shuffled.iloc[:400]).save(folder / "model")  # fmt: skip
    return folder


@pytest.fixture(scope="module")
def full_report(fitted, tmp_path_factory):
    out = tmp_path_factory.mktemp("out") / "report.html"
    code = 0
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(
            sys, "argv",
            ["dpforge", "report", str(fitted / "model"), "--real-train", str(fitted / "train.csv"),
             "--real-test", str(fitted / "test.csv"), "-o", str(out), "--classifiers", "lr,rf",
             "--pair", "mean_radius,mean_texture"],
        )  # fmt: skip
        try:
            main()
        except SystemExit as exc:
            code = exc.code or 0
    assert code == 0
    return out


def images(text: str) -> list[str]:
    return re.findall(r'<img src="([^"]*)"', text)


def test_full_report_is_one_self_contained_page(full_report):
    text = full_report.read_text(encoding="utf-8")
    assert text.startswith("<!DOCTYPE html>")
    warning = text.index("NOT DIFFERENTIALLY PRIVATE")
    assert warning < text.index("Headline") < text.index("Privacy ledger") < text.index("Utility")
    assert text.index("Fidelity") < text.index("Membership-inference attacks")
    sources = images(text)
    assert len(sources) == 4  # association, histograms, 2-D density, ROC
    assert all(s.startswith("data:image/png;base64,") for s in sources)
    assert not re.search(r"(src|href)=\"(?!data:)", text)  # nothing loaded from elsewhere
    assert "http://" not in text and "https://" not in text
    for words in ("ε (PLD, reported)", "ε (RDP)", "Verdict", "declared public", "TPR at 1% FPR"):
        assert words in text, words
    # q = 64 / N, N = 400 released under DP (close to 0.16)
    ledger_words = (
        r"\d+ times: each record used with probability 0\.1[5-7]\d* \(Poisson sampling\), then"
    )
    assert re.search(ledger_words + " Gaussian noise with noise multiplier", text)


def test_cli_report_says_where_it_went_and_refuses_the_model_folder(fitted, tmp_path, capsys):
    base = ["--real-train", fitted / "train.csv", "--real-test", fitted / "test.csv"]
    inside = fitted / "model" / "report.html"
    code, text = run(["report", fitted / "model", *base, "-o", inside], capsys)
    assert code == 2 and "inside the model folder" in text and not inside.exists()
    code, text = run(["report", fitted / "model", "-o", tmp_path / "r.html"], capsys)
    assert code == 2 and "--release" in text
    out = tmp_path / "r.html"
    code, text = run(
        ["report", fitted / "model", *base, "-o", out, "--classifiers", "lr", "--no-attacks",
         "--pair", "mean_radius,diagnosis"], capsys,
    )  # fmt: skip
    assert code == 2 and "numeric" in text and not out.exists()


def test_release_report_holds_only_public_content(fitted, tmp_path, capsys):
    out = tmp_path / "release.html"
    code, text = run(["report", fitted / "model", "--release", "-o", out, "--rows", "300"], capsys)
    assert code == 0 and str(out) in " ".join(text.split()) and "public content only" in text
    page = out.read_text(encoding="utf-8")
    assert RELEASE_NOTICE in page and "NOT DIFFERENTIALLY PRIVATE" not in page
    for real_only in ("AuROC real", "Membership-inference", "real training rows", "Utility"):
        assert real_only not in page, real_only
    assert "Privacy ledger" in page and "&quot;columns&quot;" in page  # ledger, schema JSON
    assert len(images(page)) == 3 and all(s.startswith("data:image/png") for s in images(page))
    code, text = run(
        ["report", fitted / "model", "--release", "-o", tmp_path / "x.html", "--real-train",
         fitted / "train.csv"], capsys,
    )  # fmt: skip
    assert code == 2 and "--release reads no real data" in text


def test_events_in_plain_words_and_verdicts():
    step = dp_accounting.PoissonSampledDpEvent(0.01, dp_accounting.GaussianDpEvent(1.1))
    assert describe_event(dp_accounting.SelfComposedDpEvent(step, 2000)) == (
        "2,000 times: each record used with probability 0.01 (Poisson sampling), then Gaussian "
        "noise with noise multiplier 1.1"
    )
    assert "NOT private" in describe_event(dp_accounting.NonPrivateDpEvent())
    assert verdict(float("inf"), None, None)[0].startswith("No privacy guarantee")
    words = " ".join(verdict(0.5, 0.97, 0.8))
    assert "Strong" in words and "about as well" in words and "Do not publish" in words
    assert "guessing" in " ".join(verdict(3.0, 0.5, 0.5)) and "clearly below" in " ".join(
        verdict(3.0, 0.5, 0.5)
    )
    assert "floor" not in " ".join(verdict(3.0, 0.5, 0.5, 0.52)).split("Thresholds")[0]
    drifted = " ".join(verdict(3.0, 0.9, 0.52, 0.76))  # Thyroid: the files differ
    assert "difference between the training and held-out files" in drifted
    assert "guessing" in drifted


# -- a real browser --------------------------------------------------------------------------
CHECK = """<script>
window.__errors = [];
window.addEventListener('error', e => window.__errors.push(
  (e.message || ('failed to load ' + (e.target && (e.target.src || e.target.href))))), true);
const original = console.error;
console.error = (...a) => { window.__errors.push(a.join(' ')); original(...a); };
window.addEventListener('load', () => {
  const imgs = Array.from(document.images);
  const broken = imgs.filter(i => !(i.complete && i.naturalWidth > 0)).map(i => i.alt);
  const out = document.createElement('pre');
  out.id = 'dpforge-check';
  out.textContent = JSON.stringify({images: imgs.length, broken: broken, errors: window.__errors});
  document.body.appendChild(out);
});
</script>"""


def chromium(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
         "--virtual-time-budget=10000", *args],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip


@pytest.mark.skipif(CHROMIUM is None, reason=NO_CHROMIUM)
def test_report_renders_in_headless_chromium(full_report, tmp_path):
    text = full_report.read_text(encoding="utf-8")
    probe = tmp_path / "probe.html"  # the page with a checking script before its content
    probe.write_text(text.replace("<style>", CHECK + "<style>", 1), encoding="utf-8")
    dom = chromium("--dump-dom", probe.as_uri())
    found = re.search(r'<pre id="dpforge-check">(.*?)</pre>', dom.stdout, re.S)
    assert found, dom.stderr[-2000:]
    check = json.loads(found.group(1).replace("&quot;", '"'))
    assert check == {"images": 4, "broken": [], "errors": []}
    shot = tmp_path / "report.png"
    chromium(f"--screenshot={shot}", "--window-size=1200,5200", full_report.as_uri())
    assert shot.exists() and shot.stat().st_size > 50_000
    print(f"screenshot of the report: {shot}")


def test_plots_handle_integer_columns_of_small_range():
    """An integer column of small range has one public cell per whole number, no edges."""
    import numpy as np
    import pandas as pd

    from dpforge.evaluation.plots import density_pair, histograms, plot_edges
    from dpforge.schema.table import Column, Schema

    years = Column("years", "integer", lower=1, upper=16)
    hours = Column("hours", "integer", lower=1, upper=99)
    schema = Schema((years, hours, Column("x", "continuous", lower=0.0, upper=1.0)))
    np.testing.assert_allclose(plot_edges(schema.column("years"), 24), np.arange(0.5, 17.0))
    rng = np.random.default_rng(0)
    frame = pd.DataFrame(
        {"years": rng.integers(1, 17, 50), "hours": rng.integers(1, 100, 50), "x": rng.random(50)}
    )
    assert histograms(schema, [("a", frame), ("b", frame)]).startswith("data:image/png")
    assert density_pair(schema, ("years", "hours"), [("a", frame)]).startswith("data:image/png")


@pytest.mark.parametrize(
    ("anchor", "epochs", "title"),
    [
        (
            AnchorConfig(steps=20, batch_size=64),
            None,
            "marginal anchoring (no discriminator steps)",
        ),
        (
            AnchorConfig(share=0.5, steps=20, batch_size=64),
            25,
            "marginal anchoring + dpcgan refinement (",
        ),
        (None, 25, "dpcgan ("),
    ],
)
def test_the_title_names_what_ran(cancer, anchor, epochs, title, tmp_path, capsys):
    """An anchored-only model ran no GAN step: its report must not call it a dpcgan model."""
    frame, schema = cancer
    synth = dpforge.Synthesizer(
        schema, epsilon=3.0, delta=1e-5, seed=0, progress=False, epochs=epochs, anchor=anchor,
        method_options=None if epochs is None else FAST,  # none: no discriminator trains
    ).fit(frame.iloc[:300])  # fmt: skip
    assert model_description(synth).startswith(title)
    synth.save(tmp_path / "model")
    code, _ = run(["report", tmp_path / "model", "--release", "-o", tmp_path / "r.html"], capsys)
    assert code == 0
    text = (tmp_path / "r.html").read_text(encoding="utf-8")
    heading = re.search(r"<h1>(.*?)</h1>", text).group(1)
    assert heading.startswith("dpforge release report: " + title), heading
    if epochs is None:  # anchored only: no discriminator step was taken, none is named
        assert dpforge.load(tmp_path / "model").plan_.steps == 0
        assert "dpcgan" not in heading


def test_the_title_of_an_image_model_names_moment_anchoring():
    from dpforge.datasets.images import load_digits_images

    train, _, schema = load_digits_images()
    synth = dpforge.Synthesizer(schema, epsilon=3.0, delta=1e-4, seed=0, progress=False)
    description = model_description(synth.fit(train))
    assert description == "moment anchoring (class-conditional Gaussians) (no discriminator steps)"


def test_series_bands_are_drawn_in_the_colour_of_their_source():
    """Real series' bands in the real colour, synthetic ones in the synthetic colour."""
    import base64
    import io

    import numpy as np
    from PIL import Image

    from dpforge.evaluation import plots

    series = np.random.default_rng(0).normal(size=(40, 1, 24))
    labels = np.array(["a", "b"] * 20)

    def colours(uri: str) -> set[tuple[int, int, int]]:
        png = base64.b64decode(uri.split(",", 1)[1])
        return set(Image.open(io.BytesIO(png)).convert("RGB").getdata())

    def rgb(hex_colour: str) -> tuple[int, int, int]:
        return tuple(int(hex_colour[i : i + 2], 16) for i in (1, 3, 5))

    real = colours(plots.series_panels(series, labels, "real", plots.REAL))
    synthetic = colours(plots.series_panels(series, labels, "synthetic"))
    assert rgb(plots.REAL) in real and rgb(plots.SYNTHETIC) not in real
    assert rgb(plots.SYNTHETIC) in synthetic and rgb(plots.REAL) not in synthetic
