-- Run as a superuser (or a role with CREATEROLE that owns the tables), connected to the
-- database. Replace gatehouse_ro, the password and "company".
CREATE ROLE gatehouse_ro LOGIN PASSWORD 'change-me'
  NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS;
ALTER ROLE gatehouse_ro SET default_transaction_read_only = on;
ALTER ROLE gatehouse_ro SET statement_timeout = '15s';
GRANT CONNECT ON DATABASE "company" TO gatehouse_ro;
REVOKE CREATE ON SCHEMA public FROM PUBLIC; -- the default since PostgreSQL 15
GRANT USAGE ON SCHEMA public TO gatehouse_ro;
GRANT SELECT ON ALL TABLES IN SCHEMA public TO gatehouse_ro;
-- Tables created later by the owner are readable too (run as that owner):
ALTER DEFAULT PRIVILEGES IN SCHEMA public GRANT SELECT ON TABLES TO gatehouse_ro;
