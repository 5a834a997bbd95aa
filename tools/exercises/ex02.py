from common import answer, check, header, md, recall_task

NAME = "02_one_ruler_or_many"
CELLS = [
    *header("02", "One ruler or many", NAME, "Per-tensor and per-channel int4 scales by hand, then the apply-now exercise."),
    md(
        """
        ## Task 1 · One int4 scale for the whole tensor

        Write `per_tensor_scale(w, bits)`: one number for the whole weight.
        """
    ),
    answer(
        """
        def per_tensor_scale(w, bits):
            ...  # STUB
            # BEGIN SOLUTION
            return w.abs().max() / (2 ** (bits - 1) - 1)
            # END SOLUTION
        """
    ),
    check("02.per_tensor_scale", "per_tensor_scale"),
    md(
        """
        ## Task 2 · One int4 scale per output channel

        Write `per_channel_scale(w, bits)` for a weight `[out_features, in_features]`: a tensor of
        shape `[out_features]`.
        """
    ),
    answer(
        """
        def per_channel_scale(w, bits):
            ...  # STUB
            # BEGIN SOLUTION
            return w.abs().amax(dim=1) / (2 ** (bits - 1) - 1)
            # END SOLUTION
        """
    ),
    check("02.per_channel_scale", "per_channel_scale"),
    md(
        """
        ## Task 3 · Symmetric per-channel quantization of `[N, K]`

        Write `quantize_per_channel(w, bits)` returning `(q, scale)`: codes `[N, K]` (float tensor of
        integers, clamped to the restricted range) and the scales `[N]`.
        """
    ),
    answer(
        """
        def quantize_per_channel(w, bits):
            ...  # STUB
            # BEGIN SOLUTION
            qmax = 2 ** (bits - 1) - 1
            scale = w.abs().amax(dim=1) / qmax
            q = torch.clamp(torch.round(w / scale[:, None]), -qmax, qmax)
            return q, scale
            # END SOLUTION
        """
    ),
    check("02.quantize_per_channel", "quantize_per_channel"),
    md(
        """
        ## Task 4 · Apply now: two rows, one ruler or two

        Take two rows of very different magnitude. Write `row_maes(w, bits)` returning
        `(shared, own)`: each row's mean absolute error after fake-quantizing with one shared
        (per-tensor) scale, and with one scale per row. Then compare the reconstructions by eye in
        the cell after the check.
        """
    ),
    answer(
        """
        def row_maes(w, bits):
            ...  # STUB
            # BEGIN SOLUTION
            shared = ql.fake_quantize(w, bits)
            own = ql.fake_quantize(w, bits, granularity=ql.PerChannel(0))
            return (shared - w).abs().mean(dim=1), (own - w).abs().mean(dim=1)
            # END SOLUTION
        """
    ),
    check("02.row_maes", "row_maes"),
    md(
        """
        By eye: the shared scale erases the quiet row; its own scale keeps it. (Sketch from memory:
        *one tensor scale → small row collapses; one channel scale → small row survives.*)
        """
    ),
    md("## Recall"),
    *recall_task("02", 2, '"a"'),
    *recall_task("02", 4, '"a"'),
    *recall_task("02", 6, "114"),
]
