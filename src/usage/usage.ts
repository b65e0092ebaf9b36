/**
 * Token accounting: every model call's usage (prompt, completion, cached tokens), gathered per
 * activity attempt without threading it through each call — the provider reports into the tally
 * of the activity it runs in (AsyncLocalStorage), and the worker records the tally with the run,
 * session and user it belongs to (src/usage/record-usage.ts).
 */
import { AsyncLocalStorage } from 'node:async_hooks';

export interface Usage {
  promptTokens: number;
  completionTokens: number;
  cachedTokens: number;
  calls: number;
}

export const noUsage = (): Usage => ({ promptTokens: 0, completionTokens: 0, cachedTokens: 0, calls: 0 });

export function addUsage(into: Usage, more: Usage): Usage {
  into.promptTokens += more.promptTokens;
  into.completionTokens += more.completionTokens;
  into.cachedTokens += more.cachedTokens;
  into.calls += more.calls;
  return into;
}

const tallies = new AsyncLocalStorage<Usage>();

/** Runs `fn` with a fresh tally that model calls inside it report into. */
export async function tallyUsage<T>(fn: () => Promise<T>): Promise<{ usage: Usage; result: Promise<T> }> {
  const usage = noUsage();
  const result = tallies.run(usage, fn);
  await result.catch(() => undefined);
  return { usage, result };
}

/** A model call's usage, into the tally of whatever activity it runs in (none: not counted). */
export function reportUsage(usage: Omit<Usage, 'calls'>): void {
  const tally = tallies.getStore();
  if (tally) addUsage(tally, { ...usage, calls: 1 });
}
