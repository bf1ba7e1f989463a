"""The MCP server (official ``mcp`` SDK): ``server.py`` assembles it from one module per toolset (``docs``,
``similar``, ``code``, ``records``, ``registry``, ``library``, ``admin``); ``wire.py`` is what goes over the
wire, ``schemas.py`` the tools' input and output shapes, ``scope.py`` which collections a call may read,
``toolsets.py`` which tools are offered, ``answers.py`` how a search becomes an answer.

This module is the package's one public door: the other surfaces (the CLI's `retrievo mcp`, the HTTP
app's /mcp and /api) import only what is named here (tests/test_layers.py holds them to it).
"""

from retrievo.surfaces.mcp.scope import NoSuchCollection, NotServed
from retrievo.surfaces.mcp.server import build_server, serve
from retrievo.surfaces.mcp.toolsets import parse_toolsets
from retrievo.surfaces.mcp.wire import Offered, RetrievoMCPServer, registered, without_titles

__all__ = [
    "NoSuchCollection",
    "NotServed",
    "Offered",
    "RetrievoMCPServer",
    "build_server",
    "parse_toolsets",
    "registered",
    "serve",
    "without_titles",
]
