// A private PostgreSQL server for a script that must crash and restart one (`npm run chaos -- --cluster`):
// initdb into a scratch directory, the postmaster on a port of its own, crashed (SIGKILL of it and its
// backends, or an immediate stop) and started again on the same port and data directory. Never the
// machine's shared server, which others use. Built-ins only, like lib.mjs.
import { spawn } from 'node:child_process';
import { chownSync, existsSync, mkdirSync, readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { appendOutput, execFileP, sleep, stopProcess } from './lib.mjs';

/** The directory of initdb, postgres and pg_isready: PG_BINDIR, else the newest /usr/lib/postgresql/<v>/bin, else `pg_config --bindir`. */
async function binDir() {
  if (process.env.PG_BINDIR) return process.env.PG_BINDIR;
  const root = '/usr/lib/postgresql';
  const versions = existsSync(root) ? readdirSync(root).filter((v) => existsSync(path.join(root, v, 'bin', 'initdb'))) : [];
  versions.sort((a, b) => Number(b) - Number(a));
  if (versions.length) return path.join(root, versions[0], 'bin');
  const r = await execFileP('pg_config', ['--bindir']);
  const dir = r.ok ? r.stdout.trim() : '';
  if (dir && existsSync(path.join(dir, 'initdb'))) return dir;
  throw new Error('initdb was not found (PG_BINDIR, /usr/lib/postgresql/*/bin, pg_config --bindir): install the PostgreSQL server (apt-get install postgresql)');
}

/** As root, the server must run as an unprivileged user (it refuses root): `postgres` from /etc/passwd. */
function serverUser() {
  if (process.getuid?.() !== 0) return {};
  const line = readFileSync('/etc/passwd', 'utf8')
    .split('\n')
    .find((l) => l.startsWith('postgres:'));
  if (!line) throw new Error('running as root, and there is no user `postgres` to run a scratch PostgreSQL server as');
  const [, , uid, gid] = line.split(':');
  return { uid: Number(uid), gid: Number(gid) };
}

/** Pids whose parent is `pid` (the postmaster's backends and helpers), from /proc. */
function childrenOf(pid) {
  const out = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      // /proc/<pid>/stat: `pid (comm) state ppid …`; comm may hold spaces, so read after its last ')'.
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      const [state, ppid] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (Number(ppid) === pid && state !== 'Z') out.push(Number(name));
    } catch {
      /* gone meanwhile */
    }
  }
  return out;
}

const alive = (pid) => {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2)[0] !== 'Z';
  } catch {
    return false;
  }
};

/**
 * Creates a server's data directory under `dir` (which it creates; as root, owned by `postgres`) and
 * returns its handle: `pg` ({host, port, user, password}, as postgresFromEnv gives), `start()` (spawns
 * the postmaster, resolves { process } once it accepts connections; its output is appended to
 * `logFile`), `crash(child, how)` ('kill': SIGKILL of the postmaster and every backend at once;
 * 'immediate': SIGQUIT, what `pg_ctl stop -m immediate` sends — both leave the data to crash recovery),
 * and `stop(child)` (a fast shutdown).
 */
export async function scratchPostgres({ dir, port, logFile, maxConnections = 300 }) {
  const bin = await binDir();
  const user = serverUser();
  const dataDir = path.join(dir, 'data');
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  if (user.uid !== undefined) chownSync(dir, user.uid, user.gid);
  const init = await new Promise((resolve) => {
    const child = spawn(path.join(bin, 'initdb'), ['-D', dataDir, '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--locale=C', '--no-sync'], { ...user, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (out += d));
    child.on('error', (err) => resolve({ ok: false, out: err.message }));
    child.on('exit', (code) => resolve({ ok: code === 0, out }));
  });
  if (!init.ok) throw new Error(`initdb ${dataDir} failed: ${init.out}`);
  const args = ['-D', dataDir, '-p', String(port), '-c', 'listen_addresses=127.0.0.1', '-c', `unix_socket_directories=${dir}`, '-c', `max_connections=${maxConnections}`];

  async function start({ timeoutMs = 120_000 } = {}) {
    // Its own process group, so that a terminal's Ctrl-C reaches only the script, which stops it last.
    const child = spawn(path.join(bin, 'postgres'), args, { ...user, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    appendOutput(child, logFile);
    const deadline = Date.now() + timeoutMs;
    // pg_isready answers 0 once connections are accepted (after crash recovery, on a restart).
    for (;;) {
      if (child.exitCode !== null || child.signalCode !== null) throw new Error(`postgres exited (${child.signalCode ?? child.exitCode}) while starting; see ${logFile}`);
      const r = await execFileP(path.join(bin, 'pg_isready'), ['-h', '127.0.0.1', '-p', String(port), '-U', 'postgres'], 5_000);
      if (r.ok) return { process: child };
      if (Date.now() > deadline) {
        await stopProcess(child, { signal: 'SIGKILL', graceMs: 1000 });
        throw new Error(`postgres did not accept connections on 127.0.0.1:${port} within ${timeoutMs / 1000} s; see ${logFile}`);
      }
      await sleep(200);
    }
  }

  async function crash(child, how = 'kill') {
    const pid = child.pid;
    const backends = childrenOf(pid);
    if (how === 'immediate') process.kill(pid, 'SIGQUIT');
    else for (const p of [pid, ...backends]) process.kill(p, 'SIGKILL');
    // A restart must find no process of the old server attached to its shared memory.
    const deadline = Date.now() + 30_000;
    while ([pid, ...backends].some(alive) && Date.now() < deadline) await sleep(50);
  }

  return {
    pg: { host: '127.0.0.1', port, user: 'postgres', password: '' },
    dataDir,
    start,
    crash,
    stop: (child) => stopProcess(child, { signal: 'SIGINT', graceMs: 15_000 }),
  };
}
