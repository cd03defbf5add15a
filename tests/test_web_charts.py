"""The /stats charts carry no style of their own; their CSS comes from this origin.

A page's Content-Security-Policy of `style-src 'self'` makes a browser refuse any `<style>`
element or `style` attribute inside the inline SVGs, drawing every shape black, so the
charts must hold neither and the stylesheet the page links must hold what pygal would have
written into them.
"""

import re

import pygal
from fastapi.testclient import TestClient

from app.web.charts import COLORS, SERIES, _chart, stylesheet

PASTE = "Traceback (most recent call last):\nValueError: no data at /data/x.bin\n"


def _style_of(chart: pygal.graph.graph.Graph) -> str:
    """The CSS pygal itself writes into the chart's SVG."""
    tree = chart.render_tree()
    styles = [element.text for element in tree.iter() if str(element.tag).endswith("style")]
    assert len(styles) == 1
    return styles[0]


def test_stats_page_charts_hold_no_style_and_link_the_stylesheet(client: TestClient) -> None:
    assert client.post("/api/match", json={"text": PASTE}).status_code == 200
    page = client.get("/stats")
    assert page.status_code == 200
    assert "'unsafe-inline'" not in page.headers["content-security-policy"]
    assert "style-src 'self';" in page.headers["content-security-policy"]
    svgs = re.findall(r"<svg .*?</svg>", page.text, flags=re.DOTALL)
    assert len(svgs) == len(SERIES)
    for chart_id, svg in zip(SERIES, svgs, strict=True):
        assert f'id="chart-{chart_id}"' in svg
        assert "<style" not in svg
        assert " style=" not in svg
        assert "<script" not in svg
    assert "ValueError: no data at &lt;path&gt;" in svgs[2]
    assert '<link rel="stylesheet" href="/stats/charts.css">' in page.text


def test_stylesheet_gives_each_series_its_colour_under_the_plain_policy(
    client: TestClient,
) -> None:
    response = client.get("/stats/charts.css")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/css")
    assert "max-age=" in response.headers["cache-control"]
    assert response.text == stylesheet()
    for chart_id, series in SERIES.items():
        for index, name in enumerate(series):
            rule = f"#chart-{chart_id} .color-{index},#chart-{chart_id} .color-{index} a:visited"
            assert f"{rule}{{stroke:{COLORS[name]};fill:{COLORS[name]}}}" in response.text


def test_data_never_changes_a_charts_css() -> None:
    """The stylesheet is built from empty charts; a chart with data must need no other rule."""
    chart = _chart(pygal.HorizontalStackedBar, "reproducers", rows=3)
    chart.x_labels = ["a", "b", "c"]
    for number, status in enumerate(SERIES["reproducers"]):
        chart.add(status, [number + 1, None, 2])
    assert chart.render_tree().get("id") == "chart-reproducers"
    assert _style_of(chart) in stylesheet()
