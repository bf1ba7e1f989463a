"""One thread per search by default: parallelism across searches, not inside one.

On a machine with other work running (a laptop, a shared server, a server's own concurrent requests)
the thread pools a search touches fight over the cores: OpenBLAS's helpers spin after the exact dense
arm's product, a second arm thread waits for a core. With one thread per search the same searches
took 1.7-2.3 ms at p50 instead of 8-9 ms, for a third of the CPU (docs/benchmarks.md, "Busy machine").
``RETRIEVO_QUERY_THREADS`` (``Config.query_threads``) raises the limit for the rare machine that wants
more. The query model already runs on one-thread sessions (``embed/local.py``, spinning off).

The BLAS limit is the process's (OpenBLAS and MKL keep one setting per process): it is applied once,
at an engine's first search, through threadpoolctl. Indexing does no BLAS work that needs threads
(the model runs in onnxruntime with its own pool; the graph index in usearch with its own).
"""

from __future__ import annotations

import threading

_APPLIED: list[int] = []
_LOCK = threading.Lock()


def limit_blas(threads: int) -> None:
    """Set the BLAS libraries' threads to ``threads`` (once per process and value; cheap after)."""
    if _APPLIED and _APPLIED[-1] == threads:
        return
    with _LOCK:
        if _APPLIED and _APPLIED[-1] == threads:
            return
        from threadpoolctl import threadpool_limits

        threadpool_limits(limits=threads, user_api="blas")
        _APPLIED.append(threads)
