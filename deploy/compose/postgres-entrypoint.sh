#!/bin/sh
# First start: a cluster whose `postgres` user has $POSTGRES_PASSWORD (scram-sha-256 over
# TCP; the password goes to initdb through a file, never a command line), and a `bgbench`
# database. Then PostgreSQL in the foreground (it ends on SIGTERM, as `docker stop` sends).
set -eu
if [ ! -s "$PGDATA/PG_VERSION" ]; then
    : "${POSTGRES_PASSWORD:?set POSTGRES_PASSWORD}"
    pwfile="$(mktemp)"
    printf '%s\n' "$POSTGRES_PASSWORD" >"$pwfile"
    initdb -U postgres --pwfile="$pwfile" --auth-local=trust --auth-host=scram-sha-256 \
        -D "$PGDATA" >/dev/null
    rm -f "$pwfile"
    echo "host all all all scram-sha-256" >>"$PGDATA/pg_hba.conf"
    pg_ctl -D "$PGDATA" -o "-c listen_addresses=''" -w start >/dev/null
    psql -q -U postgres -c "CREATE DATABASE bgbench" >/dev/null
    pg_ctl -D "$PGDATA" -m fast -w stop >/dev/null
fi
unset POSTGRES_PASSWORD
exec postgres -D "$PGDATA" -c listen_addresses='*' -c max_connections=200 "$@"
