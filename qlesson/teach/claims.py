"""Claims of the interview note (a source text) that lesson 03 judges, each with the course's verdict."""

# The interview note's claims, each with the course's verdict. Where the verdict rests on
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
