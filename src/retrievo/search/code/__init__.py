"""Code: the structural arm and the symbol graph, files ranked for a code question, ``locate``."""
