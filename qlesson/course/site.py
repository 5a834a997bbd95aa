"""``make site``: the lessons as a static HTML site, from their stored outputs (nothing is executed).

nbconvert's HTML exporter (JupyterLab's look) renders each ``notebooks/NN_*.ipynb`` with a small
template that adds navigation (index, previous, next) and loads no script from elsewhere; an
``index.html`` lists the lessons. The result is a folder any static host serves as is.

What changes on the way to the web, since a page has no kernel:

* widget outputs are dropped (the notebooks store only their text repr, such as ``VBox(...)``);
  every widget has a static figure in a neighbouring cell, which stays;
* the recall quiz widget becomes its questions with each answer folded in a ``<details>`` block,
  and the plain-text copy of the questions printed below it is left out;
* a predict-then-run widget becomes its question and options, the answer folded;
* the *Going deeper* part (from its ``## Going deeper`` heading to the end) is folded in a
  ``<details>`` block, so a page shows the main line first;
* links between lessons (``02_one_ruler_or_many.ipynb``) point to their pages.

``python -m qlesson.course.site [FOLDER]`` writes the site (default ``site/``).
"""

from __future__ import annotations

import copy
import html
import re
import sys
from pathlib import Path
from typing import Any
from urllib.parse import quote

from qlesson.course.notebooks import LESSONS, ROOT

WIDGET = "application/vnd.jupyter.widget-view+json"
OUT = ROOT / "site"
_QUIZ = re.compile(r"^recall\.quiz\(\s*[\"']\d\d[\"']\s*\)$", re.M)
_SHOW = re.compile(r"recall\.show\(\s*[\"'](\d\d)[\"']\s*\)")
_PREDICT = re.compile(r"recall\.predict\(\s*[\"'](\d\d)[\"']\s*,\s*[\"']([^\"']+)[\"']\s*\)")
_DEEPER_ID = 'id="Going-deeper"'
_BOTTOM = '<nav class="ql-nav ql-bottom">'

_LINK = re.compile(r"\]\((?:\.\./)?(?:notebooks/)?(\d\d_[A-Za-z0-9_]+)\.ipynb\)")

TEMPLATE = """{%- extends 'lab/index.html.j2' -%}
{%- block html_head_js -%}{%- endblock html_head_js -%}
{%- block html_head_js_mathjax -%}{%- endblock html_head_js_mathjax -%}
{%- block html_head_js_mermaidjs -%}{%- endblock html_head_js_mermaidjs -%}
{% block extra_css %}<style>
nav.ql-nav { display: flex; gap: 1.5em; padding: 0.6em 1em; border-bottom: 1px solid #ddd;
             font-family: sans-serif; font-size: 0.95em; }
nav.ql-nav.ql-bottom { border-top: 1px solid #ddd; border-bottom: none; }
.ql-quiz details { margin: 0.2em 0 1em 1.5em; }
details.ql-deeper > summary { font-family: sans-serif; font-size: 1.2em; padding: 0.6em 1em; cursor: pointer; }
</style>{% endblock extra_css %}
{%- block body_header -%}{{ super() }}<nav class="ql-nav">{{ resources.ql_nav }}</nav>{%- endblock body_header -%}
{% block body_footer %}<nav class="ql-nav ql-bottom">{{ resources.ql_nav }}</nav>{{ super() }}{% endblock body_footer %}
"""


def lessons(folder: Path = LESSONS) -> list[Path]:
    """The lesson notebooks, in course order."""
    return sorted(folder.glob("[0-9][0-9]_*.ipynb"))


def title(nb: Any, fallback: str = "") -> str:
    """The notebook's first ``# heading`` (its title), or ``fallback``."""
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            m = re.search(r"^#\s+(.+)$", cell.source, re.M)
            if m:
                return m.group(1).strip()
    return fallback


def quiz_html(lesson: str) -> str:
    """A lesson's recall questions as HTML, each answer folded in ``<details>`` (``recall.show``'s page form).

    >>> page = quiz_html("01")
    >>> page.count("<details>") == page.count("<p><b>") > 0
    True
    """
    from qlesson.course import recall

    return recall.show(lesson).page_html()


def page_links(source: str) -> str:
    """Markdown links to lesson notebooks, pointed at their pages.

    >>> page_links("see [lesson 2](02_one_ruler_or_many.ipynb) and [the code](../qlesson/x.py)")
    'see [lesson 2](02_one_ruler_or_many.html) and [the code](../qlesson/x.py)'
    """
    return _LINK.sub(r"](\1.html)", source)


def _quiz_output(lesson: str) -> Any:
    import nbformat

    return nbformat.v4.new_output("display_data", data={"text/html": quiz_html(lesson)})


def _predict_output(lesson: str, key: str) -> Any:
    import nbformat

    from qlesson.course import recall

    html_text = recall.PredictionSheet(lesson, key)._repr_html_()
    return nbformat.v4.new_output("display_data", data={"text/html": html_text})


def fold_deeper(page: str) -> str:
    """Fold a page's *Going deeper* part (its heading's cell to the last cell) in ``<details>``.

    >>> page = fold_deeper('<div class="jp-Cell a">A</div><div class="jp-Cell b"><h2 id="Going-deeper">G</h2>'
    ...                    '</div><nav class="ql-nav ql-bottom">N</nav>')
    >>> page = page.replace("<summary>Going deeper (open when the main line is done)</summary>", "")
    >>> page.split("<h2")[0]
    '<div class="jp-Cell a">A</div><details class="ql-deeper"><div class="jp-Cell b">'
    >>> page.split("</h2>")[1]
    '</div></details><nav class="ql-nav ql-bottom">N</nav>'
    """
    at = page.find(_DEEPER_ID)
    end = page.rfind(_BOTTOM)
    start = page.rfind('<div class="jp-Cell ', 0, at)
    if at < 0 or end < at or start < 0:
        return page
    summary = "<summary>Going deeper (open when the main line is done)</summary>"
    return f'{page[:start]}<details class="ql-deeper">{summary}{page[start:end]}</details>{page[end:]}'


def for_the_web(nb: Any) -> Any:
    """A copy of ``nb`` ready for a page: widgets dropped, the quiz static, lesson links to pages."""
    nb = copy.deepcopy(nb)
    cells = []
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            cell.source = page_links(cell.source)
        elif cell.cell_type == "code":
            if _QUIZ.search(cell.source):
                continue  # the quiz widget needs a kernel; the recall.show cell below it is the static quiz
            cell.outputs = [o for o in cell.get("outputs", []) if WIDGET not in o.get("data", {})]
            sheet = _SHOW.search(cell.source)
            if sheet:
                cell.outputs = [_quiz_output(sheet.group(1))]
            guess = _PREDICT.search(cell.source)
            if guess:
                cell.outputs = [_predict_output(guess.group(1), guess.group(2))]
        cells.append(cell)
    nb.cells = cells
    nb.metadata.pop("widgets", None)
    return nb


def nav_html(pages: list[tuple[str, str]], at: int | None) -> str:
    """Links to the index and to the previous and next pages; ``at`` is None on the index.

    >>> nav_html([("a.html", "A"), ("b.html", "B")], 0)
    '<a href="index.html">All lessons</a> <a href="b.html" rel="next">Next: B</a>'
    """
    links = ['<a href="index.html">All lessons</a>']
    if at is not None and at > 0:
        href, name = pages[at - 1]
        links.append(f'<a href="{html.escape(quote(href))}" rel="prev">Previous: {html.escape(name)}</a>')
    if at is not None and at + 1 < len(pages):
        href, name = pages[at + 1]
        links.append(f'<a href="{html.escape(quote(href))}" rel="next">Next: {html.escape(name)}</a>')
    return " ".join(links)


def exporter() -> Any:
    """nbconvert's HTML exporter with JupyterLab's look, the site's template, and no prompts."""
    from jinja2 import DictLoader
    from nbconvert import HTMLExporter

    return HTMLExporter(
        template_name="lab",
        extra_loaders=[DictLoader({"qlesson_site.html.j2": TEMPLATE})],
        template_file="qlesson_site.html.j2",
        exclude_input_prompt=True,
        exclude_output_prompt=True,
    )


def render(nb: Any, name: str, nav: str, html_exporter: Any = None) -> str:
    """One page of HTML for ``nb``, titled ``name``, with ``nav`` above and below."""
    html_exporter = html_exporter or exporter()
    body, _ = html_exporter.from_notebook_node(nb, resources={"metadata": {"name": name}, "ql_nav": nav})
    return fold_deeper(body)


def index_notebook(pages: list[tuple[str, str]]) -> Any:
    """The index page, as a one-cell markdown notebook listing the lessons."""
    import nbformat

    rows = "\n".join(f"{i}. [{name}]({quote(href)})" for i, (href, name) in enumerate(pages, start=1))
    text = (
        "# qlesson: one ruler or many?\n\n"
        "A hands-on course on quantization granularity (per-tensor, per-channel, per-group), "
        "shown here with the outputs stored in each lesson. To run the lessons and move the "
        "sliders, install the course and open them in JupyterLab (`make lab`).\n\n"
        f"{rows}\n"
    )
    return nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell(text)])


def build(out: Path = OUT, folder: Path = LESSONS) -> list[Path]:
    """Write the site into ``out``: one page per lesson and ``index.html``; returns the pages written."""
    from qlesson.course.workspace import CourseFileError, read_notebook

    if out.exists() and not out.is_dir():
        raise CourseFileError(f"{out} is a file, not a folder: move it away or name another folder for the site")
    notebooks = [read_notebook(p) for p in lessons(folder)]
    pages = [(p.with_suffix(".html").name, title(nb, p.stem)) for p, nb in zip(lessons(folder), notebooks, strict=True)]
    out.mkdir(parents=True, exist_ok=True)
    exp, written = exporter(), []
    for at, nb in enumerate(notebooks):
        target = out / pages[at][0]
        target.write_text(render(for_the_web(nb), pages[at][1], nav_html(pages, at), exp), encoding="utf-8")
        written.append(target)
    index = out / "index.html"
    index.write_text(render(index_notebook(pages), "qlesson", nav_html(pages, None), exp), encoding="utf-8")
    return [index, *written]


def main(argv: list[str]) -> int:
    from qlesson.course.workspace import CourseFileError

    out = Path(argv[0]) if argv else OUT
    try:
        written = build(out)
    except CourseFileError as err:
        print(f"site: {err}", file=sys.stderr)
        return 1
    print(f"site: {len(written)} pages in {out}/ (open {out / 'index.html'})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
