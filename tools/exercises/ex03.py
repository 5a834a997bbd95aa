from common import answer, check, header, md, recall_task

NAME = "03_per_channel_on_real_weights"
CELLS = [
    *header("03", "Per-channel on real weights", NAME, "Channel statistics on real MiniLM weights and conv weights."),
    md(
        """
        ## Task 1 · Absmax of every output channel

        Write `channel_absmax(w)` for a Linear weight `[out, in]`: one value per output channel.
        """
    ),
    answer(
        """
        def channel_absmax(w):
            ...  # STUB
            # BEGIN SOLUTION
            return w.abs().amax(dim=1)
            # END SOLUTION
        """
    ),
    check("03.channel_absmax", "channel_absmax"),
    md(
        """
        ## Task 2 · Find the outlier channel of a real MiniLM layer

        Write `outlier_channel(w)`: the index (an `int`) of the loudest output channel. The check
        runs it on a small matrix with a negative outlier and on MiniLM's `L0.output` weight.
        """
    ),
    answer(
        """
        def outlier_channel(w):
            ...  # STUB
            # BEGIN SOLUTION
            return int(w.abs().amax(dim=1).argmax())
            # END SOLUTION
        """
    ),
    check("03.outlier_channel", "outlier_channel"),
    md(
        """
        ## Task 3 · Per-output-channel scales of a conv weight

        Write `conv_scales(w, bits)` for a Conv2d weight `[out, in, kh, kw]`: one symmetric scale per
        output channel.
        """
    ),
    answer(
        """
        def conv_scales(w, bits):
            ...  # STUB
            # BEGIN SOLUTION
            return w.abs().flatten(1).amax(dim=1) / (2 ** (bits - 1) - 1)
            # END SOLUTION
        """
    ),
    check("03.conv_scales", "conv_scales"),
    md("## Recall"),
    *recall_task("03", 1, "64"),
    *recall_task("03", 2, '"a"'),
]
