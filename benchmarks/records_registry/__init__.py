"""Records and registries: ArchiMate relationship questions, the synthetic 10k-element model, registry search
(docs/benchmarks.md: Records and registries)."""
