/** `@gatehouse/testkit/slack`: a loopback Slack Web API, its seed workspace, shape validation. */
export { startSlackFake } from './slack-fake.js';
export type {
  FakeSlackChannel,
  FakeSlackMessage,
  FakeSlackUser,
  SlackFake,
  SlackFakeOptions,
  SlackWorld,
} from './slack-fake.js';
export { slackSeed } from './slack-seed.js';
export { validateSlackResponses } from './slack-shapes.js';
