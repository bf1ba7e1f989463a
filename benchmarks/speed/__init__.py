"""How fast, and what a call costs: query latency, the arms, ANN, start-up, serving, MCP (docs/benchmarks.md: A million
chunks, Serving a team, Servers as a tier, One thread per search, Point in time, What an agent pays over MCP)."""
