/** `blueprint_params` (seed 003's blueprints): a blueprint's parameters extracted from a goal (validated against its JSON Schema after). */
import { z } from 'zod';
import { modelCall } from './call';
import { TREE_CONTEXT, treeMessages } from './tree';

export const BlueprintParamsReplySchema = z.object({ params: z.record(z.string(), z.unknown()) });
export type BlueprintParamsReply = z.infer<typeof BlueprintParamsReplySchema>;

export const blueprintParams = modelCall({
  name: 'blueprint_params',
  schema: BlueprintParamsReplySchema,
  context: TREE_CONTEXT,
  messages: (ctx) =>
    treeMessages(ctx, {
      instruction: 'Extract the blueprint\'s parameters from the goal. Reply {"params": {...}}.',
      detail: ctx.blueprint ? `Blueprint ${ctx.blueprint.name}: ${ctx.blueprint.description}\nParameters (JSON Schema):\n${JSON.stringify(ctx.blueprint.params)}` : null,
    }),
  demo: () => ({ params: {} }),
});
