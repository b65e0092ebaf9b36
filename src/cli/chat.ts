/**
 * `npm run chat` — the terminal client. Starts a run over the REST API,
 * follows its Server-Sent Events and prints each step as it happens, asks the
 * person when the run asks, and ends with the answer and the run's Web UI link.
 * Without a goal it is an interactive session. What is printed is decided in
 * the pure module `./render`; this file does the I/O.
 *
 *   npm run chat -- "what is 12*7?"
 *   npm run chat -- --user ada            (interactive)
 *   printf 'yes\n' | npm run chat -- "…"  (replies read from stdin when it is not a terminal)
 */
import os from 'node:os';
import readline from 'node:readline';
import { parseArgs } from 'node:util';
import { input } from '@inquirer/prompts';
import { z } from 'zod';
import { loadConfig, runUiUrl, type Config } from '../config';
import { ApiClient, ApiUnreachableError } from './api-client';
import { diffStates, isEnded, pendingQuestion, renderEvent, type RunState } from './render';

const USAGE = `usage: npm run chat -- [--user NAME] ["goal"]

  with a goal   runs it, prints each step as it happens, asks you when the run asks, prints the answer
  without       an interactive session: type goals one after another; /exit or Ctrl-D to quit

  Ctrl-C while a run is going detaches from it; the run itself keeps going on the server.
  When stdin is not a terminal, goals and replies are read from it line by line.
  Exit code with a goal: 0 when the run completed, 1 when it failed or was cancelled, 130 when you detached.

  THREADLINE_API_URL   the REST API (default http://$HOST:$PORT, i.e. http://127.0.0.1:3000)
  THREADLINE_USER      the user id when --user is not given (default: your OS user name)`;

/** How long to keep retrying when the API goes away in the middle of a run. */
const RECONNECT_FOR_MS = 30_000;

/** A line from the person at the terminal (or from piped stdin). */
interface Prompter {
  /** The trimmed line; null when the person is done (Ctrl-D, Ctrl-C, end of input) or `signal` aborted. */
  ask(message: string, signal?: AbortSignal): Promise<string | null>;
  close(): void;
}

/** Interactive prompts on a terminal. */
class TerminalPrompter implements Prompter {
  async ask(message: string, signal?: AbortSignal): Promise<string | null> {
    // Inquirer ends the prompt on Ctrl-C but not on Ctrl-D; abort it ourselves on Ctrl-D.
    const controller = new AbortController();
    const onKey = (_: unknown, key: { ctrl?: boolean; name?: string } | undefined) => {
      if (key?.ctrl && key.name === 'd') controller.abort();
    };
    const onAbort = () => controller.abort();
    signal?.addEventListener('abort', onAbort);
    process.stdin.on('keypress', onKey);
    try {
      return (await input({ message, required: true }, { signal: controller.signal })).trim();
    } catch (err) {
      if (err instanceof Error && (err.name === 'ExitPromptError' || err.name === 'AbortPromptError')) return null;
      throw err;
    } finally {
      process.stdin.off('keypress', onKey);
      signal?.removeEventListener('abort', onAbort);
    }
  }

  close(): void {}
}

/** Lines of piped stdin, so the client is scriptable: `printf 'yes\n' | npm run chat -- "goal"`. */
class LinePrompter implements Prompter {
  private readonly rl = readline.createInterface({ input: process.stdin, terminal: false });
  private readonly lines = this.rl[Symbol.asyncIterator]();

  constructor(private readonly print: (line: string) => void) {}

  async ask(message: string, signal?: AbortSignal): Promise<string | null> {
    for (;;) {
      const next = await untilAborted(this.lines.next(), signal);
      if (next === null) return null;
      if (next.done) {
        this.print(`${message}: (end of input)`);
        return null;
      }
      const line = next.value.trim();
      if (line === '') continue;
      this.print(`${message}: ${line}`); // echoed, so a transcript reads like a conversation
      return line;
    }
  }

  close(): void {
    this.rl.close();
  }
}

/** `promise`, or null as soon as `signal` aborts. */
function untilAborted<T>(promise: Promise<T>, signal?: AbortSignal): Promise<T | null> {
  if (!signal) return promise;
  if (signal.aborted) return Promise.resolve(null);
  return new Promise<T | null>((resolve, reject) => {
    const onAbort = () => resolve(null);
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (value) => (signal.removeEventListener('abort', onAbort), resolve(value)),
      (err: unknown) => (signal.removeEventListener('abort', onAbort), reject(err)),
    );
  });
}

const sleep = (ms: number, signal: AbortSignal) => untilAborted(new Promise<void>((r) => setTimeout(r, ms)), signal);

/**
 * Ctrl-C outside a prompt (where the terminal turns it into SIGINT): detaches
 * from the run being followed, or else exits. Launchers such as tsx may relay
 * the same Ctrl-C to us a second time a moment later; that copy is ignored.
 */
class Interrupts {
  private onInterrupt: (() => void) | null = null;
  private last = 0;
  private readonly listener = () => {
    const repeat = Date.now() - this.last < 1000;
    this.last = Date.now();
    const handler = this.onInterrupt;
    this.onInterrupt = null;
    if (handler) handler();
    else if (!repeat) process.exit(130);
  };

  constructor() {
    process.on('SIGINT', this.listener);
  }

  /** Runs `work`; a Ctrl-C meanwhile calls `onInterrupt` (once). */
  async during<T>(onInterrupt: () => void, work: () => Promise<T>): Promise<T> {
    this.onInterrupt = onInterrupt;
    try {
      return await work();
    } finally {
      this.onInterrupt = null;
    }
  }

  close(): void {
    process.off('SIGINT', this.listener);
  }
}

interface Session {
  api: ApiClient;
  interrupts: Interrupts;
  config: Config;
  userId: string;
  prompter: Prompter;
  print: (line: string) => void;
}

type Outcome = RunState['status'] | 'detached';

/**
 * Follows a run to its end: prints what changed at each state, answers its
 * questions, and reconnects if the event stream drops. Ctrl-C detaches.
 */
async function followRun(session: Session, runId: string, detach: AbortSignal): Promise<{ outcome: Outcome; last: RunState | null }> {
  const { api, prompter, print } = session;
  // An object, not a `let`: TypeScript does not track assignments made inside `handle`.
  const seen: { last: RunState | null } = { last: null };
  const asked = new Set<string>();
  /** Prints what changed; when the run asks something new, asks the person and posts the reply. False when they quit. */
  const handle = async (state: RunState): Promise<boolean> => {
    for (const event of diffStates(seen.last, state)) print(renderEvent(event));
    seen.last = state;
    const question = pendingQuestion(state);
    if (!question || asked.has(question.stepId)) return true;
    asked.add(question.stepId);
    const text = await prompter.ask('your reply', detach);
    if (text === null) return false;
    if ((await api.reply(runId, text)) === 'not_waiting') print('(the run was no longer waiting for a reply)');
    return true;
  };

  let lostSince: number | null = null;
  for (;;) {
    try {
      for await (const event of api.events(runId, detach)) {
        if (lostSince !== null) print('(reconnected)');
        lostSince = null;
        if (event.type === 'done') break;
        if (!(await handle(event.state))) return { outcome: 'detached', last: seen.last };
        if (isEnded(event.state)) break;
      }
      // The stream ended (done, or the connection closed): the state itself says whether the run has.
      if (!(await handle(await api.getRun(runId)))) return { outcome: 'detached', last: seen.last };
      if (seen.last && isEnded(seen.last)) return { outcome: seen.last.status, last: seen.last };
      await sleep(500, detach);
    } catch (err) {
      if (detach.aborted) return { outcome: 'detached', last: seen.last };
      if (!(err instanceof ApiUnreachableError)) throw err;
      if (lostSince === null) print(`(lost the connection to the API; retrying for ${RECONNECT_FOR_MS / 1000} s — the run itself keeps going)`);
      lostSince ??= Date.now();
      if (Date.now() - lostSince > RECONNECT_FOR_MS) throw err;
      await sleep(1000, detach);
    }
    if (detach.aborted) return { outcome: 'detached', last: seen.last };
  }
}

/** Starts one run for `goal`, follows it, and prints how it ended and where to see it. */
async function runGoal(session: Session, goal: string): Promise<Outcome> {
  const started = await session.api.startRun({ userId: session.userId, goal });
  const link = started.uiUrl ?? runUiUrl(session.config, started.runId);
  session.print(`run ${started.runId} started for ${session.userId}`);
  const detach = new AbortController();
  const { outcome, last } = await session.interrupts.during(
    () => detach.abort(),
    () => followRun(session, started.runId, detach.signal),
  );
  if (outcome === 'detached') {
    const waiting = last?.status === 'waiting_user' ? `, waiting for a reply (POST /v1/runs/${started.runId}/reply)` : '';
    session.print(`\ndetached — run ${started.runId} keeps going on the server${waiting}`);
  }
  session.print(`Web UI: ${link}`);
  return outcome;
}

/** Interactive: goals one after another until /exit, Ctrl-D or Ctrl-C. */
async function interactive(session: Session): Promise<number> {
  const { api, print } = session;
  print(`Threadline chat — API ${api.baseUrl}, user "${session.userId}". Type a goal; /exit or Ctrl-D to quit.`);
  if (!(await api.healthy())) print('warning: the API is up but cannot reach Temporal right now; runs will fail to start until it can.');
  for (;;) {
    const goal = await session.prompter.ask('goal');
    if (goal === null || goal === '/exit' || goal === '/quit') break;
    try {
      await runGoal(session, goal);
    } catch (err) {
      // One failed run does not end the session; the person may fix the cause and go on.
      print(`error: ${errorMessage(err)}`);
    }
    print('');
  }
  print('bye');
  return 0;
}

/** Errors reach the person as one line, never as a stack trace. */
const errorMessage = (err: unknown): string => (err instanceof Error ? err.message : String(err));

/** `THREADLINE_API_URL`, else the address `npm start` serves the API on (a wildcard bind is reached on loopback). */
export function apiBaseUrl(env: NodeJS.ProcessEnv, config: Pick<Config, 'HOST' | 'PORT'>): string {
  const explicit = z.url().optional().safeParse(env.THREADLINE_API_URL || undefined);
  if (!explicit.success) throw new Error(`THREADLINE_API_URL is not a URL: ${env.THREADLINE_API_URL ?? ''}`);
  if (explicit.data) return explicit.data;
  const host = ['0.0.0.0', '::', ''].includes(config.HOST) ? '127.0.0.1' : config.HOST;
  return `http://${host.includes(':') ? `[${host}]` : host}:${config.PORT}`;
}

function osUser(): string | undefined {
  try {
    return os.userInfo().username || undefined;
  } catch {
    return undefined; // no passwd entry (some containers)
  }
}

const ARGS = {
  allowPositionals: true,
  options: { user: { type: 'string', short: 'u' }, help: { type: 'boolean', short: 'h' } },
} as const;

export async function main(argv: string[], env: NodeJS.ProcessEnv): Promise<number> {
  let args: ReturnType<typeof parseArgs<typeof ARGS>>;
  try {
    args = parseArgs({ ...ARGS, args: argv });
  } catch (err) {
    console.error(`${errorMessage(err)}\n\n${USAGE}`);
    return 2;
  }
  if (args.values.help) {
    console.log(USAGE);
    return 0;
  }

  const print = (line: string) => void process.stdout.write(`${line}\n`);
  const prompter: Prompter = process.stdin.isTTY ? new TerminalPrompter() : new LinePrompter(print);
  const interrupts = new Interrupts();
  try {
    const config = loadConfig(env);
    const userId = (args.values.user ?? env.THREADLINE_USER ?? osUser() ?? 'user').trim();
    if (!userId) throw new Error('the user id is empty: pass --user NAME or set THREADLINE_USER');
    const session: Session = { api: new ApiClient(apiBaseUrl(env, config)), interrupts, config, userId, prompter, print };
    const goal = args.positionals.join(' ').trim();
    if (!goal) return await interactive(session);
    const outcome = await runGoal(session, goal);
    return outcome === 'completed' ? 0 : outcome === 'detached' ? 130 : 1;
  } catch (err) {
    console.error(`error: ${errorMessage(err)}`);
    return 1;
  } finally {
    prompter.close();
    interrupts.close();
  }
}

if (require.main === module) {
  void main(process.argv.slice(2), process.env).then(async (code) => {
    // Let piped stdout drain before exiting; open sockets or stdin would otherwise keep the process alive.
    await new Promise<void>((resolve) => process.stdout.write('', () => resolve()));
    process.exit(code);
  });
}
