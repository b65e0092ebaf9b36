// `node scripts/build.mjs` — compiles src/ to dist/ (lib.mjs buildDist); `npm run worker`, `npm run api`,
// `npm start`, `npm run cluster` and the Dockerfile run it before they start a worker or an API.
import { buildDist, fail } from './lib.mjs';

await buildDist().catch((err) => fail(`building dist/ failed: ${err instanceof Error ? err.message : String(err)}`));
