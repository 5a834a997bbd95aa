from common import answer, check, header, md, recall_task

NAME = "01_the_ruler"
CELLS = [
    *header("01", "The ruler", NAME, "Scale, rounding, clamping and the asymmetric zero point, by hand with torch."),
    md(
        """
        ## Task 1 · The scale of a symmetric signed ruler (warm-up)

        Write `symmetric_scale(x, bits)`: the scale that puts the largest magnitude of `x` exactly on
        the last tick of a symmetric signed `bits`-bit ruler (restricted range).
        """
    ),
    answer(
        """
        def symmetric_scale(x, bits):
            ...  # STUB
            # BEGIN SOLUTION
            return x.abs().max() / (2 ** (bits - 1) - 1)
            # END SOLUTION
        """
    ),
    check("01.symmetric_scale", "symmetric_scale"),
    md(
        """
        ## Task 2 · Round and clamp

        Write `quantize_symmetric(x, scale, bits)`: integer codes (as a float tensor) with
        `torch.round`, clamped to `[-(2**(bits-1) - 1), 2**(bits-1) - 1]`. The check includes values
        beyond the ruler and exact ties.
        """
    ),
    answer(
        """
        def quantize_symmetric(x, scale, bits):
            ...  # STUB
            # BEGIN SOLUTION
            qmax = 2 ** (bits - 1) - 1
            return torch.clamp(torch.round(x / scale), -qmax, qmax)
            # END SOLUTION
        """
    ),
    check("01.quantize_symmetric", "quantize_symmetric"),
    md(
        """
        ## Task 3 · Asymmetric unsigned scale and zero point

        Write `asymmetric_qparams(x, bits)` returning `(scale, zero_point)` for unsigned codes
        `0 .. 2**bits - 1`. Widen the range to include 0 first, and make the zero point an integer
        code.
        """
    ),
    answer(
        """
        def asymmetric_qparams(x, bits):
            ...  # STUB
            # BEGIN SOLUTION
            rmin = torch.clamp(x.min(), max=0.0)
            rmax = torch.clamp(x.max(), min=0.0)
            scale = (rmax - rmin) / (2**bits - 1)
            zero_point = torch.clamp(torch.round(-rmin / scale), 0, 2**bits - 1)
            return scale, zero_point
            # END SOLUTION
        """
    ),
    check("01.asymmetric_qparams", "asymmetric_qparams"),
    md("## Recall"),
    *recall_task("01", 1, "1.27"),
    *recall_task("01", 4, '"a"'),
]
