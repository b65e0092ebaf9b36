import { evaluate } from 'mathjs';
import { z } from 'zod';
import { defineTool } from './tool';

export const calculator = defineTool({
  name: 'calculator',
  description: 'Evaluates an arithmetic expression, e.g. "(12 + 30) * 2" or "sqrt(16) / 4".',
  input: z.object({ expression: z.string().min(1).max(500) }),
  async handler({ expression }) {
    const result: unknown = evaluate(expression);
    if (typeof result !== 'number' || !Number.isFinite(result)) {
      throw new Error(`"${expression}" does not evaluate to a finite number`);
    }
    return { value: result };
  },
});
