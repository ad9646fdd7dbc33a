"""The statistics' stable public API: the names of ``edufair_metrics.analysis``."""

import subprocess
import sys

import pytest

import edufair_metrics.analysis as analysis
from edufair_metrics.analysis import (
    compare_frames,
    contrast_grid,
    dimension_summary,
    headline,
    pair_differences,
    paired_contrast,
)
from edufair_metrics.analysis import cells, compare, contrast, grid
from tests.analysis.synthetic_scores import rate_frame
from tests.helpers.paths import REPO


def test_the_public_names_are_the_modules_own():
    assert contrast_grid is grid.contrast_grid and dimension_summary is grid.dimension_summary
    assert headline is grid.headline and paired_contrast is contrast.paired_contrast
    assert compare_frames is compare.compare_frames and pair_differences is cells.pair_differences


@pytest.mark.parametrize("name", analysis.__all__)
def test_every_exported_name_resolves(name):
    assert getattr(analysis, name) is not None
    assert name in dir(analysis)


def test_unknown_names_and_submodules():
    with pytest.raises(AttributeError):
        analysis.no_such_name  # noqa: B018
    from edufair_metrics.analysis import power, ses  # submodules still import as such (here: on purpose)

    assert power.__name__.endswith(".power") and ses.__name__.endswith(".ses")


def test_the_public_api_works_end_to_end():
    df = rate_frame({"t": {"female": 0.2}}, n=40, seed=0, metrics=("actionability",))
    grid = contrast_grid(df, n_boot=50)
    head = headline(dimension_summary(grid)).set_index("tutor")
    assert head.loc["t", "units"] > 0
    c = paired_contrast([0.1, 0.5, 0.9] * 6, [0.0, 0.5, 0.4] * 6, n_boot=50)
    assert c.sufficient and c.r > 0


@pytest.mark.parametrize("first", ["edufair_metrics.analysis", "edufair_metrics.analysis.compare",
                                   "edufair_metrics.analysis.grid", "edufair_metrics.analysis.ses",
                                   "edufair_metrics.analysis.params", "edufair_metrics.analysis.agreement"])
def test_importing_in_any_order_works_and_stays_light(first):
    """No import cycle whichever module comes first; the package itself loads none of its modules,
    nor pandas or scipy (CLI start time)."""
    code = (f"import sys, importlib; importlib.import_module({first!r}); "
            "import edufair_metrics.analysis as a; "
            "heavy = [m for m in ('pandas', 'scipy') if m in sys.modules]; "
            "from edufair_metrics.analysis import compare_frames, contrast_grid, dimension_summary, headline, "
            "paired_contrast; print(','.join(heavy))")
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""
