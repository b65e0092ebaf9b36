/**
 * The chaos proof, small: `npm run chaos` with 6 runs (3 asking the user, 2 — runs 2 and 5 — with a
 * sub-plan step whose child run does its own tally step) while the worker, the REST API and the
 * Temporal server (its own, on a SQLite file) are each SIGKILLed twice at seeded times and
 * restarted. scripts/chaos.mjs does the checking (every run completed with its answer, no reply
 * lost, no tool step repeated, every child run completed once and its answer reached its parent,
 * every memory thread whole) and exits non-zero on any violation; this test runs it as a user
 * would and reads its report.
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
  // The summary's named lines: all 6 accepted runs completed (and a start sent again after a lost 201, if any), both child runs too; nothing stuck, repeated or lost.
  assert.match(output, /^ {2}runs started\s+(\d+) \(6 accepted\), \d+ asking, ([2-9]) with a sub-plan$/m);
  const [, started] = /^ {2}runs started\s+(\d+)/m.exec(output) ?? [];
  const [, subs] = / (\d+) with a sub-plan$/m.exec(output) ?? [];
  assert.match(output, new RegExp(`^  runs completed\\s+${started} of ${started}; sub-plan child runs completed ${subs} of ${subs}$`, 'm'));
  assert.match(output, /^ {2}runs stuck\s+0 \(not terminal at the end\); child runs 0$/m);
  assert.match(output, /^ {2}completed steps executed twice\s+0 \(/m);
  assert.match(output, /^ {2}replies lost\s+0 \(/m);
  // Each kind of process was really killed twice, the Temporal server included.
  for (const name of ['worker', 'api', 'temporal']) assert.match(output, new RegExp(`^  ${name}\\s+2\\s`, 'm'), `${name} killed twice:\n${output}`);
  assert.match(output, /^ {2}violations\s+0$/m);
});
