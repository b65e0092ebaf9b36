/**
 * Loaded into every test file's process (scripts/test.mjs passes it with --import): once the file's
 * tests and hooks have ended, a handle one of them left open (a timer, a socket) must not keep the
 * process, and with it the whole suite, alive until CI's limit. The process exits after a grace that
 * its own after-hooks fit in, naming what was still open so the leak can be found.
 * (`--test-force-exit` would do it too, but cuts the TAP summary scripts/test.mjs reads.)
 * Plain JavaScript, and only on the main thread: worker threads (Temporal's workflow thread) inherit
 * --import without the TypeScript loader, and have no tests of their own.
 */
import { isMainThread } from 'node:worker_threads';

const GRACE_MS = 60_000;

if (isMainThread) {
  const { after } = await import('node:test');
  after(() => {
    const timer = setTimeout(() => {
      console.error(`[exit-guard] ${process.argv[1] ?? 'a test file'}: still running ${GRACE_MS / 1000} s after its tests ended, held by ${process.getActiveResourcesInfo().join(', ')}; exiting`);
      process.exit();
    }, GRACE_MS);
    timer.unref(); // only fires when something else holds the process
  });
}
