"""Search: arms are run by the store; fusion, relevance and degraded mode live here."""
