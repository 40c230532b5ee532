"""Charts of the reports, drawn on the server by matplotlib as inline SVG.

No JavaScript and no CDN: a chart is part of the page, readable in a closed reading room and
printed as it is shown. Text stays text in the SVG (searchable, selectable, sharp when printed);
every chart on a page is followed by its numbers as a table (for screen readers and for the CSV).
Figures are made with the object API (no pyplot, whose global state is not thread-safe).

Labels come from crawled data (MIME types, domains) and names people typed: every text of a chart
is drawn as plain text, never parsed as matplotlib's mathtext (``$\\foo$`` would raise, and the
page answer 500). The switch is matplotlib's own, ``text.parse_math`` off in the charts' style
(read when a text is made, tick labels included, which are made while drawing, so drawing is in
the style too), and ``parse_math=False`` set again on every text of a figure before it is drawn.
The SVG writer escapes text (``<`` as ``&lt;``), so crawled text cannot bring markup into a page.

The pages' Content-Security-Policy allows no inline style (``style-src 'self'``), and matplotlib
writes its colours, lines and fonts as CSS (a ``<style>`` rule and ``style=""`` attributes): each
declaration is rewritten as the SVG presentation attribute of the same name, which draws the same.
"""

from __future__ import annotations

import io
import re
import xml.etree.ElementTree as ElementTree
from collections.abc import Sequence

import matplotlib
from django.template.defaultfilters import filesizeformat
from matplotlib.backends.backend_svg import FigureCanvasSVG
from matplotlib.figure import Figure
from matplotlib.text import Text
from matplotlib.ticker import FuncFormatter

# Colours that print apart in grey too (Okabe-Ito, for colour-blind readers).
COLOURS = ["#0072B2", "#E69F00", "#009E73", "#D55E00", "#56B4E9", "#CC79A7", "#F0E442", "#000000"]
STYLE = {
    "svg.fonttype": "none",
    "font.family": "sans-serif",
    "font.size": 9,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "svg.hashsalt": "webarchive",  # the same chart, the same SVG (ids do not change between requests)
    "text.parse_math": False,  # labels are crawled text: "$" is a dollar, not mathtext
}
COUNT_UNIT = ""  # counts (URLs, domains) have no unit
MAX_SLICES = 7  # beyond this, a pie's smallest slices are summed as "other"
MIN_SHARE = 0.03  # and so are slices smaller than this share of the whole (too thin to read)
SHARE_SHOWN = 8  # per cent: a slice at least this large says its share inside it


def human(value: float, unit: str = "") -> str:
    """1234567 -> "1.2 M": the axis labels. Bytes are written as the tables and tiles write them
    (Django's filesizeformat: powers of 1,024, one decimal), so that a chart and its numbers agree."""
    if unit == "B":
        return filesizeformat(value)
    for size, prefix in ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= size:
            return f"{value / size:.3g} {prefix}{unit}"
    return f"{value:.3g} {unit}".strip()


def _svg(figure: Figure, title: str) -> str:
    for text in figure.findobj(Text):
        text.set_parse_math(False)
    buffer = io.StringIO()
    with matplotlib.rc_context(STYLE):
        FigureCanvasSVG(figure).print_svg(buffer, metadata={"Date": None, "Title": title})
    # matplotlib's own output (no DTD, no entity; crawled text in it escaped), not crawled XML.
    root = _presentation_attributes(ElementTree.fromstring(buffer.getvalue()))  # noqa: S314
    for element in root.iter():  # SVG elements written unprefixed (<svg xmlns="…">, as matplotlib does)
        element.tag = element.tag.removeprefix(f"{{{_SVG}}}")
    root.attrib = {"role": "img", "aria-label": title, "class": "report-chart", "xmlns": _SVG, **root.attrib}
    return ElementTree.tostring(root, encoding="unicode")  # inline: no XML declaration


_SVG = "http://www.w3.org/2000/svg"
ElementTree.register_namespace("xlink", "http://www.w3.org/1999/xlink")  # <use xlink:href>, as written
_RULE_FOR_EVERY_ELEMENT = re.compile(r"\*\s*\{([^{}]*)\}")


def _declarations(css: str) -> dict[str, str]:
    """``"fill: #fff; stroke: none"`` -> ``{"fill": "#fff", "stroke": "none"}``."""
    pairs = (declaration.partition(":") for declaration in css.split(";") if declaration.strip())
    return {name.strip(): value.strip() for name, _colon, value in pairs}


def _presentation_attributes(root: ElementTree.Element) -> ElementTree.Element:
    """matplotlib's SVG with its CSS as attributes (fill="…", not style="fill: …"), metadata dropped.

    Its only rule is one for every element (``*{stroke-linejoin: round; …}``) with properties that
    are inherited: set on the root, they reach every element that does not say otherwise (matplotlib
    says so on the shapes it draws, not on groups). Any other rule would be lost silently: refused.
    """
    every_element: dict[str, str] = {}
    for parent in list(root.iter()):
        for child in list(parent):
            if child.tag == f"{{{_SVG}}}style":
                css = (child.text or "").strip()
                rules = _RULE_FOR_EVERY_ELEMENT.findall(css)
                if _RULE_FOR_EVERY_ELEMENT.sub("", css).strip() or len(rules) != 1:
                    raise ValueError(f"unexpected CSS in matplotlib's SVG: {css!r}")
                every_element = _declarations(rules[0])
                parent.remove(child)
            elif child.tag == f"{{{_SVG}}}metadata":
                parent.remove(child)
    root.attrib.update(every_element)
    for element in root.iter():
        element.attrib.update(_declarations(element.attrib.pop("style", "")))
    return root


def _figure(height: float = 3.0) -> Figure:
    with matplotlib.rc_context(STYLE):
        return Figure(figsize=(6.4, height), layout="constrained")


def bar_chart(labels: Sequence[str], values: Sequence[float], *, title: str, unit: str = "") -> str:
    """Horizontal bars, largest first as given: long labels (domains, MIME types) stay readable."""
    with matplotlib.rc_context(STYLE):
        figure = _figure(height=max(1.6, 0.32 * len(labels) + 0.8))
        axes = figure.add_subplot()
        positions = range(len(labels))
        axes.barh(positions, values, color=COLOURS[0])
        axes.set_yticks(list(positions), labels=[str(label) for label in labels])
        axes.invert_yaxis()
        axes.xaxis.set_major_formatter(FuncFormatter(lambda value, _pos: human(value, unit)))
        for position, value in zip(positions, values, strict=True):
            axes.annotate(
                human(value, unit), (value, position), xytext=(3, 0), textcoords="offset points", va="center"
            )
        axes.set_title(title, loc="left")
        return _svg(figure, title)


def pie_chart(labels: Sequence[str], values: Sequence[float], *, title: str, other: str = "other") -> str:
    """Shares of a whole (MIME families, seed sources). The smallest slices (beyond seven, or under 3 %)
    are summed as ``other``; the labels are in a legend beside the pie, one a line, so that they never
    overlap whatever the slices; a slice of 8 % or more says its share inside it."""
    pairs = sorted(
        ((label, value) for label, value in zip(labels, values, strict=True) if value > 0),
        key=lambda pair: -pair[1],
    )
    total = sum(value for _label, value in pairs)
    kept = [pair for pair in pairs[: MAX_SLICES - 1] if pair[1] >= MIN_SHARE * total]
    rest = sum(value for _label, value in pairs[len(kept) :])
    if len(pairs) == len(kept) + 1 and pairs[-1][1] >= MIN_SHARE * total:
        kept, rest = pairs, 0  # the one left is shown as itself, not as "other"
    pairs = [*kept, (other, rest)] if rest else kept
    with matplotlib.rc_context(STYLE):
        figure = _figure()
        axes = figure.add_subplot()
        if pairs:
            wedges, *_texts = axes.pie(
                [value for _label, value in pairs],
                colors=COLOURS[: len(pairs)],
                autopct=lambda share: f"{share:.0f} %" if share >= SHARE_SHOWN else "",
                startangle=90,
                counterclock=False,
                wedgeprops={"linewidth": 1, "edgecolor": "white"},
            )
            axes.legend(
                wedges,
                [str(label) for label, _value in pairs],
                loc="center left",
                bbox_to_anchor=(1.0, 0.5),
                frameon=False,
            )
        axes.set_aspect("equal")
        axes.set_title(title, loc="left")
        return _svg(figure, title)


def line_chart(
    labels: Sequence[str], series: dict[str, Sequence[float]], *, title: str, unit: str = ""
) -> str:
    """One line per series over ordered labels (years, months): the trend."""
    with matplotlib.rc_context(STYLE):
        figure = _figure()
        axes = figure.add_subplot()
        for number, (name, values) in enumerate(series.items()):
            colour = COLOURS[number % len(COLOURS)]
            axes.plot(list(labels), list(values), marker="o", color=colour, label=name)
        axes.yaxis.set_major_formatter(FuncFormatter(lambda value, _pos: human(value, unit)))
        axes.set_ylim(bottom=0)
        if len(series) > 1:
            axes.legend(frameon=False)
        axes.set_title(title, loc="left")
        return _svg(figure, title)
