/**
 * The chaos proof, small: `npm run chaos` with 6 runs (3 asking the user) while the worker, the
 * REST API and the Temporal server (its own, on a SQLite file) are each SIGKILLed twice at seeded
 * times and restarted. scripts/chaos.mjs does the checking (every run completed with its answer,
 * no reply lost, no tool step repeated, every memory thread whole) and exits non-zero on any
 * violation; this test runs it as a user would and reads its report.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import path from 'node:path';
import { test } from 'node:test';

const root = path.resolve(__dirname, '..');

// Restarting a worker takes ~10 s here (tsx), longer on a loaded machine: more time than the suite's default per test.
test('runs survive SIGKILLs of the worker, the API and the Temporal server: nothing lost, nothing repeated', { timeout: 480_000 }, async (t) => {
  const args = ['scripts/chaos.mjs', '--runs', '6', '--duration', '30', '--seed', '7', '--kills', '2', '--settle', '120'];
  // The suite's server is not used: the script runs its own, which it kills.
  const env: NodeJS.ProcessEnv = { ...process.env, NO_COLOR: '1' };
  delete env.TEMPORAL_ADDRESS;
  const child = spawn(process.execPath, args, { cwd: root, env, stdio: ['ignore', 'pipe', 'pipe'] });
  // A test that times out still stops the script, which stops what it started (its SIGTERM handler).
  t.signal.addEventListener('abort', () => child.kill('SIGTERM'), { once: true });
  let output = '';
  child.stdout.on('data', (d: Buffer) => (output += d.toString()));
  child.stderr.on('data', (d: Buffer) => (output += d.toString()));
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));

  assert.equal(code, 0, `npm run chaos failed:\n${output}`);
  assert.match(output, /^PASS: every run completed/m);
  // Each kind of process was really killed twice, the Temporal server included.
  for (const name of ['worker', 'api', 'temporal']) assert.match(output, new RegExp(`^  ${name}\\s+2\\s`, 'm'), `${name} killed twice:\n${output}`);
  // A reply whose 202 was lost to a kill counts as sent, not accepted; the checks above it still hold.
  assert.match(output, /runs \d+ \(6 accepted\), completed \d+, replies accepted \d+, violations 0/);
});
