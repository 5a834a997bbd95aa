"""Results the source texts quote from elsewhere. Shown as claims, never as course results."""

QUOTED = (
    "LLaMA-7B weights, perplexity: FP16 5.67, per-tensor INT8 6.24, per-channel INT8 5.71, "
    "per-channel INT4 5.89 (interview note)",
    "ResNet-50 activations, top-1: FP32 76.1%, per-tensor 74.2%, per-channel 75.7% (interview note)",
    "per-channel lowers quantization error by 50-80% versus per-tensor (interview note)",
)
