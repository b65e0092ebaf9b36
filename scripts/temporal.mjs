// `npm run temporal` — the Temporal dev server alone, in the foreground, with its data in
// ${DATA_DIR:-./data}/temporal.sqlite so workflows survive restarts.
import path from 'node:path';
import { ROOT, bold, ensureTemporal, fail, log, parseHostPort, startTemporalDev, stopTemporalServers } from './lib.mjs';

const dataDir = process.env.DATA_DIR ? path.resolve(process.env.DATA_DIR) : path.join(ROOT, 'data');
const port = process.env.TEMPORAL_ADDRESS ? parseHostPort(process.env.TEMPORAL_ADDRESS).port : 7233;
const uiPort = Number(process.env.TEMPORAL_UI_PORT || 8233);
const namespace = process.env.TEMPORAL_NAMESPACE || 'default';
if (!Number.isInteger(uiPort) || uiPort <= 0 || uiPort > 65535) fail(`TEMPORAL_UI_PORT=${process.env.TEMPORAL_UI_PORT} is not a port`);

const bin = await ensureTemporal();
process.umask(0o077); // the server's SQLite file holds every run's history: this user's alone
const dbFile = path.join(dataDir, 'temporal.sqlite');
log(`starting the Temporal dev server (data: ${dbFile})…`);
let server;
let stopping = false;
const shutdown = async (signal) => {
  if (stopping) return;
  stopping = true;
  log(`${signal}: stopping the Temporal dev server…`);
  await stopTemporalServers(); // also while it is still starting
  process.exit(0);
};
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) process.on(signal, () => void shutdown(signal));
try {
  server = await startTemporalDev({ bin, dbFile, port, uiPort, namespace });
} catch (err) {
  if (stopping) await new Promise(() => {});
  fail(err.message);
}

console.log(
  [
    '',
    bold('Temporal dev server is running'),
    `  gRPC address   ${server.address}   (TEMPORAL_ADDRESS=${server.address})`,
    `  Web UI         ${server.uiUrl}`,
    `  namespace      ${namespace}`,
    `  data           ${dbFile}`,
    '  Ctrl-C to stop.',
    '',
  ].join('\n'),
);

server.process.on('exit', (code, signal) => {
  if (stopping) return;
  fail(`the Temporal dev server exited unexpectedly (${signal ? `signal ${signal}` : `exit code ${code}`})`);
});
