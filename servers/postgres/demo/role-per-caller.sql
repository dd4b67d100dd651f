-- A role per caller (servers/postgres/README.md, "A role per caller"; ADR 0027). Run as a
-- superuser (or a role with CREATEROLE that owns the tables), connected to the database, after
-- its tables exist. Replace gatehouse_login, the password and "company".

-- The login role the server connects as. NOINHERIT: it reads nothing of the roles it may switch
-- to outside the calls that switch; it needs CONNECT and USAGE on the schemas (to resolve names).
CREATE ROLE gatehouse_login LOGIN NOINHERIT PASSWORD 'change-me'
  NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS;
ALTER ROLE gatehouse_login SET default_transaction_read_only = on;
GRANT CONNECT ON DATABASE "company" TO gatehouse_login;
REVOKE CREATE ON SCHEMA public FROM PUBLIC; -- the default since PostgreSQL 15
GRANT USAGE ON SCHEMA public TO gatehouse_login;

-- An analyst reads every table in public.
CREATE ROLE analyst NOLOGIN;
GRANT USAGE ON SCHEMA public TO analyst;
GRANT SELECT ON ALL TABLES IN SCHEMA public TO analyst;

-- A sales rep reads customers, orders and products (not order_items, employees) — and of customers and orders only those of
-- the countries they cover, as sales_regions says for the caller in gatehouse.principal.
CREATE TABLE sales_regions (
  principal  text NOT NULL,
  country    text NOT NULL,
  PRIMARY KEY (principal, country)
);
INSERT INTO sales_regions VALUES ('rex@company.example', 'SE'), ('rex@company.example', 'NL');
CREATE ROLE sales_rep NOLOGIN;
GRANT USAGE ON SCHEMA public TO sales_rep;
GRANT SELECT ON customers, orders, products, sales_regions TO sales_rep;
GRANT SELECT ON sales_regions TO analyst;

ALTER TABLE customers ENABLE ROW LEVEL SECURITY;
CREATE POLICY analysts_read_all ON customers TO analyst USING (true);
CREATE POLICY reps_read_their_region ON customers TO sales_rep
  USING (country IN (SELECT r.country FROM sales_regions r
                     WHERE r.principal = current_setting('gatehouse.principal', true)));
ALTER TABLE orders ENABLE ROW LEVEL SECURITY;
CREATE POLICY analysts_read_all ON orders TO analyst USING (true);
CREATE POLICY reps_read_their_region ON orders TO sales_rep
  USING (customer_id IN (SELECT c.id FROM customers c JOIN sales_regions r ON r.country = c.country
                         WHERE r.principal = current_setting('gatehouse.principal', true)));

-- The login role may switch to each mapped role (SET) without inheriting what it reads
-- (INHERIT FALSE: PostgreSQL 16+; before it, NOINHERIT on the login role does the same).
GRANT analyst TO gatehouse_login WITH INHERIT FALSE;
GRANT sales_rep TO gatehouse_login WITH INHERIT FALSE;
