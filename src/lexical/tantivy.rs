//! tantivy backend of the lexical index.
