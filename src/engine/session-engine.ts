/**
 * The session as an engine (seed 000's conversation): the state one session workflow keeps — its
 * runs, the token estimates of the thread's recent window, its counters and capabilities — and every
 * decision on it: what a message is and what it changes, what a run's report does, which runs a change
 * of capabilities or an end cancels, what a new run is started with, when to compress, what goes on
 * at a hand-over. Pure and deterministic (time comes in with each call); the workflow
 * (src/workflows/session.ts) carries the effects out — memory calls, cancellations, replies and run
 * starts — in the order these decisions are asked for, which replay relies on.
 */
import type { RelayReply } from './core';
import type { AnswerApprovalInput, MessageOutcome, PlanExecutionInput, RunReport, SessionInput, SessionWorkflowView, WaitingRun } from './contract';
import { engineFields, type EngineChoice } from './run-inputs';
import { estimateTokens, needsCompression, needsJudgement, routeMessage, waitingNewestFirst, HELP_TEXT, type Route, type RouteJudgement, type SessionRun, type Turn } from '../sessions/session-model';
import { appendTurns, applyReport, DEFAULT_SESSION_LIMITS, endingTurnKey, markReplied, newSessionRun, openRuns, pruneRuns, waitingRuns, type SessionLimits } from '../sessions/session-state';

export const NOTHING_TO_RETRY = 'There is nothing to retry: no request of this session has failed.';
export const SESSION_ENDED = 'This conversation has ended; start a new one to go on.';
export const CAPABILITIES_CHANGED = 'My capabilities changed (my model, prompts or tools), so I cancelled the request that was waiting for you; please ask again.';
const DEFAULT_CONTINUE_AS_NEW_AFTER = 2000;
const DEFAULT_HAND_OVER_GRACE = 500;

/** What the session learns when it hands an approval on (the `answerApproval` call's result). */
export type ApprovalAnswered = { delivered: true; reply: string } | { delivered: false; waiting: boolean; reply: string };

/** The history lengths at which the session hands over to a new run (continue-as-new). */
export interface HandOverPolicy {
  after: number;
  grace: number;
}

export class SessionEngine {
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

  constructor(private readonly input: SessionInput) {
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
