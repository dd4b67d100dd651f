// Lint config for every workspace. Type-aware rules need the TypeScript JS API, which is why
// the repo stays on TypeScript 6.0 (see docs/adr/0001-toolchain.md).
import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import unicorn from 'eslint-plugin-unicorn';

// Package boundaries (docs/architecture.md). Everywhere: a package is imported by its exports,
// never by its files, and no relative path climbs into another package.
const anywhere = [
  {
    group: ['@gatehouse/*/src', '@gatehouse/*/src/**', '@gatehouse/*/dist', '@gatehouse/*/dist/**'],
    message: "Import a package by its exports (package.json), not another package's files.",
  },
  {
    regex: '^(\\.\\./){2,}(packages/|servers/)?[\\w.-]+/(src|dist|test)(/|$)',
    message: "A relative import may not reach into another package's files.",
  },
];
// Production code never imports the testkit, a server, or (in servers) the core's wiring.
const production = [
  ...anywhere,
  {
    group: ['@gatehouse/testkit', '@gatehouse/testkit/*'],
    message: 'The testkit is for tests only; production code never imports it.',
  },
  { group: ['@gatehouse/server-*'], message: 'No package imports a server.' },
];
const serverSource = [
  ...production,
  {
    group: ['@gatehouse/core/runtime', '@gatehouse/core/testing'],
    message:
      'A server uses the author API (@gatehouse/core) and the kit (@gatehouse/core/saas); runServer does the wiring.',
  },
];
const restrict = (patterns) => ({ 'no-restricted-imports': ['error', { patterns }] });

export default tseslint.config(
  { ignores: ['**/dist/**', '**/node_modules/**', '**/.turbo/**', '**/coverage/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      'no-console': 'error',
      '@typescript-eslint/consistent-type-imports': 'error',
      // Handlers are async by contract; a handler that happens not to await is fine.
      '@typescript-eslint/require-await': 'off',
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': 'error',
      '@typescript-eslint/switch-exhaustiveness-check': [
        'error',
        { considerDefaultExhaustiveForUnions: true },
      ],
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_' },
      ],
      'no-restricted-syntax': [
        'error',
        {
          selector: 'ExportAllDeclaration',
          message: 'Export named symbols only (docs/architecture.md).',
        },
        {
          selector: "MemberExpression[object.name='process'][property.name='env']",
          message:
            'Read configuration through the config schema (core loadConfig), not process.env.',
        },
      ],
    },
  },
  {
    // Tests, benchmarks, demos and scripts may print and read the environment.
    files: ['**/test/**', 'bench/**', '**/scripts/**', '**/demo/**', '**/*.config.*'],
    rules: {
      'no-console': 'off',
      'no-restricted-syntax': 'off',
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-non-null-assertion': 'off',
      '@typescript-eslint/no-explicit-any': 'off',
      '@typescript-eslint/no-unsafe-call': 'off',
      '@typescript-eslint/no-unsafe-argument': 'off',
      '@typescript-eslint/no-base-to-string': 'off',
      '@typescript-eslint/no-unsafe-return': 'off',
    },
  },
  {
    files: ['**/*.js', '**/*.mjs'],
    ...tseslint.configs.disableTypeChecked,
    languageOptions: {
      ...tseslint.configs.disableTypeChecked.languageOptions,
      globals: {
        process: 'readonly',
        console: 'readonly',
        URL: 'readonly',
        setTimeout: 'readonly',
        clearTimeout: 'readonly',
        setInterval: 'readonly',
        clearInterval: 'readonly',
        AbortController: 'readonly',
        AbortSignal: 'readonly',
        fetch: 'readonly',
        performance: 'readonly',
        Buffer: 'readonly',
        structuredClone: 'readonly',
      },
    },
  },
  { rules: restrict(anywhere) },
  // Each server's tests may use their own sources, never another server's.
  { files: ['servers/**'], rules: restrict([...anywhere, production[production.length - 1]]) },
  {
    files: ['packages/*/src/**'],
    ignores: ['packages/testkit/src/**', 'packages/contract/src/**'],
    rules: restrict(production),
  },
  // The testkit and the contract suite are test code: they may use the testkit.
  {
    files: ['packages/testkit/src/**', 'packages/contract/src/**'],
    rules: restrict([...anywhere, production[production.length - 1]]),
  },
  { files: ['servers/*/src/**'], rules: restrict(serverSource) },
  // The core reads top to bottom: no function of it is longer than a screenful or two
  // (docs/adr/0017-start-in-steps.md), blank lines and comments counted.
  // So does every package's and server's source (docs/adding-a-server.md).
  {
    files: ['packages/*/src/**', 'servers/*/src/**'],
    ignores: ['packages/testkit/src/**'],
    rules: { 'max-lines-per-function': ['error', { max: 150 }] },
  },
  // A vendor fake is a world and its routes: no piece of it longer than two screenfuls.
  {
    files: ['packages/testkit/src/**'],
    rules: { 'max-lines-per-function': ['error', { max: 300 }] },
  },
  // One spelling of file names, as the MCP SDK has: kebab-case (`audit-record.ts`).
  {
    plugins: { unicorn },
    rules: { 'unicorn/filename-case': ['error', { case: 'kebabCase' }] },
  },
);
