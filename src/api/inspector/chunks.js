// A state's chunks: a token bar against the thread's limits, the chunks' metadata, and a person's edits.
import { useState } from 'preact/hooks';
import { api } from './api.js';
import { ErrorLine, contentText, html } from './html.js';

const CHUNK_TYPES = ['system', 'agent', 'workflow', 'delegation', 'environment', 'compacted', 'user', 'thinking', 'response', 'action', 'action_response', 'output'];
const RETENTION = ['CRITICAL', 'COMPRESSIBLE', 'BATCH_COMPRESSIBLE', 'DISPOSABLE', 'EPHEMERAL', 'OTHERS'];

/** Tokens used against the soft limit (the marker) and the hard limit (the full width). */
export function TokenBar({ tokens, limits }) {
  const pct = (n) => `${Math.min(100, (n / limits.hard) * 100)}%`;
  const level = tokens > limits.hard ? 'over-hard' : tokens > limits.soft ? 'over-soft' : 'ok';
  return html`
    <div class="bar" title=${`${tokens} tokens; soft ${limits.soft}, hard ${limits.hard}`}>
      <div class=${`fill ${level}`} style=${{ width: pct(tokens) }}></div>
      <div class="soft" style=${{ left: pct(limits.soft) }}></div>
    </div>
    <p class="muted" data-testid="tokens">${tokens} tokens · soft ${limits.soft} · hard ${limits.hard}</p>`;
}

const provenanceText = (p) => Object.entries(p ?? {}).map(([k, v]) => `${k}: ${v}`).join(', ');

/** Text content is edited as text; any other content as its JSON. */
function parseContent(kind, text) {
  if (kind === 'text') return { kind: 'text', text };
  return JSON.parse(text);
}
const editableText = (content) => (content.kind === 'text' ? content.text : JSON.stringify(content, null, 1));

function Options({ values, selected }) {
  return values.map((v) => html`<option value=${v} selected=${v === selected}>${v}</option>`);
}

/** Edits one chunk (an `update` operation of origin user). */
function ChunkEditor({ base, chunk, onDone }) {
  const [error, setError] = useState('');
  async function save(e) {
    e.preventDefault();
    const form = new FormData(e.target);
    try {
      const patch = { content: parseContent(chunk.content.kind, String(form.get('content'))), priority: Number(form.get('priority')), retention: String(form.get('retention')) };
      await api('POST', `${base}/operations`, { operation: { op: 'update', chunkId: chunk.id, patch }, reason: String(form.get('reason') || 'edited in the inspector') });
      onDone(true);
    } catch (err) {
      setError(err.message);
    }
  }
  return html`
    <form onSubmit=${save} data-testid="chunk-editor">
      <textarea name="content">${editableText(chunk.content)}</textarea>
      <div class="inline">
        <label>priority <input name="priority" type="number" min="0" max="100" value=${chunk.priority} /></label>
        <label>retention <select name="retention"><${Options} values=${RETENTION} selected=${chunk.retention} /></select></label>
        <input name="reason" placeholder="reason" />
        <button type="submit">Save</button> <button type="button" onClick=${() => onDone(false)}>Cancel</button>
      </div>
      <${ErrorLine} error=${error} />
    </form>`;
}

/** Adds a text chunk at the end (an `add` operation of origin user). */
function AddChunk({ base, onDone }) {
  const [error, setError] = useState('');
  async function add(e) {
    e.preventDefault();
    const form = new FormData(e.target);
    const chunk = { type: String(form.get('type')), content: { kind: 'text', text: String(form.get('text')) } };
    if (form.get('priority') !== '') chunk.priority = Number(form.get('priority'));
    if (form.get('retention')) chunk.retention = String(form.get('retention'));
    try {
      await api('POST', `${base}/operations`, { operation: { op: 'add', chunks: [chunk] }, reason: String(form.get('reason') || 'added in the inspector') });
      e.target.reset();
      setError('');
      onDone();
    } catch (err) {
      setError(err.message);
    }
  }
  return html`
    <form onSubmit=${add} data-testid="add-chunk">
      <h3>Add a chunk</h3>
      <textarea name="text" required placeholder="text"></textarea>
      <div class="inline">
        <label>type <select name="type"><${Options} values=${CHUNK_TYPES} selected="user" /></select></label>
        <label>priority <input name="priority" type="number" min="0" max="100" placeholder="default" /></label>
        <label>retention <select name="retention"><option value="">default</option><${Options} values=${RETENTION} /></select></label>
        <input name="reason" placeholder="reason" />
        <button type="submit">Add</button>
      </div>
      <${ErrorLine} error=${error} />
    </form>`;
}

export function ChunkTable({ base, state, chunks, limits, editable, onChanged }) {
  const [editing, setEditing] = useState(null);
  return html`
    <section>
      <h3>Chunks of <code>${state.stateId}</code> (seq ${state.seq}, ${chunks.length} chunks)</h3>
      <${TokenBar} tokens=${state.tokens} limits=${limits} />
      <table data-testid="chunks">
        <thead><tr><th>type</th><th>priority</th><th>retention</th><th>tokens</th><th>provenance</th><th>content</th><th></th></tr></thead>
        <tbody>
          ${chunks.map((c) => html`
            <tr key=${c.id} data-chunk=${c.id}>
              <td>${c.type}</td><td>${c.priority}</td><td>${c.retention}</td><td>${c.tokens}</td>
              <td class="mono">${provenanceText(c.provenance)}${c.messageId ? ` message: ${c.messageId}` : ''}</td>
              <td>${editing === c.id
                ? html`<${ChunkEditor} base=${base} chunk=${c} onDone=${(changed) => { setEditing(null); if (changed) onChanged(); }} />`
                : html`<pre>${contentText(c.content)}</pre>`}</td>
              <td>${editable && c.retention !== 'CRITICAL' && editing !== c.id && html`<button onClick=${() => setEditing(c.id)}>Edit</button>`}</td>
            </tr>`)}
        </tbody>
      </table>
      ${editable ? html`<${AddChunk} base=${base} onDone=${onChanged} />` : html`<p class="muted">An earlier state: edits go to the head.</p>`}
    </section>`;
}
