"""raylab.plots.stacked_bars: the helper behind lab 07's resource-planning figure."""
import pytest

from raylab import plots


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    import matplotlib.pyplot as plt

    plt.close("all")


def test_stacked_bars_stack_segments_in_order_and_draw_the_limit():
    ax = plots.stacked_bars(
        {"drivers": {"plan a": 2, "plan b": 0}, "workers": {"plan a": 2, "plan b": 1, "plan c": 3}},
        title="CPUs per plan", xlabel="CPUs", ylabel="plan", limit=2, limit_label="cluster CPUs")
    assert (ax.get_title(), ax.get_xlabel(), ax.get_ylabel()) == ("CPUs per plan", "CPUs", "plan")
    assert [t.get_text() for t in ax.get_yticklabels()] == ["plan a", "plan b", "plan c"]
    assert ax.yaxis_inverted(), "the first bar of the dictionary is drawn on top"
    drivers, workers = ax.containers
    assert [p.get_width() for p in drivers] == [2, 0, 0]  # plan c has no driver entry: 0
    assert [p.get_x() for p in workers] == [2, 0, 0]  # workers start where drivers end
    assert [p.get_x() + p.get_width() for p in workers] == [4, 1, 3]
    (line,) = ax.lines
    assert list(line.get_xdata()) == [2, 2] and line.get_linestyle() == "--"
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert set(legend) == {"drivers", "workers", "cluster CPUs"}


def test_stacked_bars_without_limit_and_on_a_given_axes():
    import matplotlib.pyplot as plt

    _, given = plt.subplots()
    ax = plots.stacked_bars({"only": {1: 0.5, 2: 1.5}}, title="t", xlabel="x", ylabel="y", ax=given)
    assert ax is given and not ax.lines
    assert [t.get_text() for t in ax.get_yticklabels()] == ["1", "2"]
    assert [p.get_width() for p in ax.containers[0]] == [0.5, 1.5]

