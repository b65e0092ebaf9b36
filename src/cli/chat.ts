/**
 * `npm run chat` — the terminal client. With a goal it starts one run over the
 * REST API, follows its Server-Sent Events and prints each step as it happens,
 * asks the person when the run asks, and ends with the answer and the run's Web
 * UI link. Without a goal it talks to a session (a conversation with memory),
 * turn after turn: each line typed is a message, and the session decides what
 * it is (a command, the reply to a waiting run, a retry, a new request). What
 * is printed is decided in the pure module `./render`; this file does the I/O.
 *
 *   npm run chat -- "what is 12*7?"
 *   npm run chat -- --user ada                 (a new conversation)
 *   npm run chat -- --session session-ada-…    (resume one)
 *   printf 'yes\n' | npm run chat -- "…"       (replies read from stdin when it is not a terminal)
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import readline from 'node:readline';
import { parseArgs } from 'node:util';
import { input } from '@inquirer/prompts';
import { z } from 'zod';
import { loadConfig, runUiUrl, type Config } from '../config';
import { sameUser } from '../text/user-key';
import { ApiClient, ApiUnreachableError } from './api-client';
import { TaskSpecSchema } from '../planning/task-spec';
import { TaskTreeReplySchema, type TaskTreeReply } from '../calls/task-tree';
import { forgottenLine, MEMORY_HELP, parseMemoryCommand, rememberedLine, searchLines, type MemoryCommand } from './memory-commands';
import { parseScheduleCommand, SCHEDULE_HELP, scheduleLines, type ScheduleCommand } from './schedule-commands';
import {
  diffStates,
  isEnded,
  outcomeLine,
  parseApprovalAnswer,
  parseReviewAnswer,
  parseSteer,
  pendingApproval,
  pendingQuestion,
  pendingReview,
  renderEvent,
  LiveTokens,
  waitingLines,
  type RunState,
} from './render';

const USAGE = `usage: npm run chat -- [--user NAME] [--engine plan|tree|react] [--review] [--approval TOOLS] ["goal"]
       npm run chat -- [--user NAME] [--approval TOOLS] [--session ID]

  with a goal   runs it, prints each step as it happens, asks you when the run asks, prints the answer
  --engine tree runs it on the task-tree engine: the progress tree is drawn as it changes; while it runs,
                /skip 1-2 [reason] skips a task and /redo 1-2 [reason] queues it again
  --engine react the same engine, ReAct first: one loop on the goal that answers or acts, and plans a
                task tree only when it needs one
  --approval    tools (comma-separated names or patterns, * for all) whose calls wait for you: approve,
                reject [why], or edit {"arg": …} (TOOL_APPROVAL on the server holds some for every run);
                in a conversation, for every run of the new session, and other words go to the session,
                whose model turns them into the call's arguments
  --review      (tree) shows the proposed plan first: approve, revise <what to change>, reject [why],
                or edit (the tree opens in $VISUAL / $EDITOR as JSON)
  without       a conversation (a session that remembers): type messages one after another. The session
                decides what each one is: a new request (its run's steps are shown live), the answer to
                the question a run asked, "try again" after a failure, or a command (/help, /state, /clear, /end).
                Long-term memory: /remember <text>, /forget <fact id>, /memory <query>.
                Schedules: /schedules lists yours with their next runs, /schedules cancel <id> deletes one.
                /exit or Ctrl-D to quit; the session stays on the server.
  --session ID  resume that conversation instead of starting a new one

  Ctrl-C while a run is going detaches from it; the run itself keeps going on the server.
  When stdin is not a terminal, goals, messages and replies are read from it line by line.
  Exit code with a goal: 0 when the run completed, 1 when it failed or was cancelled, 130 when you detached.

  THREADLINE_API_URL   the REST API (default http://$HOST:$PORT, i.e. http://127.0.0.1:3000)
  THREADLINE_API_KEY   your API key, when the API asks for one (THREADLINE_AUTH=apikey)
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
  /** A read an aborted ask left waiting: the next ask takes its line, so no line is lost. */
  private pending: Promise<IteratorResult<string>> | null = null;

  constructor(private readonly print: (line: string) => void) {}

  async ask(message: string, signal?: AbortSignal): Promise<string | null> {
    for (;;) {
      this.pending ??= this.lines.next();
      const next = await untilAborted(this.pending, signal);
      if (next === null) return null;
      this.pending = null;
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
  /** Tree runs (a tree first, or ReAct first): the progress tree is drawn, /skip and /redo are taken at prompts, reviews are asked. */
  tree?: false | 'tree' | 'react';
  api: ApiClient;
  interrupts: Interrupts;
  config: Config;
  userId: string;
  prompter: Prompter;
  print: (line: string) => void;
  /** Writes without a newline (live tokens as they stream); without it, they are not shown. */
  write?: (text: string) => void;
}

/** `waiting`: the run asked a question and, in a conversation, the person's next message answers it. */
type Outcome = RunState['status'] | 'detached' | 'waiting';

/** What the client has seen of a run: followed again later, it prints only what is new. */
interface Seen {
  last: RunState | null;
  /** Questions (by step id) and plan reviews (by plan id) already put to the person. */
  asked: Set<string>;
}

const unseen = (): Seen => ({ last: null, asked: new Set() });

/**
 * Asks at the prompt; in a tree run, `/skip 1-2 [reason]` and `/redo 1-2 [reason]` typed there are
 * carried out and the prompt comes back. Null when the person is done.
 */
async function askSteering(session: Session, runId: string, message: string, signal: AbortSignal): Promise<string | null> {
  for (;;) {
    const line = await session.prompter.ask(message, signal);
    const steer = line !== null && session.tree ? parseSteer(line) : null;
    if (!steer) return line;
    await sendSteer(session, runId, steer);
  }
}

/** Skips or redoes a task and says how it went. */
async function sendSteer(session: Session, runId: string, steer: NonNullable<ReturnType<typeof parseSteer>>): Promise<void> {
  const result = await session.api.steer(runId, steer.action, steer.index, steer.reason);
  session.print(result === 'accepted' ? `(${steer.action === 'skip' ? 'skipped' : 'queued again'}: task ${steer.index})` : `(${result})`);
}

/**
 * While a tree run is followed, lines typed are `/skip` and `/redo` commands. A question or a review
 * takes the prompt over: `pause()` ends the reading (no line is lost), `resume()` starts it again.
 */
class CommandLine {
  private controller: AbortController | null = null;
  private loop: Promise<void> | null = null;

  constructor(
    private readonly session: Session,
    private readonly runId: string,
    private readonly detach: AbortSignal,
  ) {}

  resume(): void {
    if (!this.session.tree || this.loop || this.detach.aborted) return;
    const controller = new AbortController();
    const onDetach = () => controller.abort();
    this.detach.addEventListener('abort', onDetach, { once: true });
    this.controller = controller;
    this.loop = (async () => {
      while (!controller.signal.aborted) {
        const line = await this.session.prompter.ask('command', controller.signal);
        if (line === null) return; // paused, detached, or the end of input
        const steer = parseSteer(line);
        if (!steer) {
          this.session.print('(while the run works: /skip 1-2 [reason] or /redo 1-2 [reason]; it asks when it needs you)');
          continue;
        }
        await sendSteer(this.session, this.runId, steer);
      }
    })().finally(() => this.detach.removeEventListener('abort', onDetach));
  }

  async pause(): Promise<void> {
    this.controller?.abort();
    await this.loop?.catch(() => undefined);
    this.loop = null;
    this.controller = null;
  }
}

/** The tree in $VISUAL / $EDITOR as JSON; the edited tree, or null (with the reason printed) when it is not one. */
function editTree(session: Session, tree: RunState['tree']): TaskTreeReply | null {
  const file = path.join(mkdtempSync(path.join(os.tmpdir(), 'threadline-plan-')), 'plan.json');
  // Names and goals are what a person edits: the tree's progress fields are left out.
  const spec = tree ? (TaskSpecSchema.safeParse(tree).data ?? tree) : tree;
  writeFileSync(file, `${JSON.stringify(spec, null, 2)}\n`);
  const editor = process.env.VISUAL || process.env.EDITOR || 'vi';
  const ran = spawnSync(editor, [file], { stdio: 'inherit', shell: true });
  if (ran.status !== 0) {
    session.print(`(the editor ${editor} did not finish cleanly; the plan is unchanged)`);
    return null;
  }
  try {
    const parsed = TaskTreeReplySchema.safeParse(JSON.parse(readFileSync(file, 'utf8')));
    if (parsed.success) return parsed.data;
    session.print(`(that is not a task tree: ${z.prettifyError(parsed.error).replace(/\n/g, '; ')})`);
  } catch (err) {
    session.print(`(that is not JSON: ${errorMessage(err)})`);
  }
  return null;
}

/**
 * Puts the held tool call to the person until they decide; false when they are done instead. In a
 * conversation (`sessionId`), words that are not approve / reject / edit {…} go to the session as a
 * message addressed to the run: its model makes the call's new arguments of them (or says why not).
 */
async function approveCall(session: Session, runId: string, held: NonNullable<RunState['pendingApproval']>, detach: AbortSignal, sessionId?: string): Promise<boolean> {
  session.print(`? ${held.tool}(${JSON.stringify(held.args)}) waits for your approval${held.taskIndex ? ` (task ${held.taskIndex})` : ''} — approve, reject [why], or edit {"arg": …}`);
  for (;;) {
    const line = await askSteering(session, runId, 'approve?', detach);
    if (line === null) return false;
    const answer = parseApprovalAnswer(line);
    if (!answer && sessionId && line.trim() && (await sessionKnowsHeld(session, sessionId, runId))) {
      const outcome = await session.api.sendMessage(sessionId, `@${runId} ${line.trim()}`);
      if (outcome.reply) session.print(outcome.reply);
      const now = await session.api.getRun(runId);
      if (pendingApproval(now)?.stepId !== held.stepId) return true;
      continue;
    }
    if (!answer) {
      session.print(`(type approve, reject [why], or edit followed by the arguments as a JSON object${sessionId ? ', or say what to change' : ''})`);
      continue;
    }
    const outcome = await session.api.approve(runId, { stepId: held.stepId, ...answer });
    if (outcome === 'refused') session.print('(the call was no longer waiting for approval)');
    else if (outcome !== 'accepted') {
      session.print(`(${outcome})`);
      continue;
    }
    return true;
  }
}

/** Puts the plan under review to the person until they decide; false when they are done instead. */
async function reviewPlan(session: Session, runId: string, state: RunState, planId: string, detach: AbortSignal): Promise<boolean> {
  for (;;) {
    const line = await askSteering(session, runId, 'review', detach);
    if (line === null) return false;
    const answer = parseReviewAnswer(line);
    if (!answer) {
      session.print('(type approve, revise <what to change>, reject [why], or edit)');
      continue;
    }
    let body: Parameters<ApiClient['review']>[1];
    if (answer.decision === 'edit') {
      const edited = editTree(session, state.tree);
      if (!edited) continue;
      body = { decision: 'approve', planId, tree: edited };
    } else body = { ...answer, planId };
    if ((await session.api.review(runId, body)) === 'refused') session.print('(the plan was no longer waiting for a review)');
    return true;
  }
}

/**
 * Whether the conversation lists the run as waiting for that approval yet (its report comes a moment after
 * the run's state shows the wait): only then does a message addressed to the run answer the call.
 */
async function sessionKnowsHeld(session: Session, sessionId: string, runId: string): Promise<boolean> {
  for (let i = 0; i < 20; i++) {
    if ((await session.api.getSession(sessionId)).runs.some((r) => r.runId === runId && r.status === 'waiting_approval')) return true;
    await new Promise((r) => setTimeout(r, 100));
  }
  return false;
}

/**
 * Follows a run: prints what changed at each state and reconnects if the event
 * stream drops. When the run asks something new, `ask` prompts for the reply
 * and posts it (one-shot mode); `pause` returns `waiting`, so the conversation's
 * next message carries the reply. Ends when the run ends; Ctrl-C detaches.
 */
async function followRun(
  session: Session,
  runId: string,
  detach: AbortSignal,
  onQuestion: 'ask' | 'pause' = 'ask',
  seen: Seen = unseen(),
  sessionId?: string,
): Promise<{ outcome: Outcome; last: RunState | null }> {
  const { api, print } = session;
  const commands = new CommandLine(session, runId, detach);
  /** Prints what changed; when the run asks something new, asks the person (or pauses). */
  const handle = async (state: RunState): Promise<'go on' | 'quit' | 'paused'> => {
    const review = pendingReview(state);
    const asked = pendingQuestion(state);
    const held = pendingApproval(state);
    const heldKey = held ? `approval ${held.stepId}` : null;
    // The prompt is the question's (or the review's) before either is printed, so no typed line goes astray.
    if ((review && !seen.asked.has(review.planId)) || (asked && !seen.asked.has(asked.stepId)) || (heldKey && !seen.asked.has(heldKey))) await commands.pause();
    for (const event of diffStates(seen.last, state)) print(renderEvent(event));
    seen.last = state;
    if (held && heldKey && !seen.asked.has(heldKey)) {
      seen.asked.add(heldKey);
      return (await approveCall(session, runId, held, detach, sessionId)) ? 'go on' : 'quit';
    }
    if (review && !seen.asked.has(review.planId)) {
      seen.asked.add(review.planId);
      return (await reviewPlan(session, runId, state, review.planId, detach)) ? 'go on' : 'quit';
    }
    const question = asked;
    if (!question || seen.asked.has(question.stepId)) {
      if (state.status === 'running') commands.resume(); // not while it plans: nothing to skip yet
      return 'go on';
    }
    seen.asked.add(question.stepId);
    if (onQuestion === 'pause') return 'paused';
    const text = await askSteering(session, runId, 'your reply', detach);
    if (text === null) return 'quit';
    if ((await api.reply(runId, text)) === 'not_waiting') print('(the run was no longer waiting for a reply)');
    return 'go on';
  };
  const stopped = (step: 'go on' | 'quit' | 'paused') =>
    step === 'quit' ? { outcome: 'detached' as const, last: seen.last } : step === 'paused' ? { outcome: 'waiting' as const, last: seen.last } : null;

  try {
    return await followEvents();
  } finally {
    await commands.pause();
  }

  async function followEvents(): Promise<{ outcome: Outcome; last: RunState | null }> {
    let lostSince: number | null = null;
    const live = new LiveTokens();
    const write = (text: string) => text && session.write?.(text);
    for (;;) {
      try {
        for await (const event of api.events(runId, detach)) {
          if (lostSince !== null) print('(reconnected)');
          lostSince = null;
          if (event.type === 'token') {
            write(live.token(event.token));
            continue;
          }
          if (event.type === 'token_reset') {
            write(live.reset(event.callId));
            continue;
          }
          write(live.close());
          if (event.type === 'done') break;
          const stop = stopped(await handle(event.state));
          if (stop) return stop;
          if (isEnded(event.state)) break;
        }
        // The stream ended (done, or the connection closed): the state itself says whether the run has.
        const stop = stopped(await handle(await api.getRun(runId)));
        if (stop) return stop;
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
}

/** Starts one run for `goal`, follows it, and prints how it ended and where to see it. */
async function runGoal(session: Session, goal: string, review: boolean, approval: string[] = []): Promise<Outcome> {
  const started = await session.api.startRun({ userId: session.userId, goal, ...(session.tree ? { engine: session.tree, review } : {}), ...(approval.length ? { approval } : {}) });
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

/** Opens the conversation: resumes `resume` (saying what still waits for an answer), or creates a new one. */
async function openSession(session: Session, resume: string | undefined, seen: Map<string, Seen>, approval: string[] = []): Promise<string> {
  const { api, print } = session;
  if (!resume) {
    const created = await api.createSession({ userId: session.userId, ...(approval.length ? { approval } : {}) });
    print(`session ${created.sessionId} started for ${session.userId} (resume it later with --session ${created.sessionId})`);
    return created.sessionId;
  }
  const view = await api.getSession(resume);
  if (!sameUser(view.userId, session.userId)) print(`note: this session belongs to "${view.userId}", not "${session.userId}"`);
  print(`session ${view.sessionId} resumed${view.turns === undefined ? '' : ` (${view.turns} message${view.turns === 1 ? '' : 's'} so far)`}`);
  for (const line of waitingLines(view)) print(line);
  // The questions just shown are already asked: following those runs later must not stop on them again.
  for (const run of view.runs) {
    if (run.status !== 'waiting_user' && run.status !== 'waiting_user_confirmation') continue;
    const state = await api.getRun(run.runId);
    const question = pendingQuestion(state);
    seen.set(run.runId, { last: state, asked: new Set(question ? [question.stepId] : []) });
  }
  return view.sessionId;
}

/**
 * A conversation with a session: each line is a message, until /exit, Ctrl-D or Ctrl-C.
 * A command's reply is printed as-is; a run the message started, retried or answered is
 * followed live until it ends or asks something (the next line then answers it).
 */
async function conversation(session: Session, resume: string | undefined, approval: string[] = []): Promise<number> {
  const { api, print, config } = session;
  print(`Threadline chat — API ${api.baseUrl}, user "${session.userId}". Type a message; /help for commands, /exit or Ctrl-D to quit.`);
  if (!(await api.healthy())) print('warning: the API is up but cannot reach Temporal right now; messages will fail until it can.');
  const seen = new Map<string, Seen>();
  const sessionId = await openSession(session, resume, seen, approval);
  for (;;) {
    const text = await session.prompter.ask('you');
    if (text === null || text === '/exit' || text === '/quit') break;
    try {
      const memoryCommand = parseMemoryCommand(text);
      if (memoryCommand) {
        print(await memoryCommandReply(session, memoryCommand));
        print('');
        continue;
      }
      const scheduleCommand = parseScheduleCommand(text);
      if (scheduleCommand) {
        print(await scheduleCommandReply(session, scheduleCommand));
        print('');
        continue;
      }
      const outcome = await api.sendMessage(sessionId, text);
      if (outcome.kind === 'command' || !outcome.runId) {
        // The session's /help, with the commands this client answers itself.
        print(text.trim().toLowerCase() === '/help' ? `${outcome.reply ?? ''}\n${MEMORY_HELP}\n${SCHEDULE_HELP}` : (outcome.reply ?? '(done)'));
        continue;
      }
      const runId = outcome.runId;
      print(outcomeLine(outcome) ?? '');
      if (outcome.reply) print(outcome.reply);
      const known = seen.get(runId) ?? unseen();
      seen.set(runId, known);
      const detach = new AbortController();
      const { outcome: ended } = await session.interrupts.during(
        () => detach.abort(),
        () => followRun(session, runId, detach.signal, 'pause', known, sessionId),
      );
      if (ended === 'detached') print(`\ndetached — run ${runId} keeps going on the server`);
      else if (ended !== 'waiting') {
        print(`Web UI: ${outcome.uiUrl ?? runUiUrl(config, runId)}`);
        seen.delete(runId);
      }
    } catch (err) {
      // One failed message does not end the conversation; the person may fix the cause and go on.
      print(`error: ${errorMessage(err)}`);
    }
    print('');
  }
  print(`bye — session ${sessionId} stays on the server (npm run chat -- --session ${sessionId})`);
  return 0;
}

/** `/remember`, `/forget`, `/memory`: the person's long-term memory, over the REST API. */
async function memoryCommandReply(session: Session, command: MemoryCommand): Promise<string> {
  const { api, userId } = session;
  switch (command.kind) {
    case 'usage':
      return command.text;
    case 'remember':
      return rememberedLine(await api.rememberFact(userId, command.fact));
    case 'forget':
      return forgottenLine(await api.forgetFact(userId, command.factId));
    case 'memory':
      return searchLines((await api.searchMemory(userId, command.query)).results);
  }
}

/** `/schedules`, `/schedules cancel <id>`: the person's schedules, over the REST API. */
async function scheduleCommandReply(session: Session, command: ScheduleCommand): Promise<string> {
  const { api, userId } = session;
  switch (command.kind) {
    case 'usage':
      return command.text;
    case 'list':
      return scheduleLines((await api.listSchedules(userId)).schedules);
    case 'cancel':
      await api.deleteSchedule(command.scheduleId);
      return `Cancelled schedule ${command.scheduleId} (runs it started go on).`;
  }
}

/** Errors reach the person as one line, never as a stack trace. */
const errorMessage = (err: unknown): string => (err instanceof Error ? err.message : String(err));

/** `THREADLINE_API_URL`, else the address `npm start` serves the API on (a wildcard bind is reached on loopback). */
export function apiBaseUrl(env: NodeJS.ProcessEnv, config: Pick<Config, 'HOST' | 'PORT'>): string {
  const explicit = z
    .url()
    .optional()
    .safeParse(env.THREADLINE_API_URL || undefined);
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
  options: {
    user: { type: 'string', short: 'u' },
    session: { type: 'string', short: 's' },
    engine: { type: 'string', short: 'e' },
    review: { type: 'boolean' },
    approval: { type: 'string' },
    help: { type: 'boolean', short: 'h' },
  },
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
    const engine = args.values.engine ?? 'plan';
    if (engine !== 'plan' && engine !== 'tree' && engine !== 'react') {
      console.error(`--engine is plan, tree or react, not ${engine}\n\n${USAGE}`);
      return 2;
    }
    const goal = args.positionals.join(' ').trim();
    const resume = args.values.session?.trim() || undefined;
    if ((engine !== 'plan' || args.values.review) && !goal) {
      console.error(`--engine ${engine === 'plan' ? 'tree' : engine} and --review go with a goal\n\n${USAGE}`);
      return 2;
    }
    if (args.values.review && engine === 'plan') {
      console.error(`--review is for --engine tree or react\n\n${USAGE}`);
      return 2;
    }
    const session: Session = {
      api: new ApiClient(apiBaseUrl(env, config), env.THREADLINE_API_KEY || undefined),
      interrupts,
      config,
      userId,
      prompter,
      print,
      write: (text: string) => void process.stdout.write(text),
      tree: engine === 'plan' ? false : engine,
    };
    if (goal && resume) {
      console.error(`a goal runs on its own; --session is for a conversation (leave out the goal)\n\n${USAGE}`);
      return 2;
    }
    const approval = (args.values.approval ?? '')
      .split(',')
      .map((t) => t.trim())
      .filter(Boolean);
    if (!goal) return await conversation(session, resume, approval);
    const outcome = await runGoal(session, goal, args.values.review === true, approval);
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
