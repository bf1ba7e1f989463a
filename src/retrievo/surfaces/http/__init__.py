"""``retrievo serve``: one ASGI app with the REST API (/api), MCP over streamable HTTP (/mcp) and a search page (/)."""
