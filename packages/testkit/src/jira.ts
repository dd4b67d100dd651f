/** `@gatehouse/testkit/jira`: a loopback Jira Cloud REST v3 with a real JQL subset, its seed site. */
export { startJiraFake } from './jira-fake.js';
export type { JiraFake } from './jira-fake.js';
export { jiraSeed } from './jira-seed.js';
export type {
  Adf,
  FakeJiraComment,
  FakeJiraIssue,
  FakeJiraProject,
  FakeJiraUser,
  JiraFakeOptions,
  JiraWorld,
} from './jira-site.js';
export { validateAdf } from './jira-adf.js';
export { JqlError, jqlInstant, matches, parseJql } from './jira-jql.js';
export type { JqlClause, JqlOperand, JqlQuery } from './jira-jql.js';
export { ATLASSIAN_SCOPES, AtlassianOAuth } from './jira-oauth.js';
export type { AtlassianOAuthOptions } from './jira-oauth.js';
