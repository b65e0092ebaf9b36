/**
 * Seed 000's workflow versioning: what a run's plan was made with — the model, the version of the
 * prompts and the tool set. A run records it when it plans; a step that finds the worker changed
 * since then stops the run as stale instead of carrying on a plan made for other capabilities.
 * Pure: the worker computes its own version (src/activities/code-version.ts).
 */

export interface CodeVersion {
  /** The model's label, e.g. `gpt-5-mini` or `offline-demo`. */
  model: string;
  /** PROMPT_VERSION of the prompts (src/calls/registry.ts). */
  prompts: string;
  /** A hash of the tools' names and parameter schemas. */
  tools: string;
}

/** One line, for fingerprint comparisons (a session's capabilities) and messages. */
export const describeCodeVersion = (v: CodeVersion): string => `model ${v.model} · prompts v${v.prompts} · tools ${v.tools}`;

/** Why a run that recorded `recorded` is stale on a worker at `current`, or null when nothing changed. */
export function staleReason(recorded: CodeVersion, current: CodeVersion): string | null {
  const changes = [
    recorded.model !== current.model ? `the model (${recorded.model} → ${current.model})` : null,
    recorded.prompts !== current.prompts ? `the prompts (v${recorded.prompts} → v${current.prompts})` : null,
    recorded.tools !== current.tools ? 'the tools' : null,
  ].filter((c): c is string => c !== null);
  if (changes.length === 0) return null;
  return `stale run: ${changes.join(', ')} changed since it was planned, so its plan no longer fits what the agent can do; start it again`;
}
