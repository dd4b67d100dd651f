import type { FakeComment, FakeIssue, FakeRepo, GitHubWorld } from './github-world.js';
import { EPOCH, userId } from './github-world.js';

/**
 * The GitHub fake's answers as GitHub shapes them (the OpenAPI description's schemas: every
 * response is validated against it in the tests), built from the world's state.
 */

/** A user as GitHub's `simple-user` schema has it. */
export function simpleUser(api: string, web: string, login: string) {
  const id = userId(login);
  const bot = login.endsWith('[bot]');
  const l = encodeURIComponent(login);
  return {
    login,
    id,
    node_id: Buffer.from(`04:User${id}`).toString('base64'),
    avatar_url: `https://avatars.example.test/u/${id}?v=4`,
    gravatar_id: '',
    url: `${api}/users/${l}`,
    html_url: `${web}/${l}`,
    followers_url: `${api}/users/${l}/followers`,
    following_url: `${api}/users/${l}/following{/other_user}`,
    gists_url: `${api}/users/${l}/gists{/gist_id}`,
    starred_url: `${api}/users/${l}/starred{/owner}{/repo}`,
    subscriptions_url: `${api}/users/${l}/subscriptions`,
    organizations_url: `${api}/users/${l}/orgs`,
    repos_url: `${api}/users/${l}/repos`,
    events_url: `${api}/users/${l}/events{/privacy}`,
    received_events_url: `${api}/users/${l}/received_events`,
    type: bot ? 'Bot' : 'User',
    user_view_type: 'public',
    site_admin: false,
  };
}

/** The shapes of one world's objects: labels, milestones, issues, comments, repositories. */
export function githubShapes(world: GitHubWorld) {
  const { fullName, permission } = world;
  const user = (login: string) => simpleUser(world.base, world.web, login);
  const labelObj = (r: FakeRepo, name: string) => {
    const l = r.labels.find((x) => x.name === name) ?? { name, color: 'ededed', description: null };
    const id = userId(`${fullName(r)}#label:${name}`);
    return {
      id,
      node_id: Buffer.from(`LA_${id}`).toString('base64'),
      url: `${world.base}/repos/${fullName(r)}/labels/${encodeURIComponent(name)}`,
      name,
      description: l.description,
      color: l.color,
      default: false,
    };
  };
  const milestoneObj = (r: FakeRepo, number: number | null) => {
    const m = r.milestones.find((x) => x.number === number);
    if (m === undefined) return null;
    const inMilestone = r.issues.filter((i) => i.milestone === m.number && !i.pull_request);
    const id = userId(`${fullName(r)}#milestone:${m.number}`);
    return {
      url: `${world.base}/repos/${fullName(r)}/milestones/${m.number}`,
      html_url: `${world.web}/${fullName(r)}/milestone/${m.number}`,
      labels_url: `${world.base}/repos/${fullName(r)}/milestones/${m.number}/labels`,
      id,
      node_id: Buffer.from(`MI_${id}`).toString('base64'),
      number: m.number,
      state: m.state,
      title: m.title,
      description: m.description,
      creator: user(r.owner),
      open_issues: inMilestone.filter((i) => i.state === 'open').length,
      closed_issues: inMilestone.filter((i) => i.state === 'closed').length,
      created_at: new Date(EPOCH).toISOString(),
      updated_at: new Date(EPOCH).toISOString(),
      closed_at: null,
      due_on: m.due_on,
    };
  };
  const association = (r: FakeRepo, login: string) =>
    login === r.owner ? 'OWNER' : r.collaborators[login] !== undefined ? 'COLLABORATOR' : 'NONE';
  const issueObj = (r: FakeRepo, i: FakeIssue) => {
    const id = userId(`${fullName(r)}#${i.number}`);
    const url = `${world.base}/repos/${fullName(r)}/issues/${i.number}`;
    return {
      id,
      node_id: Buffer.from(`I_${id}`).toString('base64'),
      url,
      repository_url: `${world.base}/repos/${fullName(r)}`,
      labels_url: `${url}/labels{/name}`,
      comments_url: `${url}/comments`,
      events_url: `${url}/events`,
      html_url: `${world.web}/${fullName(r)}/${i.pull_request ? 'pull' : 'issues'}/${i.number}`,
      number: i.number,
      state: i.state,
      state_reason: i.state_reason,
      title: i.title,
      body: i.body,
      user: user(i.user),
      labels: i.labels.map((l) => labelObj(r, l)),
      assignee: i.assignees[0] === undefined ? null : user(i.assignees[0]),
      assignees: i.assignees.map((a) => user(a)),
      milestone: milestoneObj(r, i.milestone),
      locked: i.locked ?? false,
      active_lock_reason: null,
      comments: i.comments.length,
      ...(i.pull_request
        ? {
            pull_request: {
              url: `${world.base}/repos/${fullName(r)}/pulls/${i.number}`,
              html_url: `${world.web}/${fullName(r)}/pull/${i.number}`,
              diff_url: `${world.web}/${fullName(r)}/pull/${i.number}.diff`,
              patch_url: `${world.web}/${fullName(r)}/pull/${i.number}.patch`,
              merged_at: null,
            },
          }
        : {}),
      closed_at: i.closed_at,
      created_at: i.created_at,
      updated_at: i.updated_at,
      author_association: association(r, i.user),
      reactions: {
        url: `${url}/reactions`,
        total_count: 0,
        '+1': 0,
        '-1': 0,
        laugh: 0,
        confused: 0,
        heart: 0,
        hooray: 0,
        eyes: 0,
        rocket: 0,
      },
    };
  };
  const commentObj = (r: FakeRepo, i: FakeIssue, c: FakeComment) => ({
    id: c.id,
    node_id: Buffer.from(`IC_${c.id}`).toString('base64'),
    url: `${world.base}/repos/${fullName(r)}/issues/comments/${c.id}`,
    html_url: `${world.web}/${fullName(r)}/issues/${i.number}#issuecomment-${c.id}`,
    body: c.body,
    user: user(c.user),
    created_at: c.created_at,
    updated_at: c.updated_at,
    issue_url: `${world.base}/repos/${fullName(r)}/issues/${i.number}`,
    author_association: association(r, c.user),
  });
  const repositoryObj = (r: FakeRepo, login: string) => {
    const id = userId(`repo:${fullName(r)}`);
    const api = `${world.base}/repos/${fullName(r)}`;
    const perm = permission(r, login);
    const level = ['read', 'triage', 'write', 'maintain', 'admin'].indexOf(perm);
    return {
      id,
      node_id: Buffer.from(`R_${id}`).toString('base64'),
      name: r.name,
      full_name: fullName(r),
      owner: user(r.owner),
      private: r.private,
      html_url: `${world.web}/${fullName(r)}`,
      description: null,
      fork: false,
      url: api,
      archive_url: `${api}/{archive_format}{/ref}`,
      assignees_url: `${api}/assignees{/user}`,
      blobs_url: `${api}/git/blobs{/sha}`,
      branches_url: `${api}/branches{/branch}`,
      collaborators_url: `${api}/collaborators{/collaborator}`,
      comments_url: `${api}/comments{/number}`,
      commits_url: `${api}/commits{/sha}`,
      compare_url: `${api}/compare/{base}...{head}`,
      contents_url: `${api}/contents/{+path}`,
      contributors_url: `${api}/contributors`,
      deployments_url: `${api}/deployments`,
      downloads_url: `${api}/downloads`,
      events_url: `${api}/events`,
      forks_url: `${api}/forks`,
      git_commits_url: `${api}/git/commits{/sha}`,
      git_refs_url: `${api}/git/refs{/sha}`,
      git_tags_url: `${api}/git/tags{/sha}`,
      git_url: `git://github.example.test/${fullName(r)}.git`,
      issue_comment_url: `${api}/issues/comments{/number}`,
      issue_events_url: `${api}/issues/events{/number}`,
      issues_url: `${api}/issues{/number}`,
      keys_url: `${api}/keys{/key_id}`,
      labels_url: `${api}/labels{/name}`,
      languages_url: `${api}/languages`,
      merges_url: `${api}/merges`,
      milestones_url: `${api}/milestones{/number}`,
      notifications_url: `${api}/notifications{?since,all,participating}`,
      pulls_url: `${api}/pulls{/number}`,
      releases_url: `${api}/releases{/id}`,
      ssh_url: `git@github.example.test:${fullName(r)}.git`,
      stargazers_url: `${api}/stargazers`,
      statuses_url: `${api}/statuses/{sha}`,
      subscribers_url: `${api}/subscribers`,
      subscription_url: `${api}/subscription`,
      tags_url: `${api}/tags`,
      teams_url: `${api}/teams`,
      trees_url: `${api}/git/trees{/sha}`,
      clone_url: `${world.web}/${fullName(r)}.git`,
      mirror_url: null,
      hooks_url: `${api}/hooks`,
      svn_url: `${world.web}/${fullName(r)}`,
      homepage: null,
      language: 'TypeScript',
      forks_count: 0,
      forks: 0,
      stargazers_count: 0,
      watchers_count: 0,
      watchers: 0,
      size: 1,
      default_branch: 'main',
      open_issues_count: r.issues.filter((i) => i.state === 'open').length,
      open_issues: r.issues.filter((i) => i.state === 'open').length,
      is_template: false,
      topics: [],
      has_issues: true,
      has_projects: false,
      has_wiki: false,
      has_pages: false,
      has_downloads: false,
      has_discussions: false,
      archived: false,
      disabled: false,
      visibility: r.private ? 'private' : 'public',
      pushed_at: new Date(EPOCH).toISOString(),
      created_at: new Date(EPOCH).toISOString(),
      updated_at: new Date(EPOCH).toISOString(),
      permissions: {
        admin: level >= 4,
        maintain: level >= 3,
        push: level >= 2,
        triage: level >= 1,
        pull: level >= 0,
      },
      license: null,
      network_count: 0,
      subscribers_count: 0,
    };
  };
  return {
    user,
    label: labelObj,
    milestone: milestoneObj,
    issue: issueObj,
    comment: commentObj,
    repository: repositoryObj,
  };
}

/** The shapes {@link githubShapes} builds. */
export type GitHubShapes = ReturnType<typeof githubShapes>;
