"""What the lessons use to *show* quantization: examples, real weights, studies, plots, widgets.

Each module serves the lessons; none is needed to quantize a tensor (that is
:mod:`qlesson.quant`). Import what a lesson needs: ``from qlesson.teach import plots, ruler``.

- ``examples``: the small hand-made tensors of the lessons (the 2x4 int4 example, ...);
- ``ruler``: the step-by-step ruler tables of lesson 01;
- ``models``: all-MiniLM-L6-v2 weights and activations, offline;
- ``analysis`` and ``studies``: the measurements the lessons tabulate;
- ``plots``, ``report``: static figures and tables;
- ``widgets``, ``calculator``: the sliders and the calculator page;
"""
