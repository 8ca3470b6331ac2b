"""The statistics' functions computed from scipy.special agree with scipy.stats' own."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats as sps

from bgbench.coordinator.records.stats import t_quantile, welch_p_value

# rates and shares as experiments give them: thousandths, up to a billion
samples = st.lists(st.integers(-(10**12), 10**12).map(lambda v: v / 1000), min_size=2, max_size=40)


@pytest.mark.filterwarnings("ignore:Precision loss:RuntimeWarning")  # scipy's, near-equal data
@settings(max_examples=300, deadline=None)
@given(samples, samples)
def test_welch_p_value_is_scipy_s(a, b):
    x, y = np.array(a), np.array(b)
    expected = float(sps.ttest_ind(x, y, equal_var=False).pvalue)
    got = welch_p_value(x, y)
    if np.isnan(expected):  # scipy: both constant; ours decides from the means
        assert got == (0.0 if x.mean() != y.mean() else 1.0)
    else:
        assert got == np.float64(expected) or abs(got - expected) <= 1e-9 + 1e-7 * expected


@given(st.floats(min_value=0.5, max_value=0.9999), st.integers(min_value=1, max_value=500))
def test_t_quantile_is_scipy_s(p, df):
    assert abs(t_quantile(p, df) - float(sps.t.ppf(p, df))) <= 1e-9 * max(
        1.0, abs(t_quantile(p, df))
    )
