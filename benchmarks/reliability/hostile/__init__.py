"""The standing hostile campaign (issue 9): kill -9, hostile queries, hostile files, MCP abuse.

Run all of it: ``.venv/bin/python -m benchmarks.reliability.hostile`` (minutes); ``--quick`` for the small
subset that ``make test`` also runs. Results: docs/reliability.md.
"""
