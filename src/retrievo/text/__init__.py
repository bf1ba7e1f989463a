"""Text utilities every floor above needs: content hashes and embedding keys, identifier splitting.

One floor below ``ingest`` (which chunks and keys text) and ``store`` (which keys, tokenises and checks
it), so neither imports the other for them.
"""
