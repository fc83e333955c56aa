#!/bin/bash
# First start: a cluster whose superuser is $POSTGRES_USER with $POSTGRES_PASSWORD, reachable
# over the network with a password, and the database $POSTGRES_DB. Every start: postgres as the
# postgres user, in the foreground, so the container stops when it does.
set -euo pipefail
bin=/usr/lib/postgresql/15/bin
user=${POSTGRES_USER:-postgres}
db=${POSTGRES_DB:-$user}
chown -R postgres:postgres "$PGDATA" /run/postgresql
if [ ! -s "$PGDATA/PG_VERSION" ]; then
    : "${POSTGRES_PASSWORD:?POSTGRES_PASSWORD is required}"
    pw=$(mktemp) && printf '%s' "$POSTGRES_PASSWORD" > "$pw" && chown postgres "$pw"
    su postgres -c "$bin/initdb -D '$PGDATA' -U '$user' --pwfile='$pw' --auth-local=trust --auth-host=scram-sha-256" >/dev/null
    rm -f "$pw"
    echo "host all all 0.0.0.0/0 scram-sha-256" >> "$PGDATA/pg_hba.conf"
    su postgres -c "$bin/pg_ctl -D '$PGDATA' -o \"-c listen_addresses=''\" -w start" >/dev/null
    if [ "$db" != "postgres" ]; then
        su postgres -c "$bin/psql -U '$user' -d postgres -v ON_ERROR_STOP=1 -qc 'CREATE DATABASE \"$db\"'"
    fi
    su postgres -c "$bin/pg_ctl -D '$PGDATA' -m fast -w stop" >/dev/null
fi
exec setpriv --reuid=postgres --regid=postgres --init-groups "$bin/postgres" -D "$PGDATA" -c listen_addresses='*'

