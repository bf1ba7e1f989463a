"""Records: typed model elements, relationship answers, registries of servers and tools."""
