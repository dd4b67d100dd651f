// Preload for the reference GitHub server in bench/github.mjs: it hard-codes
// https://api.github.com, so its fetch is pointed at the benchmark's loopback fake instead.
const target = process.env.GATEHOUSE_BENCH_GITHUB_URL;
const original = globalThis.fetch;
globalThis.fetch = (input, init) => {
  const url = typeof input === 'string' ? input : input instanceof URL ? input.href : input.url;
  return original(url.replace('https://api.github.com', target), init);
};
