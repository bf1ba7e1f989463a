"""Long-running work around an engine: background jobs and a server tier's job taker (``jobs``), and
``retrievo watch`` (``watch``). They drive an ``Engine`` through its public methods; the surfaces start
them."""
