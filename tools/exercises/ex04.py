from common import answer, check, header, md, recall_task

NAME = "04_groups_and_formats"
CELLS = [
    *header("04", "Groups and formats", NAME, "Per-group quantization, its metadata, and llama.cpp's Q4_0."),
    md(
        """
        ## Task 1 · Per-group quantization along `in_features`

        Write `quantize_per_group(w, bits, group_size)` for `w [N, K]`: symmetric codes `[N, K]` and
        scales `[N, K // group_size]`, groups being contiguous runs along K.
        """
    ),
    answer(
        """
        def quantize_per_group(w, bits, group_size):
            ...  # STUB
            # BEGIN SOLUTION
            n, k = w.shape
            qmax = 2 ** (bits - 1) - 1
            groups = w.reshape(n, k // group_size, group_size)
            scale = groups.abs().amax(dim=-1) / qmax
            q = torch.clamp(torch.round(groups / scale[..., None]), -qmax, qmax)
            return q.reshape(n, k), scale
            # END SOLUTION
        """
    ),
    check("04.quantize_per_group", "quantize_per_group"),
    md(
        """
        ## Task 2 · Count the metadata bytes

        Write `metadata_bytes(n, k, group_size, scale_bytes)`: bytes of scales for per-group
        quantization of an `[n, k]` weight.
        """
    ),
    answer(
        """
        def metadata_bytes(n, k, group_size, scale_bytes):
            ...  # STUB
            # BEGIN SOLUTION
            return n * (k // group_size) * scale_bytes
            # END SOLUTION
        """
    ),
    check("04.metadata_bytes", "metadata_bytes"),
    md(
        """
        ## Task 3 · Bits per weight

        Write `bits_per_weight(bits, group_size, scale_bits)`: code bits plus the scale's share.
        """
    ),
    answer(
        """
        def bits_per_weight(bits, group_size, scale_bits):
            ...  # STUB
            # BEGIN SOLUTION
            return bits + scale_bits / group_size
            # END SOLUTION
        """
    ),
    check("04.bits_per_weight", "bits_per_weight"),
    md(
        """
        ## Task 4 · Predict Q4_0's bits per weight

        A Q4_0 block holds 32 weights: an fp16 scale, then the 4-bit codes packed two per byte.
        Compute its bits per weight (a number, not a function).
        """
    ),
    answer(
        """
        q4_0_bits = ...  # STUB
        # BEGIN SOLUTION
        q4_0_bits = (2 + 32 // 2) * 8 / 32
        # END SOLUTION
        """
    ),
    check("04.q4_0_bits_per_weight", "q4_0_bits"),
    md("## Recall"),
    *recall_task("04", 2, '"a"'),
    *recall_task("04", 6, "32"),
]
