/** The `tally` test tool: counts each label it is called with, so a test can prove which tool steps really ran (and how often). */
import { z } from 'zod';
import { defineTool } from '../../src/tools/tool';

export function tallyTool() {
  const counts = new Map<string, number>();
  const tool = defineTool({
    name: 'tally',
    quick: true,
    description: 'Counts a label (test tool).',
    input: z.object({ label: z.string() }),
    async handler({ label }) {
      counts.set(label, (counts.get(label) ?? 0) + 1);
      return { counted: label };
    },
  });
  return { tool, counts };
}
