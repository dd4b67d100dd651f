// Preload for the reference Jira server in bench/jira.mjs: it builds
// https://<ATLASSIAN_SITE_NAME>.atlassian.net, so its fetch is pointed at the benchmark's
// loopback fake instead.
const target = process.env.GATEHOUSE_BENCH_JIRA_URL;
const original = globalThis.fetch;
globalThis.fetch = (input, init) => {
  const url = typeof input === 'string' ? input : input instanceof URL ? input.href : input.url;
  return original(url.replace('https://acme.atlassian.net', target), init);
};
