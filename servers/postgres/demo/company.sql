-- The demo database: a small company. Deterministic (setseed), so runs are comparable.
-- Loaded by `npm run demo` and by the Postgres server's tests, as the database owner.

SELECT setseed(0.42);

CREATE TABLE customers (
  id          integer GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  name        text NOT NULL,
  email       text NOT NULL UNIQUE,
  country     text NOT NULL,
  created_at  timestamptz NOT NULL DEFAULT now()
);
COMMENT ON TABLE customers IS 'People and companies who buy from us';
COMMENT ON COLUMN customers.email IS 'Contact address (PII)';

CREATE TABLE products (
  id        integer GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  sku       text NOT NULL UNIQUE,
  name      text NOT NULL,
  category  text NOT NULL,
  price     numeric(10, 2) NOT NULL CHECK (price >= 0)
);
COMMENT ON TABLE products IS 'The catalogue';

CREATE TABLE orders (
  id           integer GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  customer_id  integer NOT NULL REFERENCES customers (id),
  status       text NOT NULL CHECK (status IN ('pending', 'paid', 'shipped', 'cancelled')),
  ordered_at   timestamptz NOT NULL,
  total        numeric(12, 2) NOT NULL DEFAULT 0
);
CREATE INDEX orders_customer_id_idx ON orders (customer_id);
CREATE INDEX orders_ordered_at_idx ON orders (ordered_at);
COMMENT ON TABLE orders IS 'One row per order; total is the sum of its items';

CREATE TABLE order_items (
  order_id    integer NOT NULL REFERENCES orders (id),
  product_id  integer NOT NULL REFERENCES products (id),
  quantity    integer NOT NULL CHECK (quantity > 0),
  unit_price  numeric(10, 2) NOT NULL,
  PRIMARY KEY (order_id, product_id)
);

CREATE TABLE employees (
  id           integer GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  name         text NOT NULL,
  title        text NOT NULL,
  department   text NOT NULL,
  manager_id   integer REFERENCES employees (id),
  hired_on     date NOT NULL,
  email        text NOT NULL UNIQUE,
  national_id  text NOT NULL
);
COMMENT ON COLUMN employees.national_id IS 'Government identifier (PII, masked by the server)';

-- Not exposed by the demo server (only "public" is): salaries live in their own schema.
CREATE SCHEMA hr;
CREATE TABLE hr.salaries (
  employee_id  integer PRIMARY KEY REFERENCES employees (id),
  amount       numeric(12, 2) NOT NULL,
  currency     text NOT NULL DEFAULT 'EUR'
);

INSERT INTO customers (name, email, country, created_at)
SELECT initcap(first) || ' ' || initcap(last),
       lower(first) || '.' || lower(last) || i || '@example.com',
       (ARRAY['DE', 'FR', 'NL', 'SE', 'US', 'GB', 'ES', 'IT'])[1 + (i % 8)],
       timestamptz '2024-01-01' + (i * interval '37 hours')
FROM generate_series(1, 200) AS i,
     LATERAL (SELECT (ARRAY['ada', 'alan', 'grace', 'linus', 'margaret', 'ken', 'barbara', 'dennis', 'frances', 'edsger'])[1 + (i % 10)] AS first,
                     (ARRAY['lovelace', 'turing', 'hopper', 'torvalds', 'hamilton', 'thompson', 'liskov', 'ritchie', 'allen', 'dijkstra', 'knuth', 'wirth', 'kay'])[1 + (i % 13)] AS last) AS n;

INSERT INTO products (sku, name, category, price)
SELECT 'SKU-' || lpad(i::text, 4, '0'),
       (ARRAY['Desk', 'Chair', 'Lamp', 'Monitor', 'Keyboard', 'Mouse', 'Headset', 'Webcam', 'Dock', 'Cable'])[1 + (i % 10)]
         || ' ' || (ARRAY['Basic', 'Pro', 'Max', 'Mini', 'Plus'])[1 + (i % 5)],
       (ARRAY['furniture', 'furniture', 'lighting', 'displays', 'input', 'input', 'audio', 'video', 'accessories', 'accessories'])[1 + (i % 10)],
       round((5 + random() * 495)::numeric, 2)
FROM generate_series(1, 50) AS i;

INSERT INTO orders (customer_id, status, ordered_at)
SELECT 1 + floor(random() * 200)::int,
       (ARRAY['pending', 'paid', 'paid', 'shipped', 'shipped', 'shipped', 'cancelled'])[1 + floor(random() * 7)::int],
       timestamptz '2025-01-01' + random() * interval '300 days'
FROM generate_series(1, 2000);

INSERT INTO order_items (order_id, product_id, quantity, unit_price)
SELECT o.id, p.id, 1 + floor(random() * 4)::int, p.price
FROM orders o
CROSS JOIN LATERAL (SELECT id, price FROM products ORDER BY random() + o.id * 0 LIMIT 1 + (o.id % 3)) AS p;

UPDATE orders o SET total = s.total
FROM (SELECT order_id, sum(quantity * unit_price) AS total FROM order_items GROUP BY order_id) AS s
WHERE s.order_id = o.id;

INSERT INTO employees (name, title, department, manager_id, hired_on, email, national_id)
SELECT 'Employee ' || i,
       CASE WHEN i = 1 THEN 'CEO' WHEN i <= 5 THEN 'Head of ' || d ELSE (ARRAY['Engineer', 'Analyst', 'Specialist', 'Manager'])[1 + (i % 4)] END,
       d,
       CASE WHEN i = 1 THEN NULL WHEN i <= 5 THEN 1 ELSE 2 + (i % 4) END,
       date '2015-03-01' + (i * 53),
       'employee' || i || '@company.example',
       'NID-' || lpad((1000003 * i % 9999991)::text, 7, '0')
FROM generate_series(1, 40) AS i,
     LATERAL (SELECT (ARRAY['Engineering', 'Sales', 'Finance', 'Operations'])[1 + (i % 4)] AS d) AS dep;

INSERT INTO hr.salaries (employee_id, amount)
SELECT id, 42000 + (id * 1733 % 60000) FROM employees;

ANALYZE;
