/**
 * Bundles the workflow code once (webpack, a few seconds) so that every test worker can
 * load the bundle instead of rebuilding it: `tsx scripts/bundle-workflows.ts [outfile]`.
 * Default outfile: .tools/workflow-bundle.js. Used by scripts/test.mjs, which passes the
 * path to the tests as THREADLINE_WORKFLOW_BUNDLE.
 */
import { mkdirSync, renameSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { bundleWorkflows } from '../src/workflow-bundle';

async function main(): Promise<void> {
  const outfile = path.resolve(process.argv[2] ?? path.join(__dirname, '..', '.tools', 'workflow-bundle.js'));
  const started = Date.now();
  const code = await bundleWorkflows();
  mkdirSync(path.dirname(outfile), { recursive: true });
  // Write then rename, so a concurrent reader never sees half a bundle.
  const tmp = `${outfile}.${process.pid}.tmp`;
  writeFileSync(tmp, code);
  renameSync(tmp, outfile);
  const kb = Math.round(Buffer.byteLength(code) / 1024);
  const shown = path.relative(process.cwd(), outfile);
  console.log(`[threadline] bundled workflows → ${shown.startsWith('..') ? outfile : shown} (${kb} KiB, ${Date.now() - started} ms)`);
}

main().catch((err: unknown) => {
  console.error('[threadline] bundling the workflows failed:', err);
  process.exit(1);
});
