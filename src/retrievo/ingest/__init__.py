"""Sources → loaders → chunkers → hashing. Pure functions where possible; no store access here."""
