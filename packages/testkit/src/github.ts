/** `@gatehouse/testkit/github`: a loopback GitHub REST API, its seed world, OpenAPI validation. */
export { startGitHubAppFake, startGitHubFake } from './github-fake.js';
export type { GitHubFake } from './github-fake.js';
export type { GitHubOAuthOptions } from './github-oauth.js';
export { parseSearchQuery } from './github-routes-search.js';
export type {
  FakeComment,
  FakeCredential,
  FakeIssue,
  FakeRepo,
  GitHubFakeFailure,
  GitHubFakeOptions,
} from './github-world.js';
export { validateGitHubResponses } from './github-openapi.js';
export { githubSeed } from './github-seed.js';
