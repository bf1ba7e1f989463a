"""Reliability: the hostile campaign (``hostile``) and kill -9 during background jobs (docs/reliability.md)."""
