/**
 * The session layer's pure model (seed 000): chatHistory, TaskState, the
 * session's view of its runs, and the routing of each incoming message.
 * No I/O; imported by the session workflow and unit-tested on its own. No zod either: every
 * module the workflows import is evaluated again for each run a worker loads (its sandbox).
 */
import type { PendingApproval } from '../planning/approval';

export interface Turn {
  role: 'user' | 'assistant';
  text: string;
  at: string;
  /** Short id of the message in the session's memory thread (retrieve_message). */
  messageId?: string;
  runId?: string;
}

/** Seed 000's durable, structured summary of what still matters across turns. */
export interface TaskState {
  CurrentGoal: string;
  ActiveFlow: string;
  OpenLoops: string[];
  ImportantFacts: string[];
  LastDecision: string;
  UpdatedAt: string;
}

export const emptyTaskState = (): TaskState => ({ CurrentGoal: '', ActiveFlow: '', OpenLoops: [], ImportantFacts: [], LastDecision: '', UpdatedAt: '' });

/**
 * The session's status for one of its runs; `waiting_user_confirmation` marks a yes/no question,
 * `waiting_approval` a tool call held for the person's approval (issue 28). `waiting_review` is only
 * ever reported by a child run to the run above it, which shows its plan review (src/engine/relay.ts).
 */
export const SESSION_RUN_STATUSES = ['planning', 'running', 'waiting_user', 'waiting_user_confirmation', 'completed', 'failed', 'cancelled', 'waiting_approval', 'waiting_review'] as const;
export type SessionRunStatus = (typeof SESSION_RUN_STATUSES)[number];

export interface SessionRun {
  runId: string;
  goal: string;
  status: SessionRunStatus;
  question: string | null;
  finalAnswer: string | null;
  lastError: string | null;
  startedAt: string;
  /** When the run last asked its question (orders replies when several runs wait). */
  askedAt: string | null;
  /** A run of seed 003's tree engine, a tree first or ReAct first (absent: the planner), so a retry runs the same way. */
  engine?: 'tree' | 'react';
  /** Status `waiting_approval`: the call that waits (its step, tool, args and why). */
  approval?: PendingApproval | null;
}

/** The statuses in which a run waits for the person: a question, a yes/no question, a call to approve. */
export const WAITING: readonly SessionRunStatus[] = ['waiting_user', 'waiting_user_confirmation', 'waiting_approval'];
export const FINISHED: readonly SessionRunStatus[] = ['completed', 'failed', 'cancelled'];

/** A yes/no question: it begins like one or says so. */
export function isConfirmationQuestion(question: string): boolean {
  const q = question.trim();
  return (
    /\b(yes\s*\/\s*no|y\s*\/\s*n)\b/i.test(q) ||
    (/^(should|shall|do|does|did|is|are|was|were|can|could|would|will|may|want|proceed|continue|confirm)\b/i.test(q) && q.endsWith('?')) ||
    /(吗|是否|确认)[？?]?$/.test(q)
  );
}

const YES = new Set(['yes', 'y', 'yeah', 'yep', 'sure', 'ok', 'okay', 'confirm', 'confirmed', 'go ahead', 'proceed', 'continue', '继续', '好', '好的', '是', '是的', '可以', '确认']);
const NO = new Set(['no', 'n', 'nope', 'cancel', 'stop', "don't", 'do not', '不', '不要', '否', '取消', '算了']);

const normalize = (text: string) =>
  text
    .trim()
    .toLowerCase()
    .replace(/[.!。！\s]+$/u, '');

/** Short confirmations, answered in code: "yes" / "no", or null when the text is more than that. */
export function confirmation(text: string): 'yes' | 'no' | null {
  const t = normalize(text);
  if (YES.has(t)) return 'yes';
  if (NO.has(t)) return 'no';
  return null;
}

/** What a message answering a held tool call says: run it, do not (with the rest as feedback), or run it changed (in words, for the model). */
export type ApprovalAnswer = { decision: 'approve' } | { decision: 'reject'; feedback?: string } | { decision: 'edit'; text: string };

const APPROVE = new Set([...YES, 'approve', 'approved', 'allow', 'allowed', 'accept', 'do it', 'run it', 'lgtm', 'yes please', 'ok go ahead', '同意', '批准', '行']);
/** A rejection: its first word or phrase, then (after a comma, colon, dash or space) the feedback. */
const REJECT = /^(no|nope|nah|reject(?:ed)?|deny|denied|decline|don[’']?t|do not|cancel|stop|不要|不行|不|否|取消|拒绝|算了)(?=$|[\s,.:;!?，。：；！—-])[\s,.:;!?，。：；！—-]*([\s\S]*)$/iu;

/**
 * A message that answers a held tool call, in code: short confirmations (`yes`, `ok`, `approve`, …)
 * approve it; `no` / `reject …` (and the like) reject it, the rest of the message being the feedback;
 * anything else is an edit in words, which the `approval_edit` call turns into arguments.
 */
export function approvalAnswer(text: string): ApprovalAnswer {
  const t = normalize(text);
  if (APPROVE.has(t)) return { decision: 'approve' };
  if (confirmation(t) === 'no') return { decision: 'reject' };
  const rejected = REJECT.exec(text.trim());
  if (rejected) {
    const feedback = (rejected[2] ?? '').trim();
    return feedback ? { decision: 'reject', feedback } : { decision: 'reject' };
  }
  return { decision: 'edit', text: text.trim() };
}

const RETRY = new Set(['continue', 'try again', 'retry', 'again', 'redo', '再试', '再试一次', '继续', '重试']);
export const isRetryPhrase = (text: string) => RETRY.has(normalize(text));

export const COMMANDS = ['/clear', '/state', '/help', '/end'] as const;

export type Route =
  | { kind: 'command'; command: (typeof COMMANDS)[number] | 'unknown'; text: string }
  | { kind: 'reply'; runId: string; text: string }
  | { kind: 'approval'; runId: string; text: string; answer: ApprovalAnswer }
  | { kind: 'retry'; runId: string; goal: string }
  | { kind: 'nothing_to_retry' }
  | { kind: 'new_run'; goal: string };

/** A judgement of a message sent while runs wait (the `message_route` call): a reply (to which run), or a new request. */
export interface RouteJudgement {
  route: 'reply' | 'new_request';
  runId?: string;
}

/** The runs waiting for the person, the most recently asked first (what a judgement chooses from). */
export function waitingNewestFirst(runs: readonly SessionRun[]): SessionRun[] {
  return runs.filter((r) => WAITING.includes(r.status)).sort((a, b) => (b.askedAt ?? '').localeCompare(a.askedAt ?? ''));
}

/**
 * Whether a message needs judging (seed 000's routing between a reply and a new request): some run
 * waits, and the message is neither a command, nor addressed to a run (`@<runId> …`), nor a yes/no
 * answer to a yes/no question — those are replies by rule, with no model call.
 */
export function needsJudgement(runs: readonly SessionRun[], text: string): boolean {
  const trimmed = text.trim();
  if (trimmed.startsWith('/')) return false;
  const waiting = runs.filter((r) => WAITING.includes(r.status));
  if (waiting.length === 0) return false;
  const addressed = /^@(\S+)\s+/.exec(trimmed);
  if (addressed && waiting.some((r) => r.runId === addressed[1])) return false;
  // An approval, or a rejection, of a held call is an answer by rule (an edit in words is judged).
  if (waiting.some((r) => r.status === 'waiting_approval') && approvalAnswer(trimmed).decision !== 'edit') return false;
  return !(confirmation(trimmed) !== null && waiting.some((r) => r.status === 'waiting_user_confirmation'));
}

/**
 * Decides what a message is (seed 000's resume and reset rules), in this order:
 * slash commands; a reply to the run that waits (the most recently asked one when several wait,
 * or the one named with `@<runId>`), with yes/no confirmations normalized for yes/no questions, and
 * an answer to a held tool call (`approval`, see `approvalAnswer`) when that run waits for approval —
 * unless `judged` says the message is a new request, or a reply to another waiting run;
 * a retry phrase when nothing waits (retries the latest failed or cancelled run); else a new run.
 */
export function routeMessage(runs: readonly SessionRun[], text: string, judged?: RouteJudgement): Route {
  const trimmed = text.trim();
  if (trimmed.startsWith('/')) {
    const command = trimmed.split(/\s+/)[0]?.toLowerCase() ?? '';
    return { kind: 'command', command: (COMMANDS as readonly string[]).includes(command) ? (command as (typeof COMMANDS)[number]) : 'unknown', text: trimmed };
  }
  const waiting = runs.filter((r) => WAITING.includes(r.status));
  const judgedNew = judged?.route === 'new_request' && needsJudgement(runs, text);
  if (waiting.length > 0 && !judgedNew) {
    const addressed = /^@(\S+)\s+([\s\S]*)$/.exec(trimmed);
    const named = addressed ? waiting.find((r) => r.runId === addressed[1]) : undefined;
    const chosen = judged?.route === 'reply' && !named ? waiting.find((r) => r.runId === judged.runId) : undefined;
    const target = named ?? chosen ?? waitingNewestFirst(waiting)[0]!;
    const body = named && addressed ? (addressed[2] ?? '') : trimmed;
    if (target.status === 'waiting_approval') return { kind: 'approval', runId: target.runId, text: body, answer: approvalAnswer(body) };
    const answer = target.status === 'waiting_user_confirmation' ? confirmation(body) : null;
    return { kind: 'reply', runId: target.runId, text: answer ?? body };
  }
  if (isRetryPhrase(trimmed)) {
    const last = [...runs].reverse().find((r) => r.status === 'failed' || r.status === 'cancelled');
    return last ? { kind: 'retry', runId: last.runId, goal: last.goal } : { kind: 'nothing_to_retry' };
  }
  return { kind: 'new_run', goal: trimmed };
}

/** A cheap estimate of a turn's tokens (≈ 4 characters per token): enough to decide when to compress. */
export const estimateTokens = (text: string) => Math.ceil(text.length / 4);

/**
 * Compress when the recent turns (given by their estimated tokens, see `estimateTokens`) exceed the
 * window or their tokens exceed the threshold.
 */
export function needsCompression(turnTokens: readonly number[], limits: { window: number; tokenThreshold: number }): boolean {
  return turnTokens.length > limits.window || turnTokens.reduce((sum, t) => sum + t, 0) > limits.tokenThreshold;
}

export const HELP_TEXT = [
  'Talk to me and I plan and carry out what you ask; when I ask you something, just answer.',
  '/state — show the conversation memory (recent turns, task state, runs)',
  '/clear — forget the conversation: recent turns, task state and pending runs',
  '/end — end the conversation: what is worth keeping goes to long-term memory',
  '/help — this text',
  'Retry a failed request with "try again" (or "continue", "再试"). Address a waiting run with "@<runId> your answer".',
].join('\n');
