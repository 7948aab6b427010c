"""Results print compactly: repr lists scalars and elides arrays and warm starts,
summary() is a few lines, a learning curve becomes a DataFrame, and an error message
about a result does not embed it."""

from typing import Any, NamedTuple

import numpy as np
import pandas as pd
import pytest

from attnlib import se, tasks
from attnlib.se import display
from attnlib.targets import Wishart

TASK, TARGET = tasks.Linear(T=1, noise=0.1), Wishart(0.5)


@pytest.fixture(scope="module")
def solved():
    return se.solve(TASK, TARGET, 0.3, 0.01, return_warm=True)


@pytest.fixture(scope="module")
def result(solved):
    return solved[0]


@pytest.fixture(scope="module")
def curve():
    return se.learning_curve(TASK, TARGET, [0.1, 0.2, 0.3], 0.01)


def test_result_repr_lists_scalars_and_elides_the_rest(solved):
    result, warm = solved
    text = repr(result)
    assert len(text) < 1000 and "\n" not in text
    assert text.startswith("SEResult(alpha=0.3, lam=0.01, penalty='nuclear', m=")
    assert f"mse={result.mse:.6g}" in text and "converged=True" in text
    assert "warm" not in text and "alternatives=()" in text  # numbers only
    warm = repr(warm)
    assert "prox=<array" in warm and len(warm) < 300


def test_summary_has_every_scalar_field(result):
    text = result.summary()
    assert len(text.splitlines()) <= 10
    for name in result._fields:
        if name not in ("alternatives", "penalty", "replicon"):
            assert f"{name} " in text, name


def test_summary_shows_the_replicon_only_where_it_fails(result):
    """A stable point's summary is unchanged by the field; an unstable one shows it."""
    assert 0.0 <= result.replicon < 1.0 and "replicon" not in result.summary()
    assert "replicon" in repr(result)
    assert "other: replicon 1.5" in result._replace(replicon=1.5).summary()


def test_repr_is_generic_in_the_fields():
    """A field added to a result type is listed (scalar) or elided (array) unchanged."""

    class Extended(NamedTuple):
        alpha: float
        lam: float
        penalty: str
        new_scalar: float
        new_array: Any

    r = Extended(0.5, 0.1, "nuclear", 1.25, np.zeros((8192, 6)))
    assert display.result_repr(r) == (
        "Extended(alpha=0.5, lam=0.1, penalty='nuclear', new_scalar=1.25, "
        "new_array=<array (8192, 6) float64>)"
    )
    assert "other: new_scalar 1.25" in display.result_summary(r)


def test_learning_curve_repr_summary_and_dataframe(curve):
    text = repr(curve)
    assert text.startswith("LearningCurve(3 points, alpha 0.1..0.3, converged 3")
    assert len(text) < 600
    assert len(curve.summary().splitlines()) == 5  # title, header, 3 rows
    frame = curve.to_dataframe()
    assert isinstance(frame, pd.DataFrame) and len(frame) == 3
    np.testing.assert_array_equal(frame["mse"], curve.mse)
    assert {"alpha", "test_error", "converged", "penalty"} <= set(frame.columns)
    assert "warm" not in frame.columns


def test_error_message_does_not_embed_a_bad_argument():
    with pytest.raises(ValueError, match="init must be") as info:
        se.solve(TASK, TARGET, 0.3, 0.01, init=tuple(np.linspace(0.1, 1.0, 500)))
    assert len(str(info.value)) < 200
