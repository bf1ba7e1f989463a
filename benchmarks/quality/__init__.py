"""How good are the answers: nDCG, fusion, calibration, "no answer" (docs/benchmarks.md: Retrieval quality, Fusion,
No answer, search_library's similarity scale)."""
