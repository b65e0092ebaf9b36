/**
 * Tool arguments checked against a JSON Schema (MCP tools publish theirs) with Ajv, wrapped as a zod
 * schema so the registry validates every tool one way and reports errors in one format.
 */
import Ajv, { type ValidateFunction } from 'ajv';
import Ajv2020 from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import { z } from 'zod';

// Tools' schemas come from other programs: unknown keywords are tolerated, not fatal (strict: false).
const options = { allErrors: true, strict: false, validateSchema: false, addUsedSchema: false } as const;
const draft07 = addFormats(new Ajv(options));
const draft2020 = addFormats(new Ajv2020(options));

/** Compiles `schema` (draft-07 unless its `$schema` says 2020-12); throws when it is no valid schema. */
export function compileJsonSchema(schema: Record<string, unknown>): ValidateFunction {
  const ajv = typeof schema.$schema === 'string' && schema.$schema.includes('2020-12') ? draft2020 : draft07;
  return ajv.compile(schema);
}

/** A zod schema that accepts exactly what `schema` accepts; each Ajv error becomes an issue at its path. */
export function jsonSchemaInput(schema: Record<string, unknown>): z.ZodType<Record<string, unknown>> {
  const validate = compileJsonSchema(schema);
  return z.custom<Record<string, unknown>>().superRefine((value, ctx) => {
    if (validate(value)) return;
    for (const error of validate.errors ?? []) {
      const path = error.instancePath
        .split('/')
        .slice(1)
        .map((p) => p.replace(/~1/g, '/').replace(/~0/g, '~'));
      const extra = error.keyword === 'additionalProperties' ? ` ("${String(error.params.additionalProperty)}")` : '';
      ctx.addIssue({ code: 'custom', message: `${error.message ?? 'invalid'}${extra}`, path });
    }
  });
}
