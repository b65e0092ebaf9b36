/** A scripted in-process model for unit tests of model calls (no HTTP; see stub-model-server.ts for that). */
import type { ModelProvider, ModelRequest } from '../../src/llm/provider';

/** Answers from its script in order and throws when the script runs out. */
export class ScriptedModel implements ModelProvider {
  readonly label = 'scripted';
  /** Snapshots of every request, as they were when sent. */
  readonly requests: ModelRequest[] = [];
  constructor(private readonly script: string[]) {}

  async complete(request: ModelRequest): Promise<string> {
    this.requests.push({ ...request, messages: request.messages.map((m) => ({ ...m })) });
    const reply = this.script.shift();
    if (reply === undefined) throw new Error(`scripted model: no reply left for call #${this.requests.length} (${request.name})`);
    return reply;
  }
}
