// `node scripts/build-worker.mjs` — compiles src/ to dist/ for the worker (lib.mjs buildWorker); `npm run worker`,
// `npm start`, `npm run cluster` and the Dockerfile run it before they start a worker.
import { buildWorker, fail } from './lib.mjs';

await buildWorker().catch((err) => fail(`building the worker failed: ${err instanceof Error ? err.message : String(err)}`));
