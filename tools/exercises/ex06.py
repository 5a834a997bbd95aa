from common import answer, check, header, md, recall_task

NAME = "06_dequant_in_gemm"
CELLS = [
    *header("06", "Dequantization in a GEMM", NAME, "Where the scales go in `y = x @ W.T`."),
    md(
        """
        ## Task 1 · Scales after the product

        Write `scale_after_gemm(x, q, s)`: `x [M, K]`, integer codes `q [N, K]` (float tensor), per
        output channel scales `s [N]`; return `y [M, N]` without dequantizing the weight.
        """
    ),
    answer(
        """
        def scale_after_gemm(x, q, s):
            ...  # STUB
            # BEGIN SOLUTION
            return (x @ q.T) * s
            # END SOLUTION
        """
    ),
    check("06.scale_after_gemm", "scale_after_gemm"),
    md(
        """
        ## Task 2 · Per-group scales

        Write `group_gemm(x, q, s, group_size)` with `s [N, K // group_size]`. The scales change along
        K, so they cannot simply multiply the output.
        """
    ),
    answer(
        """
        def group_gemm(x, q, s, group_size):
            ...  # STUB
            # BEGIN SOLUTION
            return x @ (q * s.repeat_interleave(group_size, dim=1)).T
            # END SOLUTION
        """
    ),
    check("06.group_gemm", "group_gemm"),
    md(
        """
        ## Task 3 · The W8A8 rescale

        Write `w8a8_rescale(acc, s_x, s_w)`: the int32 accumulator `acc [M, N]` (as floats), per-token
        scales `s_x [M]`, per-channel scales `s_w [N]`.
        """
    ),
    answer(
        """
        def w8a8_rescale(acc, s_x, s_w):
            ...  # STUB
            # BEGIN SOLUTION
            return acc * torch.outer(s_x, s_w)
            # END SOLUTION
        """
    ),
    check("06.w8a8_rescale", "w8a8_rescale"),
    md("## Recall"),
    *recall_task("06", 2, "256 * 4096"),
    *recall_task("06", 5, '"a"'),
]
