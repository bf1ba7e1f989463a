"""Code: indexing repositories, locating the file an issue is about, tokens to the answer, get_context on code
(docs/benchmarks.md: Code, Locating the code an issue is about, Tokens to the answer)."""
