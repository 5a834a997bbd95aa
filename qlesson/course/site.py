"""``make site``: the lessons as a static HTML site, from their stored outputs (nothing is executed).

nbconvert's HTML exporter (JupyterLab's look) renders each ``notebooks/NN_*.ipynb`` with a small
template that adds navigation (index, previous, next) and loads no script from elsewhere; an
``index.html`` lists the lessons. The result is a folder any static host serves as is.

What changes on the way to the web, since a page has no kernel:

* widget outputs are dropped (the notebooks store only their text repr, such as ``VBox(...)``);
  where nothing else is left under the cell, a note says what the widget does (its function's
  docstring) and how to run it (``make lab``; the calculator also ``make app``), not an empty spot;
* the recall questions appear once: the quiz widget is left out, ``recall.show``'s sheet shows
  each question with its answer folded in a ``<details>`` block, and a markdown list repeating
  the questions is left out;
* a predict-then-run widget becomes its question and options, the answer folded;
* the *Going deeper* part (from its ``## Going deeper`` heading to the end) is folded in a
  ``<details>`` block, so a page shows the main line first;
* links between lessons (``02_one_ruler_or_many.ipynb``) point to their pages.

The index lists each lesson with its stated time and its answer (the first cell's **Time** and
**The answer**), so a reader sees what each lesson concludes before opening it.

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

_WIDGET_CALL = re.compile(r"\bwidgets\.([a-z_]+)\(")
_ANSWER = re.compile(r"\*\*The answer\*\*:\s*(.+?)(?:\n\s*\n|\n\*\*|$)", re.S)
_LIST_ITEM = re.compile(r"^\s*(?:\d+[.)]|[-*])\s+(.+?)\s*$")

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
.ql-widget-note { border-left: 4px solid #1976d2; background: #f3f7fc; padding: 0.5em 1em; font-family: sans-serif; }
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


def widget_note(source: str) -> str:
    """What a widget cell shows on a page without a kernel: what the widget does and how to run it.

    >>> print(widget_note("widgets.ruler_explorer(values)"))  # doctest: +ELLIPSIS
    <div class="ql-widget-note"><b>Interactive</b>: a value slider and a bit-width slider ... <code>values</code>...
    """
    from qlesson.teach import widgets

    call = _WIDGET_CALL.search(source)
    func = getattr(widgets, call.group(1), None) if call else None
    doc = (func.__doc__ or "").strip().split("\n\n")[0] if callable(func) else ""
    what = re.sub(r"^Lesson \d+:\s*", "", " ".join(doc.split())).rstrip(".") or "a widget with controls"
    run = "open this lesson in JupyterLab (<code>make lab</code>) and run its cells"
    if call and call.group(1) == "calculator":
        run += ", or open the calculator alone with <code>make app</code>"
    what = re.sub(r"``(.+?)``", r"<code>\1</code>", html.escape(what[0].lower() + what[1:], quote=False))
    return (
        f'<div class="ql-widget-note"><b>Interactive</b>: {what}. '
        f"It needs a running Python kernel, which a web page does not have: {run}.</div>"
    )


def answer_line(nb: Any) -> str:
    """The lesson's answer in one line: the first cell's **The answer** paragraph ("" if none).

    >>> import nbformat
    >>> cell = nbformat.v4.new_markdown_cell("# T\\n\\n**The answer**: One ruler\\nper row.\\n\\n**Time**: 5")
    >>> answer_line(nbformat.v4.new_notebook(cells=[cell]))
    'One ruler per row.'
    """
    first = next((c.source for c in nb.cells if c.cell_type == "markdown"), "")
    m = _ANSWER.search(first)
    return " ".join(m.group(1).split()) if m else ""


def _without_recall_list(source: str, prompts: list[str]) -> str:
    """``source`` less the list items that repeat a recall question (the sheet shows each once)."""
    kept = []
    for line in source.split("\n"):
        item = _LIST_ITEM.match(line)
        if item and _plain(item.group(1)) in prompts:
            continue
        kept.append(line)
    return "\n".join(kept)


def _plain(text: str) -> str:
    return " ".join(text.replace("`", "").split())


def _prompts(nb: Any) -> list[str]:
    """The recall prompts of the lesson whose sheet ``nb`` shows (none when it shows none)."""
    from qlesson.course import recall

    for cell in nb.cells:
        sheet = _SHOW.search(cell.source) if cell.cell_type == "code" else None
        if sheet:
            return [_plain(q.prompt) for q in recall.quiz_questions(sheet.group(1))]
    return []


def for_the_web(nb: Any) -> Any:
    """A copy of ``nb`` ready for a page: widgets noted, the quiz static and once, lesson links to pages."""
    nb = copy.deepcopy(nb)
    prompts = _prompts(nb)
    cells = []
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            cell.source = page_links(_without_recall_list(cell.source, prompts))
        elif cell.cell_type == "code":
            if _QUIZ.search(cell.source):
                continue  # the quiz widget needs a kernel; the recall.show cell below it is the static quiz
            outputs = cell.get("outputs", [])
            cell.outputs = [o for o in outputs if WIDGET not in o.get("data", {})]
            sheet = _SHOW.search(cell.source)
            guess = _PREDICT.search(cell.source)
            if sheet:
                cell.outputs = [_quiz_output(sheet.group(1))]
            elif guess:
                cell.outputs = [_predict_output(guess.group(1), guess.group(2))]
            elif len(cell.outputs) < len(outputs) and not cell.outputs:
                cell.outputs = [_html_output(widget_note(cell.source))]
        cells.append(cell)
    nb.cells = cells
    nb.metadata.pop("widgets", None)
    return nb


def _html_output(text: str) -> Any:
    import nbformat

    return nbformat.v4.new_output("display_data", data={"text/html": text})


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


def index_notebook(pages: list[tuple[str, str]], about: list[tuple[str, str]] | None = None) -> Any:
    """The index page, as a one-cell markdown notebook listing the lessons.

    ``about`` gives each lesson's (time, answer), shown under its link.
    """
    import nbformat

    about = about or [("", "")] * len(pages)
    rows = []
    for i, ((href, name), (time, answer)) in enumerate(zip(pages, about, strict=True), start=1):
        row = f"{i}. [{name}]({quote(href)})" + (f" *({time})*" if time else "")
        rows.append(row + (f"\\\n   {page_links(answer)}" if answer else ""))
    text = (
        "# qlesson: one ruler or many?\n\n"
        "A hands-on course on quantization granularity (per-tensor, per-channel, per-group), "
        "shown here with the outputs stored in each lesson. To run the lessons and move the "
        "sliders, install the course and open them in JupyterLab (`make lab`). Each lesson's time "
        "is the lesson, plus its exercise; under it, the lesson's answer.\n\n" + "\n\n".join(rows) + "\n"
    )
    return nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell(text)])


def time_text(nb: Any) -> str:
    """The lesson's stated time (``qlesson.course.stats``): "about 19 + 22 min", "about 6 min" or "".

    >>> import nbformat
    >>> cell = nbformat.v4.new_markdown_cell("# T\\n**Time**: about 19 minutes, plus about 22 for the exercise.")
    >>> time_text(nbformat.v4.new_notebook(cells=[cell]))
    'about 19 + 22 min'
    """
    from qlesson.course.stats import stated

    lesson, exercise = stated(nb.cells)
    if lesson is None:
        return ""
    return f"about {lesson}{f' + {exercise}' if exercise else ''} min"


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
    about = [(time_text(nb), answer_line(nb)) for nb in notebooks]
    index.write_text(render(index_notebook(pages, about), "qlesson", nav_html(pages, None), exp), encoding="utf-8")
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
