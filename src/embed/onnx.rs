//! The ONNX embedder (fastembed + ONNX Runtime, loaded dynamically).
