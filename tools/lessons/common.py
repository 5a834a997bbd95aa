"""Cells every lesson shares."""

from qlesson.notebook_tools import code

SETUP = code(
    """
    import qlesson as ql
    from qlesson.report import print_table

    ql.show_environment()
    """,
    "nbval-ignore-output",
)
