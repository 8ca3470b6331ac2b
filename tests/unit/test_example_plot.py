"""examples/custom_plot.py runs against a real (model-store) rating and draws its plot."""

import subprocess
import sys
from pathlib import Path

import pytest

from tests.unit.report_ratings import model_rating

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "custom_plot.py"


@pytest.mark.slow
def test_the_custom_plot_example_draws_from_loaded_results(tmp_path):
    model_rating(tmp_path / "results", "R1", "model.peak=1e4")
    out = tmp_path / "plot.png"
    proc = subprocess.run(
        [sys.executable, str(EXAMPLE), str(tmp_path / "results"), str(out)],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert out.read_bytes().startswith(b"\x89PNG") and f"wrote {out}" in proc.stdout
