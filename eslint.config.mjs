// ESLint guards for the codebase (run by `npm test` and `npm run lint`).
// Workflow code is replayed by Temporal: it must not reach Node built-ins, I/O or the worker/client
// SDKs (the rules Temporal's TypeScript samples use), and no promise anywhere may float unhandled.
// Import circles and imports up a layer are refused by dependency-cruiser (.dependency-cruiser.cjs).
import { builtinModules } from 'node:module';
import tseslint from 'typescript-eslint';

const nodeModules = builtinModules.filter((m) => !m.startsWith('_')).flatMap((m) => [m, `node:${m}`]);
const nodeBan = nodeModules.map((name) => ({ name, message: 'workflow code is deterministic: no Node built-ins (do I/O in an activity)' }));

/** What workflow code imports besides its own folder: it must be as deterministic as the workflows (no Node built-ins). */
const WORKFLOW_IMPORTS = [
  'src/engine/**/*.ts',
  'src/planning/**/*.ts',
  'src/memory/**/*.ts',
  'src/sessions/**/*.ts',
  'src/text/**/*.ts',
  'src/calls/**/*.ts',
  'src/agents/names.ts',
  'src/agents/profile.ts',
  'src/blueprints/blueprint.ts',
];

export default tseslint.config(
  { ignores: ['node_modules/**', '.tools/**', 'data/**', 'bench/peers/**', 'dist/**'] },
  {
    files: ['src/**/*.ts', 'test/**/*.ts', 'bench/**/*.ts'],
    extends: [tseslint.configs.recommended],
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    rules: {
      // A leading underscore says "unused on purpose": a parameter a signature needs, a field taken out of a rest.
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', destructuredArrayIgnorePattern: '^_', ignoreRestSiblings: true }],
      // node:test's test() and describe() return promises the runner itself awaits.
      '@typescript-eslint/no-floating-promises': ['error', { allowForKnownSafeCalls: [{ from: 'package', package: 'node:test', name: ['test', 'describe', 'it', 'suite'] }] }],
      '@typescript-eslint/no-misused-promises': ['error', { checksVoidReturn: false }],
      'no-duplicate-imports': ['error', { allowSeparateTypeImports: true }],
    },
  },
  {
    files: WORKFLOW_IMPORTS,
    rules: { '@typescript-eslint/no-restricted-imports': ['error', { paths: nodeBan }] },
  },
  {
    files: ['src/workflows/**/*.ts'],
    rules: {
      // Types from activity modules are fine (erased); their values are not.
      '@typescript-eslint/no-restricted-imports': [
        'error',
        {
          paths: [
            ...nodeBan,
            { name: '@temporalio/activity', message: 'workflows call activities through proxyActivities, not this module' },
            { name: '@temporalio/client', message: 'workflow code cannot use the client: start children with @temporalio/workflow' },
            { name: '@temporalio/worker', message: 'the worker SDK does not belong in workflow code' },
          ],
          patterns: [
            { group: ['**/activities/*', '**/store/*', '**/api/*', '**/llm/openai-*'], message: 'workflow code imports only pure modules; side effects live in activities', allowTypeImports: true },
          ],
        },
      ],
    },
  },
);
