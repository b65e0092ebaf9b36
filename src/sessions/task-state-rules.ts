/**
 * Seed 000's rules for what TaskState must not hold, checked in code on every
 * `task_state_summary` reply rather than only asked for in its prompt: live
 * state that changes outside the chat, step-level pending items, and
 * conclusions about whether tools or configuration exist. Pure.
 */
import type { TaskStateSummaryReply } from '../calls/task-state-summary';

export type TaskStateRule = 'live_state' | 'step_pending' | 'config_conclusion';

export const RULE_TEXT: Record<TaskStateRule, string> = {
  live_state: 'live state that changes outside the chat',
  step_pending: 'a step-level pending item of a plan',
  config_conclusion: 'a conclusion about tools or configuration, to be checked with tools',
};

export interface DroppedEntry {
  field: keyof TaskStateSummaryReply;
  entry: string;
  rule: TaskStateRule;
}

/** Balances, positions, prices…: a live word stated as a value (a number, or "is …"). "Check my balance" is a goal, not a balance. */
const LIVE_WORD = /\b(balances?|holdings?|positions?|equity|margin|pnl|p&l|unreali[sz]ed|prices?|(exchange|market|spot)\s+rates?)\b|余额|持仓|仓位|价格/i;
const STATED_AS_VALUE = /\d|\b(is|are|was|were|stands at|sits at|now|currently)\b|[:=]|为|是/i;

/** Work items of the running plan: waiting for an input, calling a tool, the next step. */
const STEP_PENDING = [
  /^\s*(to\s+)?(wait(ing)?\s+for|call|run|invoke|execute|fetch|retry|re-?run)\b/i,
  /\bwait(ing)?\s+for\s+(the\s+)?(user|person|api[\s-]?key|reply|answer|confirmation|field|input|tool)\b/i,
  /\b(call|calling|invoke|invoking|run|running)\s+`?[a-z][a-z0-9]*(_[a-z0-9]+)+`?/i,
  /\b(next|pending|remaining)\s+step\b|\bstep\s+s?\d+\b/i,
  /等待|调用/,
];

/** "The exchange is configured", "no model set up", "tool X unavailable": stale as soon as someone changes the setup. */
const CONFIG_SUBJECT = /\b(models?|exchanges?|tools?|traders?|api[\s-]?keys?|config(uration)?s?|credentials?|integrations?)\b|配置|模型|交易所/i;
const CONFIG_STATUS =
  /\b(configured|unconfigured|set\s?up|exists?|missing|(un)?available|present|absent|(en|dis)abled|(dis)?connected|installed|registered|no\s+\w+\s+(is|are)|none)\b|已配置|未配置|没有|不存在/i;

/** The rule an entry breaks, or null when it may stay. */
export function brokenRule(entry: string): TaskStateRule | null {
  if (LIVE_WORD.test(entry) && STATED_AS_VALUE.test(entry)) return 'live_state';
  if (STEP_PENDING.some((re) => re.test(entry))) return 'step_pending';
  if (CONFIG_SUBJECT.test(entry) && CONFIG_STATUS.test(entry)) return 'config_conclusion';
  return null;
}

/**
 * The reply with every entry that breaks a rule dropped (list entries removed, text fields emptied),
 * and what was dropped, for the audit.
 */
export function enforceTaskStateRules(reply: TaskStateSummaryReply): { taskState: TaskStateSummaryReply; dropped: DroppedEntry[] } {
  const dropped: DroppedEntry[] = [];
  const keep = (field: keyof TaskStateSummaryReply, entry: string): boolean => {
    const rule = entry.trim() === '' ? null : brokenRule(entry);
    if (rule) dropped.push({ field, entry, rule });
    return rule === null;
  };
  const text = (field: 'CurrentGoal' | 'ActiveFlow' | 'LastDecision') => (keep(field, reply[field]) ? reply[field] : '');
  const list = (field: 'OpenLoops' | 'ImportantFacts') => reply[field].filter((entry) => keep(field, entry));
  const taskState: TaskStateSummaryReply = {
    CurrentGoal: text('CurrentGoal'),
    ActiveFlow: text('ActiveFlow'),
    OpenLoops: list('OpenLoops'),
    ImportantFacts: list('ImportantFacts'),
    LastDecision: text('LastDecision'),
  };
  return { taskState, dropped };
}

/** One line per dropped entry, as the audit records it. */
export const describeDropped = (d: DroppedEntry) => `${d.field}: "${d.entry}" (${RULE_TEXT[d.rule]})`;
