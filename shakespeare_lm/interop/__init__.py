"""The same model in other tools: transformers, ONNX, and benches against them."""
