"""`make site`: every lesson as a static page from its stored outputs, with an index and navigation.

The site is built once (nothing is executed, about ten seconds); the browser test serves it over
HTTP from localhost, as a static host would, and follows the index to every lesson.
"""

from __future__ import annotations

import functools
import html
import http.server
import re
import threading
from pathlib import Path

import nbformat
import pytest

from qlesson.course import recall, site, stats

ROOT = Path(__file__).resolve().parents[1]
WIDGET_REPR = re.compile(r"\b(VBox|HBox|Tab|Output)\(children=|\b(Float|Int)(Range)?Slider\(")


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("site")
    site.build(out)
    return out


def _png_outputs(nb) -> int:
    return sum("image/png" in o.get("data", {}) for c in nb.cells if c.cell_type == "code" for o in c.outputs)


def test_index_links_to_every_lesson_and_pages_link_each_other(built):
    names = [p.with_suffix(".html").name for p in site.lessons()]
    on_disk = sorted(p.stem + ".html" for p in (ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
    assert names == on_disk and len(names) >= 11  # lessons 00 to 10
    index = (built / "index.html").read_text()
    assert re.findall(r'href="(\d\d_\w+\.html)"', index) == names
    second = (built / names[1]).read_text()
    assert f'href="{names[0]}" rel="prev"' in second and f'href="{names[2]}" rel="next"' in second
    assert "<script src=" not in second  # nothing loaded from elsewhere: any static host, offline too


def test_pages_keep_figures_and_show_no_widget_repr(built):
    for path in site.lessons():
        nb = nbformat.read(str(path), as_version=4)
        page = (built / path.with_suffix(".html").name).read_text()
        assert not WIDGET_REPR.search(page), path.name
        assert page.count('src="data:image/png;base64,') == _png_outputs(nb), path.name
    assert any(WIDGET_REPR.search(str(c.get("outputs"))) for c in nb.cells)  # the notebooks do store reprs


def test_quiz_answers_are_folded(built):
    page = (built / "01_the_ruler.html").read_text()
    folds = re.findall(r"<details>(.*?)</details>", page, re.S)
    for q in recall.quiz_questions("01"):
        why = q.why if isinstance(q, recall.Numeric) else next(o.why for o in q.options if o.correct)
        escaped = why.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")
        assert any(escaped in f for f in folds), why  # every answer is on the page, inside a fold
        assert page.count(escaped) == sum(f.count(escaped) for f in folds)  # and nowhere else
    assert "recall.quiz(" not in page  # the widget cell is gone; recall.show's folded answers stay


def _text(page: str) -> str:
    """A page's visible words: tags dropped, entities decoded, backticks and runs of space folded."""
    body = re.sub(r"<(style|script)\b.*?</\1>", " ", page, flags=re.S)
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", body)).replace("`", "").split())


def test_index_lists_each_lesson_with_its_time_and_answer(built):
    """Each lesson's entry carries the time its first cell states and the first cell's **The answer**."""
    index = (built / "index.html").read_text()
    entries = re.findall(r"<li>(.*?)</li>", index, re.S)
    assert len(entries) == len(site.lessons())
    for entry, path in zip(entries, site.lessons(), strict=True):
        nb = nbformat.read(str(path), as_version=4)
        lesson, exercise = stats.stated(nb.cells)
        assert lesson is not None, f"{path.name} states no time"
        time = f"(about {lesson} + {exercise} min)" if exercise else f"(about {lesson} min)"
        answer = re.search(r"\*\*The answer\*\*:(.*?)\n\n", nb.cells[0].source, re.S)
        assert answer, f"{path.name} has no **The answer** paragraph"
        text = _text(entry)
        assert path.with_suffix(".html").name in entry and time in text, (path.name, text[:200])
        words = re.sub(r"\W", "", _text(answer.group(1)))  # letters and digits: markdown and tags aside
        assert words in re.sub(r"\W", "", text), (path.name, answer.group(1), text)


def _widget_only(cell) -> bool:
    """Does the cell show a widget and nothing a page could show instead (no figure, no text)?"""
    kinds = [site.WIDGET in o.get("data", {}) for o in cell.get("outputs", [])]
    return any(kinds) and all(kinds)


def test_every_widget_cell_says_what_it_does_and_how_to_run_it(built):
    """Where a widget stood, a note (the widget function's docstring) and the command that runs it."""
    from qlesson.teach import widgets

    seen = 0
    for path in site.lessons():
        nb = nbformat.read(str(path), as_version=4)
        shown = [c for c in nb.cells if c.cell_type == "code" and "recall." not in c.source and _widget_only(c)]
        calls = [re.search(r"widgets\.(\w+)\(", c.source).group(1) for c in shown]
        notes = re.findall(
            r'<div class="ql-widget-note">(.*?)</div>', (built / path.with_suffix(".html").name).read_text()
        )
        assert len(notes) == len(calls), path.name
        for name, note in zip(calls, notes, strict=True):
            doc = " ".join(getattr(widgets, name).__doc__.split("\n\n")[0].split())
            assert _text(doc.split(": ", 1)[-1])[:30].lower() in _text(note).lower(), (name, note)
            assert "make lab" in note and ("make app" in note) == (name == "calculator")
        seen += len(calls)
    assert seen >= 5  # lessons 01, 02, 04, 07 and 08 each have one


def test_recall_questions_appear_once_on_each_page(built):
    for path in site.lessons():
        number = path.name[:2]
        if number not in recall.bank():
            continue
        text = _text((built / path.with_suffix(".html").name).read_text())
        for q in recall.quiz_questions(number):
            prompt = _text(html.escape(q.prompt))
            assert text.count(prompt) == 1, (path.name, prompt, text.count(prompt))


def test_a_markdown_list_repeating_the_questions_is_left_out_and_nothing_else():
    prompts = [q.prompt for q in recall.questions("01")]
    nb = nbformat.v4.new_notebook(
        cells=[
            nbformat.v4.new_markdown_cell(f"## Pause and recall\n\n1. {prompts[0]}\n2. {prompts[1]}\n3. My own note."),
            nbformat.v4.new_code_cell('recall.show("01")', outputs=[]),
        ]
    )
    assert site.for_the_web(nb).cells[0].source == "## Pause and recall\n\n3. My own note."


def test_for_the_web_drops_widgets_and_makes_the_quiz_static():
    widget = nbformat.v4.new_output(
        "display_data", data={site.WIDGET: {"model_id": "x"}, "text/plain": "VBox(children=(IntSlider(value=1),))"}
    )
    figure = nbformat.v4.new_output("display_data", data={"image/png": "iVBORw0KGgo="})
    nb = nbformat.v4.new_notebook(
        cells=[
            nbformat.v4.new_markdown_cell("See [lesson 2](02_one_ruler_or_many.ipynb)."),
            nbformat.v4.new_code_cell("widgets.ruler_explorer()", outputs=[widget, figure]),
            nbformat.v4.new_code_cell('recall.quiz("01")', outputs=[widget]),
            nbformat.v4.new_code_cell('recall.show("01")', outputs=[]),
        ]
    )
    web = site.for_the_web(nb)
    assert [c.cell_type for c in web.cells] == ["markdown", "code", "code"]
    assert web.cells[0].source == "See [lesson 2](02_one_ruler_or_many.html)."
    assert web.cells[1].outputs == [figure]  # a figure stays: no note needed
    assert web.cells[2].outputs[0]["data"]["text/html"] == site.quiz_html("01")
    assert nb.cells[1].outputs == [widget, figure]  # the notebook itself is not touched
    alone = site.for_the_web(
        nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("widgets.calculator()", outputs=[widget])])
    )
    note = alone.cells[0].outputs[0]["data"]["text/html"]
    assert "paste channels" in note and "make app" in note and "make lab" in note


def test_site_command_writes_into_the_folder_given(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(site, "lessons", lambda folder=None: [ROOT / "notebooks" / "00_start_here.ipynb"])
    assert site.main([str(tmp_path / "out")]) == 0
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["00_start_here.html", "index.html"]
    assert "2 pages" in capsys.readouterr().out
    assert "site: $(STAMP)" in (ROOT / "Makefile").read_text()


@pytest.fixture(scope="module")
def served_site(built):
    handler = functools.partial(_QuietHandler, directory=str(built))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args) -> None:
        pass


_PAGE_STATE = """() => ({
    images: document.images.length,
    broken: [...document.images].filter(i => !(i.complete && i.naturalWidth > 0)).length,
    text: document.body.innerText,
    folded: document.querySelectorAll('details:not([open])').length,
})"""


@pytest.mark.browser
def test_site_in_a_browser(served_site, built):
    from test_browser import ARGS, CHROMIUM, INSTALL, REQUIRED

    if not CHROMIUM.exists() and not REQUIRED:
        pytest.skip(f"Chromium is not installed; to run browser tests: {INSTALL}")
    pytest.importorskip("playwright", reason="pip install playwright (no browser download needed)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        page = browser.new_page()
        page.route("**/*", lambda r: r.continue_() if r.request.url.startswith(served_site) else r.abort())
        page.goto(f"{served_site}/index.html")
        links = page.locator(".jp-RenderedMarkdown a[href$='.html']").all_inner_texts()
        assert len(links) == len(site.lessons())
        for text, path in zip(links, site.lessons(), strict=True):
            page.goto(f"{served_site}/index.html")
            page.get_by_role("link", name=text, exact=True).first.click()
            page.wait_for_load_state("load")
            assert page.url.endswith(path.with_suffix(".html").name)
            state = page.evaluate(_PAGE_STATE)
            assert state["broken"] == 0 and state["images"] == _png_outputs(nbformat.read(str(path), as_version=4))
            assert not WIDGET_REPR.search(state["text"]), path.name
            assert state["folded"] >= (1 if path.name != "00_start_here.ipynb" else 0)
        page.get_by_role("link", name="All lessons").first.click()
        page.wait_for_load_state("load")
        assert page.url.endswith("/index.html")
        browser.close()


def test_a_lesson_file_name_with_spaces_links_right():
    from qlesson.course.site import index_notebook, nav_html

    pages = [("01 my lesson.html", "One"), ("02_b.html", "Two")]
    assert "(01%20my%20lesson.html)" in index_notebook(pages).cells[0].source
    assert 'href="01%20my%20lesson.html"' in nav_html(pages, 1)


def test_an_unreadable_lesson_is_one_line_naming_it(tmp_path):
    from qlesson.course import site
    from qlesson.course.workspace import CourseFileError

    (tmp_path / "01_broken.ipynb").write_text("{ not json")
    with pytest.raises(CourseFileError, match="01_broken.ipynb is not a readable notebook") as err:
        site.build(tmp_path / "out", tmp_path)
    assert "\n" not in str(err.value)


def test_quiz_options_show_their_letters_in_the_text_on_every_host():
    """The answers say "c)": the options carry that letter themselves, not a list style a host can restyle."""
    from qlesson.course import recall

    html = recall.show("06")._repr_html_()
    assert "<ol" not in html
    for q in recall.quiz_questions("06"):
        if isinstance(q, recall.Choice):
            for letter, opt in zip(recall.LETTERS, q.shown(), strict=False):
                assert f"<li>{letter}) " in html and opt.text[:20].replace("'", "&#x27;") in html
    quiz = recall.quiz("06")
    radios = [w for w in _walk(quiz) if type(w).__name__ == "RadioButtons"]
    labels = [label for r in radios for label in r._options_labels]
    assert radios and all(label.startswith(("a) ", "b) ", "c) ", "d) ")) for label in labels), labels


def _walk(widget):
    yield widget
    for child in getattr(widget, "children", ()):
        yield from _walk(child)
