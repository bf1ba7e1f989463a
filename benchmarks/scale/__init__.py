"""Scale and ingest: building, re-indexing, memory while indexing, jobs, model migration, realistic corpora at any
size (docs/benchmarks.md: Building an index; docs/scale.md)."""
