"""The on-disk index: its layout (file names, versions, derived texts), the loader (store) and BM25."""
