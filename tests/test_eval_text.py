"""The evaluation text carries meaning: each sentence is nearest its paraphrase partner.

(That it is fixed and held out from every calibration text is tested in tests/test_intervals.py.)
"""

from __future__ import annotations

import torch

from qlesson.teach import models
from qlesson.teach.eval_text import EVAL_SENTENCES


def test_each_sentence_is_nearest_its_partner_for_most_pairs():
    model = models.load_minilm()
    emb = torch.nn.functional.normalize(models.embed(model, EVAL_SENTENCES).double(), dim=1)
    sim = emb @ emb.T
    sim.fill_diagonal_(-2.0)  # a sentence is not its own neighbour
    partner = torch.arange(len(EVAL_SENTENCES)) ^ 1  # 0<->1, 2<->3, ...
    hit = sim.argmax(dim=1) == partner
    both = hit.view(-1, 2).all(dim=1)
    # Measured: 110 of 120 pairs (91.7%), 228 of 240 sentences (95.0%).
    assert int(both.sum()) >= 108, f"only {int(both.sum())} of 120 pairs are mutual nearest neighbours"
    assert int(hit.sum()) >= 224, f"only {int(hit.sum())} of 240 sentences have their partner nearest"
