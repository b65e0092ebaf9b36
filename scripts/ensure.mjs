// `node scripts/ensure.mjs`       — install npm dependencies if needed and build the Temporal CLI if needed.
// `node scripts/ensure.mjs deps`  — npm dependencies only.
import { ensureDeps, ensureTemporal, fail } from './lib.mjs';

const what = process.argv[2] ?? 'all';
if (!['all', 'deps', 'temporal'].includes(what)) fail(`usage: node scripts/ensure.mjs [deps|temporal]`);
if (what !== 'temporal') ensureDeps();
if (what !== 'deps') await ensureTemporal();
