#!/bin/sh
# The official postgres image's first-start behaviour, reduced to what compose.yaml uses.
set -eu
if [ ! -s "$PGDATA/PG_VERSION" ]; then
  printf '%s\n' "${POSTGRES_PASSWORD:?POSTGRES_PASSWORD is required}" >/tmp/pwfile
  initdb -D "$PGDATA" -U postgres --pwfile=/tmp/pwfile --auth-local=trust --auth-host=scram-sha-256 >/dev/null
  rm -f /tmp/pwfile
  echo "listen_addresses = '*'" >>"$PGDATA/postgresql.conf"
  echo 'host all all all scram-sha-256' >>"$PGDATA/pg_hba.conf"
  if [ -n "${POSTGRES_DB:-}" ] && [ "$POSTGRES_DB" != postgres ]; then
    postgres --single -D "$PGDATA" postgres >/dev/null <<SQL
CREATE DATABASE "$POSTGRES_DB";
SQL
  fi
fi
exec postgres -D "$PGDATA"
