/**
 * The session as an engine (seed 000's conversation), the third over the core beside the planner and
 * the task tree: the state one session workflow keeps — its runs, the token estimates of the thread's
 * recent window, its counters and capabilities — and every decision on it. Each thing that happens to
 * the session (it opens, a message, a run's report, the idle end) is a flow that yields commands —
 * activity calls, cancellations, a reply relayed to a run (`relay_reply`, as a run relays one to its
 * child), a child start — and takes back their results; a failed call comes back as a `CallFailed`
 * thrown into it. The workflow (src/workflows/session.ts) only carries the commands out, in the order
 * given, which replay relies on. Pure and deterministic: time comes from the clock it is handed.
 */
import type { CallPolicy, Command, Engine, EngineEvent, RelayReply } from './core';
import { CallFailed, Flows, type Translated } from './flows';
import type { AnswerApprovalInput, MessageOutcome, PlanExecutionInput, RunReport, SessionCalls, SessionInput, SessionWorkflowView, WaitingRun } from './contract';
import { engineFields, type EngineChoice } from './run-inputs';
import {
  emptyTaskState,
  estimateTokens,
  needsCompression,
  needsJudgement,
  routeMessage,
  waitingNewestFirst,
  HELP_TEXT,
  type Route,
  type RouteJudgement,
  type SessionRun,
  type Turn,
} from '../sessions/session-model';
import {
  appendTurns,
  applyReport,
  DEFAULT_SESSION_LIMITS,
  endingTurnKey,
  markReplied,
  newSessionRun,
  openRuns,
  pruneRuns,
  renderSessionState,
  waitingRuns,
  type SessionLimits,
} from '../sessions/session-state';

export const NOTHING_TO_RETRY = 'There is nothing to retry: no request of this session has failed.';
export const SESSION_ENDED = 'This conversation has ended; start a new one to go on.';
export const CAPABILITIES_CHANGED = 'My capabilities changed (my model, prompts or tools), so I cancelled the request that was waiting for you; please ask again.';
const DEFAULT_CONTINUE_AS_NEW_AFTER = 2000;
const DEFAULT_HAND_OVER_GRACE = 500;

/** A call of the session: its result comes back as the value of the `yield`. */
export type SessionCall = { [K in keyof SessionCalls]: { kind: 'call'; activity: K; input: Parameters<SessionCalls[K]>[0] } }[keyof SessionCalls];

/** What a session's flow asks the workflow to do; each answers with a value (none for the ones that only do). */
export type SessionCommand =
  | SessionCall
  /** Cancel runs the session no longer wants, whoever their parent is now (they outlive continue-as-new). */
  | { kind: 'cancel_runs'; runIds: string[] }
  /** The person's reply to a waiting run; comes back true when the run took it. */
  | RelayReply
  /** Start a run as a child workflow (sessions recorded before runs were started by the `recordTurns` call). */
  | { kind: 'start_run'; workflowId: string; input: PlanExecutionInput; summary: string }
  /** A report of a run the session missed (its start found it ended): handled after what is queued now. */
  | { kind: 'queue_report'; report: RunReport };

/** A flow of the session: it yields commands and returns what it came to. */
export type SessionStep<T> = Generator<SessionCommand, T, unknown>;

export { CallFailed } from './flows';

const activityFailed = (err: unknown): err is CallFailed => err instanceof CallFailed && err.activity;

/** Makes one call and returns its result. */
function* call<K extends keyof SessionCalls>(activity: K, input: Parameters<SessionCalls[K]>[0]): SessionStep<Awaited<ReturnType<SessionCalls[K]>>> {
  return (yield { kind: 'call', activity, input } as SessionCall) as Awaited<ReturnType<SessionCalls[K]>>;
}

/**
 * What a session's history was recorded with (its `patched` ids): each flow takes the branch its
 * history took. `stateFromThread` is asked only when `/state` is.
 */
export interface SessionPatches {
  /** Compression runs after the sender's answer, and the hand-over carries queued reports (SESSION_V2). */
  v2: boolean;
  /** A conversation can end: `/end`, DELETE, the idle timeout (SESSION_END). */
  endable: boolean;
  /** Runs start in the call that records their message, not as child workflows (RUNS_STARTED_BY_ACTIVITY). */
  startsByActivity: boolean;
  /** A message sent while runs wait is judged by the model (ROUTE_BY_MODEL). */
  judges: boolean;
  /** `/state` reads the thread (STATE_FROM_THREAD). */
  stateFromThread: () => boolean;
}

/** The session's calls, as the core types a workflow's activities. */
export type SessionActivities = { [K in keyof SessionCalls]: SessionCalls[K] };

/**
 * What reaches the session: a person's message (answered by an `answer` command naming its `id`), a run's
 * report, the idle timeout (nothing open, nothing came), and the hand-over falling due with nothing queued.
 */
export type SessionEvent = { kind: 'message'; id: number; text: string; engine?: EngineChoice } | { kind: 'report'; report: RunReport } | { kind: 'idle' } | { kind: 'hand_over' };

/** The session's commands as the workflow loop carries them out (src/workflows/run-engine.ts). */
export type SessionEngineCommand = Command<SessionActivities, SessionEvent>;

/** How each call is made (src/workflows/call-policies.ts). */
const POLICY: Record<keyof SessionCalls, CallPolicy> = {
  openSession: 'memory',
  recordTurns: 'memory',
  readSession: 'memory',
  clearSession: 'memory',
  endSession: 'memory',
  compressHistory: 'summary',
  judgeMessage: 'route',
  answerApproval: 'approval',
};

/** A flow's command for the loop: a reply waits to learn whether its run took it; a missed report joins the inbox at once. */
function translate(command: SessionCommand): Translated<SessionEngineCommand> {
  switch (command.kind) {
    case 'call':
      return { command: { ...command, policy: POLICY[command.activity] } as SessionEngineCommand, waits: true };
    case 'relay_reply':
      return { command: { ...command, confirm: true }, waits: true };
    case 'queue_report':
      return { command: { kind: 'enqueue', event: { kind: 'report', report: command.report } }, waits: false };
    default:
      return { command, waits: true };
  }
}

const awaitNext = (): SessionEngineCommand[] => [{ kind: 'await_person' }];
const end = (): SessionEngineCommand[] => [{ kind: 'end' }];
/** A failure no flow takes (its flow is not a message's, or none runs): the session ends with it. */
const raise = (): SessionEngineCommand[] => [{ kind: 'raise' }];

/** Today's session: every patch taken. */
export const CURRENT_SESSION: SessionPatches = { v2: true, endable: true, startsByActivity: true, judges: true, stateFromThread: () => true };

/** What the session learns when it hands an approval on (the `answerApproval` call's result). */
export type ApprovalAnswered = { delivered: true; reply: string } | { delivered: false; waiting: boolean; reply: string };

/** The history lengths at which the session hands over to a new run (continue-as-new). */
export interface HandOverPolicy {
  after: number;
  grace: number;
}

export class SessionEngine implements Engine<SessionWorkflowView, SessionActivities, SessionEvent> {
  readonly limits: SessionLimits;
  readonly handOver: HandOverPolicy;
  readonly idleTimeoutMs: number;
  /** The estimated tokens of the turns in the thread's recent window: all the session keeps of the conversation, to decide when to compress. */
  #window: number[];
  #runs: SessionRun[];
  #turns: number;
  #version: number;
  #capabilities: string | null;
  /** How long the latest call of the session's latest reporting run took: its next run's first call is local when that was fast. */
  #lastRunCallMs: number | null;
  /** Why the conversation ended, once it has: it takes no more messages. */
  #ended: string | null = null;
  #published: SessionWorkflowView;
  readonly #flows = new Flows<SessionCommand, SessionEngineCommand>(translate);

  constructor(
    private readonly input: SessionInput,
    private readonly patches: SessionPatches = CURRENT_SESSION,
    private readonly clock: () => Date = () => new Date(),
  ) {
    const { carried, settings } = input;
    this.limits = { ...DEFAULT_SESSION_LIMITS, ...settings };
    this.handOver = { after: settings?.continueAsNewAfterEvents ?? DEFAULT_CONTINUE_AS_NEW_AFTER, grace: settings?.handOverGraceEvents ?? DEFAULT_HAND_OVER_GRACE };
    this.idleTimeoutMs = settings?.idleTimeoutMs ?? 0;
    // Sessions from before the conversation lived in the thread only carried the turns themselves.
    this.#window = carried?.window ?? carried?.chatHistory?.map((t) => estimateTokens(t.text)) ?? [];
    this.#runs = carried?.runs ?? [];
    this.#turns = carried?.turns ?? 0;
    this.#version = carried?.version ?? 0;
    this.#capabilities = input.capabilities ?? null;
    this.#lastRunCallMs = carried?.lastRunCallMs ?? null;
    this.#published = this.#snapshot();
  }

  get runs(): readonly SessionRun[] {
    return this.#runs;
  }
  get turns(): number {
    return this.#turns;
  }
  get ended(): string | null {
    return this.#ended;
  }
  /** Whether some run works or waits for the person (the idle timeout waits for none). */
  get hasOpenRuns(): boolean {
    return openRuns(this.#runs).length > 0;
  }

  /**
   * What queries see: the state as of the last finished step, so that one version always names one view
   * (SSE watchers send a view only when its version grows; a half-handled message must not show).
   */
  get published(): SessionWorkflowView {
    return this.#published;
  }

  publish(): void {
    this.#version++;
    this.#published = this.#snapshot();
  }

  #snapshot(): SessionWorkflowView {
    const { sessionId, userId, threadId } = this.input;
    return { sessionId, userId, threadId, runs: this.#runs.map((r) => ({ ...r })), turns: this.#turns, version: this.#version };
  }

  /** A run's report arrived (its handling waits its turn in the queue); its call speed counts at once. */
  received(report: RunReport): void {
    if (report.lastCallMs !== undefined) this.#lastRunCallMs = report.lastCallMs;
  }

  // ---- capabilities (seed 000's workflow versioning)

  /**
   * The worker's capabilities now: when they changed, the runs that wait for the person are stale — to be
   * cancelled, then told with `cancelledStale`. Empty when nothing is stale.
   */
  capabilitiesNow(current: string): SessionRun[] {
    const previous = this.#capabilities;
    this.#capabilities = current;
    if (previous === null || previous === current) return [];
    return waitingRuns(this.#runs);
  }

  /** The stale runs were cancelled: they show so, and the conversation says why (the turns to remember). */
  cancelledStale(stale: readonly SessionRun[], now: Date): Turn[] {
    const at = now.toISOString();
    this.#runs = this.#runs.map((r) => (stale.some((s) => s.runId === r.runId) ? { ...r, status: 'cancelled' as const, question: null, lastError: 'capabilities changed' } : r));
    return stale.map((r) => ({ role: 'assistant' as const, text: `${CAPABILITIES_CHANGED} (was: "${r.goal}")`, at, runId: r.runId }));
  }

  // ---- the window and compression

  /** Turns go to the thread: their estimates join the window (capped by maxTurns). */
  remembered(texts: readonly string[]): void {
    this.#window = appendTurns(
      this.#window,
      texts.map((t) => estimateTokens(t)),
      this.limits.maxTurns,
    );
  }

  /** Seed 000's compression is due: the window or its tokens passed the threshold. */
  get needsCompression(): boolean {
    return needsCompression(this.#window, this.limits);
  }

  /** The `compressHistory` call's input. */
  compression(): { sessionId: string; threadId: string; keep: number } {
    return { sessionId: this.input.sessionId, threadId: this.input.threadId, keep: this.limits.keepAfterCompression };
  }

  /** Older turns were folded into TaskState; sessions from before this change got no window back. */
  compressed(window: number[] | undefined): void {
    this.#window = window ?? this.#window.slice(-this.limits.keepAfterCompression);
  }

  // ---- messages

  /** A message is taken: it counts, and names the run it may start. */
  took(): void {
    this.#turns++;
  }

  /**
   * Seed 000's routing: while runs wait, a message that is not a reply by rule (a confirmation, `@<runId>`)
   * is judged by the model (the `judgeMessage` call's input); null when it needs no judging.
   */
  judgement(text: string): { text: string; waiting: WaitingRun[] } | null {
    if (!needsJudgement(this.#runs, text)) return null;
    return { text, waiting: waitingNewestFirst(this.#runs).map((r) => ({ runId: r.runId, goal: r.goal, question: r.question ?? '' })) };
  }

  route(text: string, judged: RouteJudgement | undefined): Route {
    return routeMessage(this.#runs, text, judged);
  }

  /** The person's turn, naming the run it goes to (a reply's run, or the run it starts). */
  userTurn(route: Route, text: string, now: Date): Turn {
    const runId = route.kind === 'reply' || route.kind === 'approval' ? route.runId : route.kind === 'new_run' || route.kind === 'retry' ? this.nextRunId() : undefined;
    return { role: 'user', text, at: now.toISOString(), ...(runId ? { runId } : {}) };
  }

  /** The id of the run a message starts: one per message, so the `turns` count names it. */
  nextRunId(): string {
    return `${this.input.sessionId}.r${this.#turns}`;
  }

  /** The engine of the run a message starts: the message's choice, else the session's; a retry runs as the run it retries. */
  engineFor(route: Route, asked: EngineChoice | undefined): EngineChoice {
    return route.kind === 'retry' ? (this.#runs.find((r) => r.runId === route.runId)?.engine ?? 'plan') : (asked ?? this.input.engine ?? 'plan');
  }

  /** A retry resets the failed run: forgotten here, its goal runs again as a new run. */
  forget(runId: string): void {
    this.#runs = this.#runs.filter((r) => r.runId !== runId);
  }

  /** Lists the run a message starts (as `planning`) and returns its id. */
  listRun(goal: string, engine: EngineChoice, now: Date): string {
    const runId = this.nextRunId();
    this.#runs = pruneRuns([...this.#runs, newSessionRun(runId, goal, now, engine)]);
    return runId;
  }

  /** A listed run's start failed (an activity or start failure): it shows failed. */
  notStarted(runId: string, why: string): void {
    this.#runs = this.#runs.map((r) => (r.runId === runId ? { ...r, status: 'failed' as const, lastError: `could not start: ${why}` } : r));
  }

  /** What a run of this session is started with. */
  runInput(goal: string, engine: EngineChoice): PlanExecutionInput {
    const { userId, sessionId, threadId, approval } = this.input;
    return {
      userId,
      goal,
      sessionId,
      sessionThreadId: threadId,
      limits: this.input.limits,
      // Plan runs keep the input they always had.
      ...engineFields(engine, this.input.treeLimits),
      ...(this.#lastRunCallMs !== null ? { lastCallMs: this.#lastRunCallMs } : {}),
      // The operator's TOOL_APPROVAL holds calls in a conversation's runs too, and the person's messages answer them:
      // the run reports its approval waits here (runs started before never do, so their histories replay as recorded).
      ...(approval?.length ? { approval, reportApprovals: true } : {}),
    };
  }

  /** The Web UI's summary of a run the session starts. */
  runSummary(goal: string): string {
    return `${this.input.userId} (session ${this.input.sessionId}): ${goal}`.slice(0, 200);
  }

  /** A reply goes to its run the one way replies reach a run (`relay_reply`, as a run passes one to its child). */
  reply(route: Extract<Route, { kind: 'reply' }>): RelayReply {
    return { kind: 'relay_reply', runId: route.runId, text: route.text };
  }

  /** The reply reached its run (or not: the run no longer waits, and the person is told). */
  replied(runId: string, delivered: boolean): MessageOutcome {
    if (delivered) {
      this.#runs = markReplied(this.#runs, runId);
      return { kind: 'reply', runId };
    }
    this.#runs = this.#runs.map((r) => (r.runId === runId ? { ...r, status: 'cancelled' as const, question: null } : r));
    return { kind: 'reply', runId, reply: `Run ${runId} is no longer waiting; your reply was not delivered.` };
  }

  /**
   * A message answering a held tool call (issue 28): the `answerApproval` call's input, or — the session
   * knows no such call — the outcome at once.
   */
  approvalRequest(route: Extract<Route, { kind: 'approval' }>): AnswerApprovalInput | MessageOutcome {
    const { runId } = route;
    const pending = this.#runs.find((r) => r.runId === runId)?.approval;
    if (!pending) return { kind: 'reply', runId, reply: `Run ${runId} waits for an approval this conversation does not know; answer it with POST /v1/runs/${runId}/approval.` };
    return { runId, pending, text: route.text, answer: route.answer, updateId: `${this.input.sessionId}:${this.#turns}:approval` };
  }

  /**
   * The decision went out (delivered, or the call no longer waits: the run's next report says what it
   * does now). Returns the outcome when that is all; else (not delivered) the conversation is told too.
   */
  approvalAnswered(runId: string, result: ApprovalAnswered): MessageOutcome | null {
    if (result.delivered || !result.waiting) {
      this.#runs = markReplied(this.#runs, runId);
      if (result.delivered) return { kind: 'reply', runId, reply: result.reply };
    }
    return null;
  }

  /** The answer to a command the session does not know (`/end` included, in sessions recorded before it). */
  static unknownCommand(route: Extract<Route, { kind: 'command' }>): string {
    const word = route.command === 'unknown' ? (route.text.split(/\s+/)[0] ?? '') : route.command;
    return `Unknown command "${word}".\n${HELP_TEXT}`;
  }

  /** `/clear` forgets the conversation: the runs still open, to be cancelled; its window and runs are gone. */
  clear(): { cancelled: string[]; reply: string } {
    const cancelled = openRuns(this.#runs).map((r) => r.runId);
    return { cancelled, reply: `Cleared the conversation: recent turns, task state${cancelled.length > 0 ? ` and ${cancelled.length} unfinished run(s)` : ''}.` };
  }

  /** The open runs were cancelled and the thread is to be cleared. */
  cleared(): void {
    this.#runs = [];
    this.#window = [];
  }

  /** The runs an end cancels: those still open. */
  toEnd(): string[] {
    return openRuns(this.#runs).map((r) => r.runId);
  }

  /** The conversation ends (its open runs were cancelled): it takes no more messages. */
  endedWith(reason: string, cancelled: readonly string[]): void {
    this.#runs = this.#runs.map((r) => (cancelled.includes(r.runId) ? { ...r, status: 'cancelled' as const, question: null } : r));
    this.#ended = reason;
  }

  static endReply(cancelled: number): string {
    return `Ended the conversation${cancelled > 0 ? ` and cancelled ${cancelled} unfinished run(s)` : ''}. What is worth keeping goes to long-term memory.`;
  }

  // ---- run reports

  /**
   * A run's report is handled: the run's new status, and the turn it adds (with its idempotency key), or
   * — `recorded`: the call that closed the run added it already — only its estimate for the window.
   */
  report(report: RunReport, now: Date): { turn: Turn; key: string | undefined } | { recorded: true } | null {
    const applied = applyReport(this.#runs, report, now);
    this.#runs = applied.runs;
    if (!applied.turn) return null;
    if (report.recorded) {
      this.remembered([applied.turn.text]);
      return { recorded: true };
    }
    return { turn: applied.turn, key: endingTurnKey(report) };
  }

  // ---- the flows: what happens to the session, as commands for the workflow

  /** The session's run begins: its thread exists, and a change of capabilities since the last run is noticed. */
  *open(): SessionStep<void> {
    const { sessionId, userId, threadId } = this.input;
    const opened = yield* call('openSession', { sessionId, userId, threadId, first: this.input.carried === undefined });
    if (yield* this.#noticeCapabilities(opened.capabilities)) this.publish();
  }

  /** A person's message, answered with what became of it. `asked`: the engine a run it starts runs on. */
  *onMessage(text: string, asked?: EngineChoice): SessionStep<MessageOutcome> {
    this.took();
    const judged = yield* this.#judge(text);
    const first = this.route(text, judged);
    if (first.kind === 'command') return yield* this.#command(first);
    const turn = this.userTurn(first, text, this.clock());
    if (this.patches.startsByActivity && (first.kind === 'new_run' || first.kind === 'retry')) {
      // Nothing waits for the person (else the message would be a reply), so a change of capabilities cancels nothing here.
      const engine = this.engineFor(first, asked);
      if (first.kind === 'retry') this.forget(first.runId);
      const runId = this.nextRunId();
      yield* this.#noticeCapabilities(yield* this.#rememberAndStart(turn, first.goal, engine));
      return { kind: first.kind, runId };
    }
    const current = yield* this.#remember([turn]);
    if (current !== null) yield* this.#noticeCapabilities(current);
    // Routed after the capability check: a reply to a run cancelled just now starts afresh instead.
    const route = this.route(text, judged);
    let outcome: MessageOutcome;
    switch (route.kind) {
      case 'command': // unreachable: commands were answered above
      case 'nothing_to_retry':
        outcome = { kind: 'command', reply: NOTHING_TO_RETRY };
        break;
      case 'reply':
        outcome = this.replied(route.runId, (yield this.reply(route)) === true);
        break;
      case 'approval':
        outcome = yield* this.#answerApproval(route);
        break;
      case 'retry': {
        // The failed run is reset: forgotten here, its goal runs again as a new run.
        const engine = this.engineFor(route, asked);
        this.forget(route.runId);
        outcome = { kind: 'retry', runId: yield* this.#startRun(route.goal, engine) };
        break;
      }
      case 'new_run':
        outcome = { kind: 'new_run', runId: yield* this.#startRun(route.goal, this.engineFor(route, asked)) };
        break;
    }
    if (!this.patches.v2) yield* this.compress();
    return outcome;
  }

  /** A run's report: its status shows at once (a view with the answer shows its run done), then its turn reaches the thread. */
  *onReport(report: RunReport): SessionStep<void> {
    const added = this.report(report, this.clock());
    this.publish();
    if (!added) return;
    // A `recorded` turn was added to the thread by the call that closed the run: only its estimate is kept here.
    if (!('recorded' in added)) {
      const current = yield* this.#remember([added.turn], added.key);
      if (current !== null) yield* this.#noticeCapabilities(current);
    }
    yield* this.compress();
  }

  /**
   * Seed 000's compression: older turns folded into TaskState once the window or token threshold is passed.
   * The call reads the turns and TaskState from the thread, so only their sizes pass through history.
   * True when it compressed.
   */
  *compress(): SessionStep<boolean> {
    if (!this.needsCompression) return false;
    try {
      this.compressed((yield* call('compressHistory', this.compression())).window);
      return true;
    } catch (err) {
      // Without a summary the window stays as it is (capped by maxTurns); the next turn tries again.
      if (!activityFailed(err)) throw err;
      return false;
    }
  }

  /**
   * Ends the conversation: its unfinished runs are cancelled, its TaskState kept as the user's, its
   * promotion handed to long-term memory (endSession). Returns how many runs were cancelled.
   */
  *end(reason: string): SessionStep<number> {
    const cancelled = this.toEnd();
    yield { kind: 'cancel_runs', runIds: cancelled };
    this.endedWith(reason, cancelled);
    try {
      yield* call('endSession', { sessionId: this.input.sessionId, threadId: this.input.threadId, reason });
    } catch (err) {
      // The conversation ends anyway; only its promotion is missed.
      if (!activityFailed(err)) throw err;
    }
    return cancelled.length;
  }

  *#command(route: Extract<Route, { kind: 'command' }>): SessionStep<MessageOutcome> {
    const { sessionId, threadId } = this.input;
    switch (route.command) {
      case '/help':
        return { kind: 'command', reply: HELP_TEXT };
      case '/state': {
        // What the thread holds now: a rollback or a person's edit of it shows here.
        const conversation = this.patches.stateFromThread() ? yield* call('readSession', { threadId, maxTurns: this.limits.maxTurns }) : { chatHistory: [], taskState: emptyTaskState() };
        return { kind: 'command', reply: renderSessionState({ ...conversation, runs: this.#runs, turns: this.#turns }) };
      }
      case '/clear': {
        const { cancelled, reply } = this.clear();
        yield { kind: 'cancel_runs', runIds: cancelled };
        this.cleared();
        yield* call('clearSession', { sessionId, threadId, cancelledRuns: cancelled });
        return { kind: 'command', reply };
      }
      case '/end':
        if (!this.patches.endable) return { kind: 'command', reply: SessionEngine.unknownCommand(route) };
        return { kind: 'command', reply: SessionEngine.endReply(yield* this.end('/end')) };
      case 'unknown':
        return { kind: 'command', reply: SessionEngine.unknownCommand(route) };
    }
  }

  /** Seed 000's routing, asked of the model when a message needs it; no judgement (the call failed): a reply. */
  *#judge(text: string): SessionStep<RouteJudgement | undefined> {
    const request = this.patches.judges ? this.judgement(text) : null;
    if (!request) return undefined;
    try {
      return yield* call('judgeMessage', request);
    } catch (err) {
      if (!activityFailed(err)) throw err;
      return undefined;
    }
  }

  /**
   * A change of model, prompts or tools makes plans that wait for the person stale (seed 000's workflow
   * versioning): they are cancelled at once, and the conversation says why. (Runs that execute find it
   * out themselves at their next step.) True when some were.
   */
  *#noticeCapabilities(current: string): SessionStep<boolean> {
    const stale = this.capabilitiesNow(current);
    if (stale.length === 0) return false;
    yield { kind: 'cancel_runs', runIds: stale.map((r) => r.runId) };
    yield* this.#remember(this.cancelledStale(stale, this.clock()));
    return true;
  }

  /** Adds turns to the memory thread (and their estimates to the window); `key` names them. Returns the worker's capabilities, or null when the call failed. */
  *#remember(turns: Turn[], key?: string): SessionStep<string | null> {
    const { sessionId, threadId } = this.input;
    this.remembered(turns.map((t) => t.text));
    try {
      return (yield* call('recordTurns', { sessionId, threadId, turns, ...(key ? { key } : {}) })).capabilities;
    } catch (err) {
      // The conversation goes on; the thread misses these turns.
      if (activityFailed(err)) return null;
      throw err;
    }
  }

  /**
   * Records the person's turn and starts the run it asks for, in one call (usually local): no child-start
   * round trip, and the run's first task runs on the worker at once. Returns the worker's capabilities.
   */
  *#rememberAndStart(turn: Turn, goal: string, engine: EngineChoice): SessionStep<string> {
    const { sessionId, threadId } = this.input;
    const runId = this.listRun(goal, engine, this.clock());
    this.remembered([turn.text]);
    try {
      const start = { runId, input: this.runInput(goal, engine), summary: this.runSummary(goal) };
      const { capabilities, ended } = yield* call('recordTurns', { sessionId, threadId, turns: [turn], start });
      // Handled again after a replay, the message found its run already ended: its report came when the session did not know the run.
      if (ended) yield { kind: 'queue_report', report: ended };
      return capabilities;
    } catch (err) {
      throw this.#notStarted(runId, err);
    }
  }

  /** Starts the run of a message whose turn was recorded already (sessions from before runs were started by activity). */
  *#startRun(goal: string, engine: EngineChoice): SessionStep<string> {
    const runId = this.listRun(goal, engine, this.clock());
    try {
      yield { kind: 'start_run', workflowId: runId, input: this.runInput(goal, engine), summary: this.runSummary(goal) };
    } catch (err) {
      throw this.#notStarted(runId, err);
    }
    return runId;
  }

  /** A listed run whose start failed as expected shows failed; returns `err` to throw on. */
  #notStarted(runId: string, err: unknown): unknown {
    if (err instanceof CallFailed) this.notStarted(runId, err.message);
    return err;
  }

  /**
   * A message to a run that waits for a tool call's approval (issue 28): its decision (approve, reject
   * with feedback, or an edit in words the `approval_edit` call turns into arguments) goes to the run as
   * `POST /v1/runs/:runId/approval` would send it. An edit that does not fit the tool leaves the call
   * waiting, and the person is told why (in the answer and in the conversation).
   */
  *#answerApproval(route: Extract<Route, { kind: 'approval' }>): SessionStep<MessageOutcome> {
    const request = this.approvalRequest(route);
    if (!('pending' in request)) return request;
    const { runId } = request;
    let reply: string;
    try {
      const result = yield* call('answerApproval', request);
      const outcome = this.approvalAnswered(runId, result);
      if (outcome) return outcome;
      reply = result.reply;
    } catch (err) {
      if (!activityFailed(err)) throw err;
      reply = `Your answer could not be delivered (${err.message}); the call still waits for your approval.`;
    }
    yield* this.#remember([{ role: 'assistant', text: reply, at: this.clock().toISOString(), runId }]);
    return { kind: 'reply', runId, reply };
  }

  // ---- as an engine over the core: each event begins a flow or resumes the one that waits

  get state(): SessionWorkflowView {
    return this.#published;
  }

  /** The session's run begins (`open`), then waits for what comes. */
  start(): SessionEngineCommand[] {
    return this.#flows.begin(this.open(), awaitNext, raise);
  }

  handle(event: EngineEvent<SessionActivities, SessionEvent>): SessionEngineCommand[] {
    switch (event.kind) {
      case 'message': {
        const answer = (result: { outcome: MessageOutcome } | { failure: string }): SessionEngineCommand[] => [{ kind: 'answer', to: event.id, ...result }, ...this.#settled(true)];
        // A failed call or run start the flow does not take answers the message with its reason.
        return this.#flows.begin(
          this.onMessage(event.text, event.engine),
          (outcome) => answer({ outcome }),
          (err) => answer({ failure: err.message }),
        );
      }
      case 'report':
        return this.#flows.begin(this.onReport(event.report), () => this.#settled(false), raise);
      case 'idle':
        return this.#flows.begin(this.end('idle'), () => (this.publish(), end()), raise);
      case 'hand_over':
        return end();
      case 'result':
        return this.#flows.resume(event.value);
      case 'delivered':
        return this.#flows.resume(event.ok);
      case 'done':
        return this.#flows.resume(undefined);
      case 'failed':
      case 'cancelled': {
        // Cancelled while waiting for the next event: the session ends cancelled.
        if (!this.#flows.busy) return raise();
        const reason = event.reason ?? (event.kind === 'failed' ? event.error : 'cancelled');
        return this.#flows.fail(new CallFailed(reason, event.activity === true));
      }
      case 'child_ended':
        throw new Error('a session waits for no child run');
    }
  }

  /** A message or report was handled: queries see it; then the end, or (after a message) compression, then the next event. */
  #settled(message: boolean): SessionEngineCommand[] {
    this.publish();
    if (this.#ended !== null) return end();
    // After the answer: a slow summary model delays only the next message.
    if (!message || !this.patches.v2) return awaitNext();
    return this.#flows.begin(
      this.compress(),
      (compressed) => {
        if (compressed) this.publish();
        return awaitNext();
      },
      raise,
    );
  }

  // ---- the hand-over (continue-as-new)

  /** What the next run of the session starts with: this one's state, the reports still queued, the capabilities seen. */
  carry(pendingReports: RunReport[]): SessionInput {
    const carried = { window: this.#window, runs: pruneRuns(this.#runs), turns: this.#turns, version: this.#version, ...(this.#lastRunCallMs !== null ? { lastRunCallMs: this.#lastRunCallMs } : {}) };
    return { ...this.input, carried, pendingReports, ...(this.#capabilities !== null ? { capabilities: this.#capabilities } : {}) };
  }
}

/**
 * Traffic that never pauses would put the hand-over off until the history hits Temporal's hard limit:
 * past the grace after it fell due (`dueSince`), new messages wait outside while the queue drains.
 */
export const handingOver = (policy: HandOverPolicy, dueSince: number | null, historyLength: number): boolean => dueSince !== null && historyLength >= dueSince + policy.grace;

/** The hand-over falls due once the history is long, or when Temporal suggests it. */
export const handOverDue = (policy: HandOverPolicy, history: { continueAsNewSuggested: boolean; historyLength: number }): boolean =>
  history.continueAsNewSuggested || history.historyLength > policy.after;
