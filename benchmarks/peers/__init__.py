"""retrievo beside LanceDB, txtai, bm25s and faiss (README.md here; docs/benchmarks.md: Search speed beside the peers)."""
