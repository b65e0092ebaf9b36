/**
 * `GET /docs`: the API description as one self-contained HTML page (no scripts, nothing from a
 * CDN), rendered from the OpenAPI document itself, so the page and `/openapi.json` always agree.
 */
import type { OpenApiDocument } from './openapi';
import { METHODS } from './routes-registry';

type Schema = NonNullable<NonNullable<OpenApiDocument['components']>['schemas']>[string] | { $ref: string };
interface Operation {
  method: string;
  path: string;
  summary?: string;
  description?: string;
  tags?: string[];
  security?: unknown[];
  parameters?: ({ name: string; in: string; required?: boolean; description?: string; schema?: Schema } | { $ref: string })[];
  requestBody?: { content: Record<string, { schema?: Schema }> } | { $ref: string };
  responses?: Record<string, { description: string; content?: Record<string, { schema?: Schema }> } | { $ref: string }>;
}

const escape = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
/** Prose of the document: escaped, with its `code` spans as code. */
const prose = (s: string | undefined) => escape(s ?? '').replace(/`([^`]+)`/g, '<code>$1</code>');
const anchor = (s: string) => s.replace(/[^A-Za-z0-9_-]+/g, '-');

/** A schema as indented JSON, each `$ref` a link to the component it names. */
const schemaBlock = (schema: Schema | undefined) =>
  schema === undefined
    ? ''
    : `<pre>${escape(JSON.stringify(schema, null, 2)).replace(/&quot;#\/components\/schemas\/([^&]+)&quot;/g, (_m, name: string) => `&quot;<a href="#schema-${anchor(name)}">#/components/schemas/${name}</a>&quot;`)}</pre>`;

function operationsOf(doc: OpenApiDocument): Operation[] {
  const ops: Operation[] = [];
  for (const [path, item] of Object.entries(doc.paths ?? {})) {
    for (const method of METHODS) {
      const op = (item as Partial<Record<string, Omit<Operation, 'method' | 'path'>>>)[method];
      if (op) ops.push({ ...op, method, path });
    }
  }
  return ops;
}

function renderOperation(op: Operation): string {
  const params = (op.parameters ?? []).flatMap((p) => ('$ref' in p ? [] : [p]));
  const body = op.requestBody && !('$ref' in op.requestBody) ? op.requestBody.content['application/json']?.schema : undefined;
  const responses = Object.entries(op.responses ?? {}).flatMap(([status, r]) => ('$ref' in r ? [] : [{ status, ...r }]));
  return `<section class="op" id="${anchor(`${op.method}-${op.path}`)}">
<h3><span class="method ${op.method}">${op.method.toUpperCase()}</span> <code>${escape(op.path)}</code>${op.security?.length === 0 ? ' <small>no API key needed</small>' : ''}</h3>
<p>${prose(op.summary)}</p>${op.description ? `<p>${prose(op.description)}</p>` : ''}
${
  params.length
    ? `<table><tr><th>parameter</th><th>in</th><th>required</th><th>schema</th></tr>${params
        .map((p) => `<tr><td><code>${escape(p.name)}</code></td><td>${escape(p.in)}</td><td>${p.required ? 'yes' : 'no'}</td><td><code>${escape(JSON.stringify(p.schema ?? {}))}</code></td></tr>`)
        .join('')}</table>`
    : ''
}
${body ? `<details><summary>request body (application/json)</summary>${schemaBlock(body)}</details>` : ''}
<ul class="responses">${responses
    .map((r) => {
      const [type, media] = Object.entries(r.content ?? {})[0] ?? [];
      const head = `<b>${escape(r.status)}</b> ${prose(r.description)}${type ? ` <small>${escape(type)}</small>` : ''}`;
      // Only JSON bodies have a schema worth showing (a stream or a page is a string).
      return `<li>${type === 'application/json' && media?.schema ? `<details><summary>${head}</summary>${schemaBlock(media.schema)}</details>` : head}</li>`;
    })
    .join('')}</ul>
</section>`;
}

export function renderDocsPage(doc: OpenApiDocument): string {
  const ops = operationsOf(doc);
  const tags = [...new Set(ops.map((op) => op.tags?.[0] ?? 'other'))];
  const schemas = Object.entries(doc.components?.schemas ?? {});
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>${escape(doc.info.title)}</title>
<style>
body{font:15px/1.45 system-ui,sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem;color:#222}
code,pre{font:13px ui-monospace,monospace}pre{background:#f5f5f5;padding:.6rem;overflow:auto}
.op{border-top:1px solid #ddd;padding:.4rem 0}.method{display:inline-block;min-width:4.2em;color:#fff;background:#555;border-radius:3px;padding:0 .3em;text-align:center}
.get{background:#2a7ab0}.post{background:#3a8a3a}.delete{background:#b03a2a}.put,.patch{background:#a07010}
table{border-collapse:collapse}td,th{border:1px solid #ddd;padding:.2rem .5rem;text-align:left;vertical-align:top}nav a{margin-right:1em}
</style></head><body>
<h1>${escape(doc.info.title)} <small>${escape(doc.info.version)}</small></h1>
<p>${prose(doc.info.description)}</p>
<p>Machine-readable: <a href="/openapi.json">/openapi.json</a> (OpenAPI ${escape(doc.openapi)}).</p>
<nav>${tags.map((t) => `<a href="#tag-${anchor(t)}">${escape(t)}</a>`).join('')}<a href="#schemas">schemas</a></nav>
${tags
  .map(
    (t) =>
      `<h2 id="tag-${anchor(t)}">${escape(t)}</h2>${ops
        .filter((op) => (op.tags?.[0] ?? 'other') === t)
        .map(renderOperation)
        .join('\n')}`,
  )
  .join('\n')}
<h2 id="schemas">schemas</h2>
${schemas.map(([name, schema]) => `<section id="schema-${anchor(name)}"><h3><code>${escape(name)}</code></h3>${schemaBlock(schema)}</section>`).join('\n')}
</body></html>
`;
}
