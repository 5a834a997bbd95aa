from common import answer, check, header, md, recall_task

NAME = "05_zero_points_and_activations"
CELLS = [
    *header("05", "Zero points and activations", NAME, "Zero points of shifted channels, per-token scales, SmoothQuant."),
    md(
        """
        ## Task 1 · The zero point of a negative-only channel

        Write `asymmetric_zero_point(x, bits)`: the unsigned zero point after widening the range to
        include 0 (an integer code in `0 .. 2**bits - 1`).
        """
    ),
    answer(
        """
        def asymmetric_zero_point(x, bits):
            ...  # STUB
            # BEGIN SOLUTION
            rmin = torch.clamp(x.min(), max=0.0)
            rmax = torch.clamp(x.max(), min=0.0)
            scale = (rmax - rmin) / (2**bits - 1)
            return torch.clamp(torch.round(-rmin / scale), 0, 2**bits - 1)
            # END SOLUTION
        """
    ),
    check("05.asymmetric_zero_point", "asymmetric_zero_point"),
    md(
        """
        ## Task 2 · Per-token activation scales

        Write `per_token_scales(x, bits)` for activations `[tokens, features]`: one symmetric scale
        per token.
        """
    ),
    answer(
        """
        def per_token_scales(x, bits):
            ...  # STUB
            # BEGIN SOLUTION
            return x.abs().amax(dim=1) / (2 ** (bits - 1) - 1)
            # END SOLUTION
        """
    ),
    check("05.per_token_scales", "per_token_scales"),
    md(
        """
        ## Task 3 · SmoothQuant's factors

        Write `smooth_factors(x, w, alpha)` for `x [T, K]` and `w [N, K]`:
        `s_j = max|x[:, j]| ** alpha / max|w[:, j]| ** (1 - alpha)`.
        """
    ),
    answer(
        """
        def smooth_factors(x, w, alpha):
            ...  # STUB
            # BEGIN SOLUTION
            return x.abs().amax(dim=0) ** alpha / w.abs().amax(dim=0) ** (1 - alpha)
            # END SOLUTION
        """
    ),
    check("05.smooth_factors", "smooth_factors"),
    md("## Recall"),
    *recall_task("05", 2, "255"),
    *recall_task("05", 3, '"a"'),
]
