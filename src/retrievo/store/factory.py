"""Open the store a Config names: a PostgreSQL URL (``--store``) or the SQLite file (``--db``)."""

from __future__ import annotations

from retrievo.config import Config, cache_folder
from retrievo.store.base import Store


def open_store(config: Config, create: bool) -> Store:
    if config.store:
        from retrievo.store.postgres import PostgresStore

        return PostgresStore(
            config.store,
            create=create,
            ef_search=config.ef_search,
            cache_dir=cache_folder(config),
            read_urls=config.read_stores,
            max_replica_lag_s=config.max_replica_lag,
        )
    from retrievo.store.sqlite import SQLiteStore

    return SQLiteStore(config.db, create=create)
