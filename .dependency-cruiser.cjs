// The shape of src/'s imports, checked by `npm run lint` (and so by `npm test`): no import circle,
// type-only imports included, and no import up a layer. `npm run graph` draws the graph.
/**
 * The layers of src/, lowest first: a module imports from its own layer or a lower one, never a
 * higher one. Domain: pure models, the engine (what workflows run) and the model calls' schemas, prompts and demo answers. Infrastructure: model
 * providers and prompts, memory and other stores, tools. Orchestration: Temporal workflows,
 * activities and clients. Entry points: the API, the CLI, the worker.
 */
const LAYERS = [
  ['text', 'types', 'config.ts', 'planning', 'memory', 'agents', 'blueprints', 'skills', 'sessions', 'engine', 'calls'],
  ['llm', 'longterm', 'tools', 'store', 'usage', 'auth', 'telemetry', 'mcp', 'live'],
  ['activities', 'workflows', 'temporal'],
  ['api', 'cli', 'worker.ts', 'workflow-bundle.ts'],
];
const NAMES = ['domain', 'infrastructure', 'orchestration', 'entry points'];
const pathOf = (parts) => `^src/(${parts.map((p) => p.replace('.', '\\.')).join('|')})($|/)`;

/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      severity: 'error',
      comment: 'An import circle (type-only imports count): move what both sides need into a module of its own.',
      from: { path: '^src/' },
      to: { circular: true },
    },
    ...LAYERS.slice(0, -1).map((layer, i) => ({
      name: `layer-${i + 1}-${NAMES[i].replace(' ', '-')}`,
      severity: 'error',
      comment: `${NAMES[i]} (${layer.join(', ')}) may not import from a higher layer (${LAYERS.slice(i + 1).flat().join(', ')}).`,
      from: { path: pathOf(layer) },
      to: { path: pathOf(LAYERS.slice(i + 1).flat()) },
    })),
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    // Type-only imports are edges too: a circle of types still ties the modules' meaning together.
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    exclude: { path: '\\.d\\.ts$' },
  },
};
