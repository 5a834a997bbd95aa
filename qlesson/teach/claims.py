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
        "it depends on the tool: one scale per output row is the default of the GPTQ paper's script "
        "(--groupsize -1, asymmetric unless --sym), of AutoGPTQ (group_size=-1, sym=True) and of llm-awq "
        "(--q_group_size -1, with a zero point unless --no_zero_point); GPTQModel (group_size=128) and "
        "AutoAWQ (q_group_size=128, zero_point=True) default to groups of 128 along the input dimension",
    ),
    (
        "WMMA supports per-channel scales",
        "misleading: WMMA and mma instructions (through Hopper) only multiply and accumulate tiles; a "
        "per-output-channel scale is applied by the kernel after the K loop (the epilogue), a per-group "
        "scale inside it. Blackwell's block-scaled MMA applies scales in hardware, but per block of "
        "16 or 32 values along K (MXFP4, NVFP4), not per channel",
    ),
)
