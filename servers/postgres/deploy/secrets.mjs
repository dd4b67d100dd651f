// The postgres server's secrets for the Compose stack (docker/make-secrets.mjs calls it): the
// demo database's admin password, the read-only role's password, and the URL the server
// connects with (its upstream secret, postgres_url). `secret(file, make)` keeps a file that
// exists and writes make()'s value otherwise.
export default function makeSecrets(secret, random) {
  secret('postgres_admin_password', () => random());
  const ro = secret('postgres_ro_password', () => random());
  secret(
    'postgres_url',
    () => `postgres://gatehouse_ro:${encodeURIComponent(ro)}@postgres:5432/company\n`,
  );
}
