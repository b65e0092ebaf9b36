/**
 * The offline demo model: deterministic rules instead of a language model, so
 * Threadline runs on a fresh machine without a key. It plans arithmetic, notes
 * and time requests with the built-in tools, asks when it cannot tell what is
 * wanted, and says in every answer that it is the demo model. Each call's rule
 * lives with the call (src/calls/, `demo`).
 */
import { demoReply } from '../calls/registry';
import type { ModelProvider, ModelRequest } from './provider';

export const DEMO_LABEL = 'offline-demo';

export class DemoProvider implements ModelProvider {
  readonly label = DEMO_LABEL;

  async complete(request: ModelRequest): Promise<string> {
    return JSON.stringify(demoReply(request.name, request.context));
  }
}
