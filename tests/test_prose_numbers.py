"""Every decimal number a lesson's prose states must be one its stored run printed (or its code contains).

nbval catches an output that changes; this catches the sentence beside it that goes stale. A prose number
with ``d`` decimals matches a printed number that rounds to it at ``d`` decimals. Numbers the prose derives
by hand from printed ones (a ratio, a widget's readout) are listed in ``DERIVED`` with how they are derived,
so a new one cannot slip in unchecked.
"""

import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LESSONS = sorted((ROOT / "notebooks").glob("[01][0-9]_*.ipynb"))
PROSE_DECIMAL = re.compile(r"(?<![\w.])(\d+\.\d+)(?![\w.])")
PRINTED = re.compile(r"\d+\.\d+|\d+")

DERIVED: dict[str, dict[str, str]] = {
    "01": {
        "4.5": "0.69 / (0.3 / 2): the error over the rounding bound",
        "1.07": "the widget's readout at 3 bits (the slider, not a cell, prints it)",
        "0.98": "the widget's readout at 4 bits",
        "1.175": "0.17 / (2.17 / 15): section 5's zero point before rounding",
    },
    "02": {
        "114.3": "1.8 x 127 / 2.0: channel 1's exact code before rounding (the note prints 115)",
        "0.5": "half a tick, the rounding threshold",
        "1.476": "0.2214 / 0.15: where row A's largest value passes half a shared tick",
        "1.48": "the slider's first step past 1.476",
        "0.222": "1.48 x 0.15",
    },
    "04": {"4.010": "4 + 16 / 1536: int4 per-channel's bits on rows of 1536"},
    "05": {
        "6.5": "the control's SQNR minus per-tensor's (the granularity table)",
        "0.94": "the hand example's channel range [-1.70, -0.94]",
        "4.4": "the weights' SQNR before minus after smoothing feature 99 alone",
        "4.6": "63's median |x| on ordinary tokens over the typical feature's (profile table, unrounded: 4.57)",
        "7.7": "267's median |x| on ordinary tokens over the typical feature's (profile table, unrounded: 7.70)",
    },
    "06": {"4.125": "Q4_0-style fp16 scale per 128: 4 + 16 / 128", "4.16": "4 + (16 + 4) / 128, GPTQ's packed zero"},
    "07": {
        "0.061": "1.70 / 7 / 4: a quarter of the shared tick, the mean error of uniform rounding",
        "0.94": "a value of the example channel, quoted from the table's input",
        "1.43": "a value of the example channel",
        "1.11": "a value of the example channel",
        "2.08": "the GELU row's range, 1.91 - (-0.17)",
        "1.97": "(1.91 / 7) / (2.08 / 15): the zero point's tick against symmetric's",
        "2.14": "(1.91 / 7) / (1.91 / 15): one more bit's tick",
        "4.1": "0.049 / 0.012: the dip's error cut by the zero point",
        "3.6": "0.0494 / 0.0138: the dip's error cut by one more bit",
    },
    "08": {"4.4": "31 / 7: 6-bit codes' top code against int4's (the bound columns, 0.246 / 0.056)"},
    "09": {"7.5": "AutoGPTQ's divisor, (qmax - qmin) / 2 for codes -8 .. 7"},
    "11": {
        "7.5": "the engine's divisor, (qmax - qmin) / 2 for codes -8 .. 7",
        "4.25": "4 + 32 / 128: int4-g128's bits per Linear weight in the ONNX file, 4-bit codes and one float32 "
        "scale per 128",
    },
}


def _prose_and_printed(path: Path) -> tuple[list[str], list[str]]:
    cells = json.loads(path.read_text())["cells"]
    prose = ["".join(c["source"]) for c in cells if c["cell_type"] == "markdown"]
    printed = []
    for c in cells:
        if c["cell_type"] != "code":
            continue
        printed.append("".join(c["source"]))
        for o in c.get("outputs", []):
            printed.append("".join(o.get("text", "")))
            printed.append("".join(o.get("data", {}).get("text/plain", "")))
    return prose, printed


def _matches(number: str, printed: list[float], text: str) -> bool:
    decimals = len(number.split(".")[1])
    return number in text or any(abs(round(v, decimals) - float(number)) < 1e-9 for v in printed)


def test_the_check_catches_a_stale_number():
    printed = [0.6412, 42.0]
    assert _matches("0.64", printed, "") and _matches("42.0", printed, "")
    assert _matches("0.641", printed, "") and not _matches("0.65", printed, "") and not _matches("0.643", printed, "")


@pytest.mark.parametrize("path", LESSONS, ids=lambda p: p.name[:2])
def test_every_prose_decimal_is_printed_or_derived(path):
    prose, printed = _prose_and_printed(path)
    text = "\n".join(printed)
    assert any(o for o in printed), f"{path.name} has no stored outputs: re-execute it"
    values = [float(v) for v in PRINTED.findall(text)]
    allowed = DERIVED.get(path.name[:2], {})
    stale = sorted(
        {n for md in prose for n in PROSE_DECIMAL.findall(md) if n not in allowed and not _matches(n, values, text)}
    )
    assert not stale, (
        f"{path.name}: prose states {stale}, which no output of the stored run prints; update the sentence, "
        "or, if it is derived by hand from printed numbers, add it to DERIVED with its derivation"
    )
    unused = sorted(n for n in allowed if not any(n in md for md in prose))
    assert not unused, f"{path.name}: DERIVED lists {unused}, which the prose no longer states: remove them"
