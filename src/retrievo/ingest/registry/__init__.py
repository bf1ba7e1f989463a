"""Registries of MCP servers, A2A agents and their tools as searchable entities (issue 12, seed 001)."""
