// Preload for the reference Slack server in bench/slack.mjs: it hard-codes
// https://slack.com/api/, so its fetch is pointed at the benchmark's loopback fake instead.
const target = process.env.GATEHOUSE_BENCH_SLACK_URL;
const original = globalThis.fetch;
globalThis.fetch = (input, init) => {
  const url = typeof input === 'string' ? input : input instanceof URL ? input.href : input.url;
  return original(url.replace('https://slack.com/api/', target), init);
};
