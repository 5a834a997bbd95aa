"""Your granularity in a real engine: MiniLM written in ONNX, GGUF and compressed-tensors formats.

Introduced in lesson 11. Each exporter writes the codes and scales qlesson computed into a file
that a real engine reads (ONNX Runtime, llama.cpp, compressed-tensors), and each comes with the
dequantized weights the file holds, so the engine's embeddings can be checked against qlesson's
simulation of exactly those weights (:mod:`qlesson.engines.common`).
"""
