//! Embedded Qdrant engine backend (qdrant-edge). See the module docs of `vector`.
