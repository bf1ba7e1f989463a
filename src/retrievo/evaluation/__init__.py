"""Retrieval evaluation on BEIR-layout datasets: metrics, loading, and the eval runner."""
