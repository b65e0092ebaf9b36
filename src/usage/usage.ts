/**
 * Token accounting: every model call's usage (prompt, completion, cached tokens), gathered per
 * activity attempt without threading it through each call — the provider reports into the tally
 * of the activity it runs in (AsyncLocalStorage), and the worker records the tally with the run,
 * session and user it belongs to (src/usage/record-usage.ts). Before each call, the tally's guard
 * may refuse it (beforeModelCall), so a budget holds within a run, not only at its start.
 */
import { ContextSlot } from '../telemetry/context-slot';

export interface Usage {
  promptTokens: number;
  completionTokens: number;
  cachedTokens: number;
  calls: number;
}

export const noUsage = (): Usage => ({ promptTokens: 0, completionTokens: 0, cachedTokens: 0, calls: 0 });

/** What a budget counts of a usage: its prompt and completion tokens. */
export const tokensOf = (usage: Pick<Usage, 'promptTokens' | 'completionTokens'>): number => usage.promptTokens + usage.completionTokens;

export function addUsage(into: Usage, more: Usage): Usage {
  into.promptTokens += more.promptTokens;
  into.completionTokens += more.completionTokens;
  into.cachedTokens += more.cachedTokens;
  into.calls += more.calls;
  return into;
}

/**
 * Asked before each model call (chat or embeddings) with what the tally holds so far: throws to
 * refuse the call (a user's token budget is used up, src/usage/budget.ts).
 */
export type CallGuard = (pending: Usage) => Promise<void>;

interface Tally {
  usage: Usage;
  /** The same calls per model that named itself (an embeddings model); '' for the rest (the chat model). */
  byModel: Map<string, Usage>;
  guard?: CallGuard | undefined;
}

const tallies = new ContextSlot<Tally>('usageTally');

/** Runs `fn` with a fresh tally that model calls inside it report into, each call first cleared by `guard`. */
export async function tallyUsage<T>(fn: () => Promise<T>, guard?: CallGuard): Promise<{ usage: Usage; byModel: ReadonlyMap<string, Usage>; result: Promise<T> }> {
  const usage = noUsage();
  const byModel = new Map<string, Usage>();
  const result = tallies.run({ usage, byModel, guard }, fn);
  await result.catch(() => undefined);
  return { usage, byModel, result };
}

/** Before a model call: the guard of whatever tally it runs in may refuse it (none: allowed). */
export async function beforeModelCall(): Promise<void> {
  const tally = tallies.get();
  await tally?.guard?.(tally.usage);
}

/**
 * A model call's usage, into the tally of whatever activity it runs in (none: not counted); `model`
 * when it is not the one the tally is recorded under (embeddings, priced apart from chat).
 */
export function reportUsage(usage: Omit<Usage, 'calls'>, model = ''): void {
  const tally = tallies.get();
  if (!tally) return;
  const call = { ...usage, calls: 1 };
  addUsage(tally.usage, call);
  let ofModel = tally.byModel.get(model);
  if (!ofModel) tally.byModel.set(model, (ofModel = noUsage()));
  addUsage(ofModel, call);
}
