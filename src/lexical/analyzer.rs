//! Text analysis shared by indexing and querying: jieba segmentation, lower-casing, English stemming.
