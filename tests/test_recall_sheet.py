"""The quiz appears once in a notebook: the widget asks, the text sheet below it comes folded."""

from qlesson.course import recall


def test_notebook_sheet_is_folded_whole_and_the_site_page_is_not():
    sheet = recall.show("02")
    html = sheet._repr_html_()
    assert html.startswith("<details><summary>") and html.endswith("</details>")
    page = sheet.page_html()
    assert page in html  # the same questions, inside the fold
    assert page.startswith("<div class='ql-recall'>")  # the static site shows them open, answers folded
    for q in recall.quiz_questions("02"):
        assert q.prompt[:30].replace("'", "&#x27;") in page
