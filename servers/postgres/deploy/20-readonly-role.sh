#!/bin/sh
# Runs once, when the PostgreSQL container initialises an empty data directory (after
# 10-company.sql): creates the read-only role Gatehouse connects as, with the password from the
# postgres_ro_password secret (never a literal in a file of the repository).
set -eu
password="$(cat /run/secrets/postgres_ro_password)"
sed -e "s/'change-me'/'$(printf '%s' "$password" | sed "s/'/''/g")'/" /gatehouse/readonly-role.sql |
  psql -v ON_ERROR_STOP=1 --username "$POSTGRES_USER" --dbname "$POSTGRES_DB"
