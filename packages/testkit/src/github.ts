/** `@gatehouse/testkit/github`: a loopback GitHub REST API, its seed world, OpenAPI validation. */
export { parseSearchQuery, startGitHubFake } from './github-fake.js';
export type {
  FakeComment,
  FakeCredential,
  FakeIssue,
  FakeRepo,
  GitHubFake,
  GitHubFakeFailure,
  GitHubFakeOptions,
} from './github-fake.js';
export { validateGitHubResponses } from './github-openapi.js';
export { githubSeed } from './github-seed.js';
