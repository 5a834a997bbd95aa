"""Root pytest hooks: the jupytext sources beside the notebooks are lessons, not modules.

``--doctest-modules`` would import (run) them; nbval runs their paired ``.ipynb`` instead.
The learner's ``workspace/`` is never collected.
"""

collect_ignore_glob = ["notebooks/*.py", "exercises/*.py", "exercises/solutions/*.py", "workspace/*"]
