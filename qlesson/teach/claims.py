"""Results the source texts quote from elsewhere. Shown as claims, never as course results."""

QUOTED = (
    "LLaMA-7B weights, perplexity: FP16 5.67, per-tensor INT8 6.24, per-channel INT8 5.71, "
    "per-channel INT4 5.89 (interview note)",
    "ResNet-50 activations, top-1: FP32 76.1%, per-tensor 74.2%, per-channel 75.7% (interview note)",
    "per-channel lowers quantization error by 50-80% versus per-tensor (interview note)",
)


# The interview note's other claims, each with the course's verdict. Where the verdict rests on
# a computation, lesson 03 prints it beside the claim; the rest cite the reference code.
JUDGED = (
    (
        "GPTQ and AWQ default to per-channel scales",
        "partly: the GPTQ paper's script defaults to one scale per row (--groupsize -1), but the "
        "tools that ship checkpoints (AutoGPTQ/GPTQModel group_size=128, llm-awq q_group_size=128) "
        "default to groups of 128 along the input dimension, with a zero point per group",
    ),
    (
        "WMMA supports per-channel scales",
        "misleading: WMMA and mma instructions only multiply and accumulate tiles; a per-output-channel "
        "scale is applied by the kernel after the K loop (the epilogue), a per-group scale inside it",
    ),
)
