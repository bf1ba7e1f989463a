#!/bin/sh
# The replica: on first start, a base backup of the primary with -R (standby.signal and the primary's
# connection written for it); then PostgreSQL as a hot standby, streaming from the primary.
set -e
if [ ! -s "$PGDATA/PG_VERSION" ]; then
    until pg_isready -h primary -U replicator; do sleep 1; done
    pg_basebackup -h primary -U replicator -D "$PGDATA" -R -X stream -P
    chown -R postgres:postgres "$PGDATA"
    chmod 700 "$PGDATA"
fi
exec su postgres -c "postgres -D $PGDATA -c hot_standby=on"
