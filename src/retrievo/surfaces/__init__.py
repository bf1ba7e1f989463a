"""Surfaces: CLI, MCP, HTTP. Thin: parse, call one engine method, format."""
