"""The course machinery: authoring, checking, grading, recall, the learner's workspace.

- ``notebooks``: jupytext sources <-> notebooks, execution, hygiene checks (authors);
- ``exercises``: learner notebooks generated from the solution notebooks (authors);
- ``checking``: the checker engine (cases, named mistakes); ``tasks``: the task registry;
- ``recall``: recall questions (multiple choice and numeric);
- ``grade``: ``python -m qlesson grade``, the score table;
- ``workspace``: the learner's own copies of the notebooks;
- ``env``: the environment printout at the top of every notebook.

What belongs to one lesson (its tasks and recall questions) lives in
:mod:`qlesson.lessons`, one module per lesson number.
"""
