"""``retrievo serve``: one ASGI app with the REST API (/api), MCP over streamable HTTP (/mcp) and a search
page (/). ``app.py`` assembles it; ``gate.py`` checks keys and rates, ``rest.py`` the REST routes,
``mcp_mount.py`` and ``mcp_direct.py`` mount the MCP server (through ``retrievo.surfaces.mcp``'s door),
``page.py`` the page, ``embeddings.py`` ``/v1/embeddings``, ``settings.py`` the ``[serve]`` settings.

This module is the package's one public door: the CLI imports only what is named here.
"""

from retrievo.surfaces.http.app import build_app, configure_logging, from_environment
from retrievo.surfaces.http.settings import ServeSettings
from retrievo.surfaces.http.settings import load as load_settings

__all__ = ["ServeSettings", "build_app", "configure_logging", "from_environment", "load_settings"]
