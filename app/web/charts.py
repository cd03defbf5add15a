"""The charts of the /stats page: SVG drawn on the server by pygal and inlined in the page.

Pages work offline and without JavaScript, so nothing here loads a script: pygal
links its tooltip script from a CDN unless `js=[]`, and always inlines a script holding its
config, which is dropped from the tree before the SVG is written (an error message used as a
label would otherwise sit inside a script). Labels are escaped by the XML writer.

The page's Content-Security-Policy allows styles from this origin only, so a browser refuses
the `<style>` element pygal puts in each SVG (and its tooltip's `style` attribute), and every
shape falls back to black. Each chart is therefore drawn under a fixed id instead of pygal's
random one, its `<style>` is dropped from the SVG, and `stylesheet()` serves the same CSS,
scoped to those ids, as a stylesheet of this origin.
"""

from dataclasses import dataclass
from datetime import date
from functools import cache

import pygal
from markupsafe import Markup
from pygal.etree import etree
from pygal.graph.graph import Graph
from pygal.style import Style

from app.curation.stats import DRIFT_STATUSES, HIT_STATES, RUN_STATUSES, Overview

WIDTH = 800
BAR_ROW_PX = 34
MIN_HEIGHT = 220
LABEL_CHARS = 48
DAY_LABEL_EVERY = 7
COLORS = {
    "reviewed": "#116329",
    "draft": "#b7791f",
    "unexplained": "#a40e26",
    "passed": "#116329",
    "failed": "#a40e26",
    "error": "#6e2b8f",
    "skipped": "#6b7280",
    "same": "#116329",
    "moved": "#0b57d0",
    "changed": "#b7791f",
    "gone": "#a40e26",
}
# Each chart's id (its section's anchor on the page) and its series, in pygal's order: a
# series' colour class (color-0, color-1...) is its place here.
SERIES: dict[str, tuple[str, ...]] = {
    "records": ("reviewed", "draft"),
    "hits": HIT_STATES,
    "most-hit": ("draft", "unexplained"),
    "reproducers": RUN_STATUSES,
    "drift": DRIFT_STATUSES,
}
FONT = 'system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif'


@dataclass(frozen=True, slots=True)
class Chart:
    """One chart of the page: its anchor, its title, the SVG."""

    id: str
    title: str
    svg: Markup


def _style(series: tuple[str, ...]) -> Style:
    return Style(
        background="transparent",
        plot_background="#ffffff",
        foreground="#1b1f24",
        foreground_strong="#1b1f24",
        foreground_subtle="#4d5661",
        colors=tuple(COLORS[name] for name in series),
        font_family=FONT,
        label_font_size=13,
        major_label_font_size=13,
        legend_font_size=14,
        value_font_size=12,
        no_data_font_size=20,
    )


def _chart(kind: type[Graph], chart_id: str, rows: int = 0, **options: object) -> Graph:
    """A pygal chart with the site's look, sized for `rows` bars when it is horizontal; the
    page's heading is its title, and its scale counts in whole numbers (order_min=0). Its
    SVG's id is `chart-<chart_id>`, the scope of its rules in `stylesheet()`."""
    height = max(MIN_HEIGHT, 120 + rows * BAR_ROW_PX) if rows else 360
    chart = kind(
        style=_style(SERIES[chart_id]),
        order_min=0,
        width=WIDTH,
        height=height,
        js=[],
        disable_xml_declaration=True,
        legend_at_bottom=True,
        truncate_label=LABEL_CHARS,
        print_zeroes=False,
        no_data_text="Nothing yet",
        **options,
    )
    chart.uuid = chart_id
    return chart


def _is(element: etree.Element, tag: str) -> bool:
    return isinstance(element.tag, str) and element.tag.rsplit("}", 1)[-1] == tag


def _is_tooltip(element: etree.Element) -> bool:
    return "tooltip" in element.get("class", "").split()


def _without_script_and_style(chart: Graph) -> etree.Element:
    """The chart's SVG tree less its scripts, its `<style>` and its tooltip (a group only
    pygal's script fills in, hidden by a `style` attribute the policy would refuse)."""
    tree = chart.render_tree()
    for parent in list(tree.iter()):
        for child in list(parent):
            if _is(child, "script") or _is(child, "style") or _is_tooltip(child):
                parent.remove(child)
    return tree


def _svg(chart: Graph) -> Markup:
    """The chart's SVG, drawn without script or style of its own (see the module docstring)."""
    return Markup(etree.tostring(_without_script_and_style(chart), encoding="unicode"))


@cache
def stylesheet() -> str:
    """The CSS pygal writes into each chart's SVG, scoped to the chart's fixed id: it depends
    on the chart's look and on its series, never on the data, so an empty chart gives it."""
    rules = []
    for chart_id, series in SERIES.items():
        chart = _chart(pygal.Bar, chart_id)
        for name in series:
            chart.add(name, [])
        styles = [e for e in chart.render_tree().iter() if _is(e, "style")]
        rules += [style.text or "" for style in styles]
    return "\n".join(rules) + "\n"


def _horizontal(chart_id: str, labels: list[str], series: dict[str, list[int]]) -> Markup:
    """Stacked horizontal bars, the first label on top (pygal draws the first at the bottom)."""
    chart = _chart(pygal.HorizontalStackedBar, chart_id, rows=len(labels))
    chart.x_labels = labels[::-1]
    for name, values in series.items():
        chart.add(name, [value or None for value in values[::-1]])
    return _svg(chart)


def _records_per_repo(overview: Overview) -> Markup:
    repos = list(overview.records_per_repo)
    per_state = {
        state: [overview.records_per_repo[repo][state] for repo in repos]
        for state in ("reviewed", "draft")
    }
    return _horizontal("records", repos, per_state)


def _day_label(day: date) -> str:
    return day.strftime("%m-%d")


def _hits_per_day(overview: Overview) -> Markup:
    days = list(overview.hits_per_day)
    chart = _chart(
        pygal.StackedBar,
        "hits",
        x_labels_major_every=DAY_LABEL_EVERY,
        show_minor_x_labels=False,
    )
    chart.x_labels = [_day_label(day) for day in days]
    for state in HIT_STATES:
        chart.add(state, [overview.hits_per_day[day][state] or None for day in days])
    return _svg(chart)


def _most_hit(overview: Overview) -> Markup:
    labels: list[str] = []
    per_state: dict[str, list[int]] = {"draft": [], "unexplained": []}
    for item in overview.most_hit:
        if item.record is not None:
            record = item.record.record
            labels.append(f"{record.error_class}: {record.error_message}")
        else:
            labels.append(item.template or item.id)
        for state, values in per_state.items():
            values.append(item.hits if item.review_state == state else 0)
    return _horizontal("most-hit", labels, per_state)


def _reproducer_status(overview: Overview) -> Markup:
    labels = [status.record_id for status in overview.reproducers]
    per_status = {
        status: [reproducer.runs[status] for reproducer in overview.reproducers]
        for status in RUN_STATUSES
    }
    return _horizontal("reproducers", labels, per_status)


def _drift_per_release(overview: Overview) -> Markup:
    releases = list(overview.drift_per_release)
    chart = _chart(pygal.StackedBar, "drift")
    chart.x_labels = releases
    for status in DRIFT_STATUSES:
        chart.add(status, [overview.drift_per_release[r][status] or None for r in releases])
    return _svg(chart)


def charts(overview: Overview) -> list[Chart]:
    """Every chart of the page, in its order."""
    return [
        Chart("records", "Records per repository, reviewed and draft", _records_per_repo(overview)),
        Chart("hits", "Hits per day, by what answered them", _hits_per_day(overview)),
        Chart("most-hit", "Most-hit unexplained errors", _most_hit(overview)),
        Chart(
            "reproducers", "Reproducer runs per record (recent runs)", _reproducer_status(overview)
        ),
        Chart(
            "drift", "Drift per release (latest check of each record)", _drift_per_release(overview)
        ),
    ]
