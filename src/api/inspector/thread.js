// One memory thread: its chain of states, a state's chunks, diff, rollback, fork, checkpoints, audit and live stream.
import { useEffect, useRef, useState } from 'preact/hooks';
import { api, enc, qs } from './api.js';
import { AuditView, LiveStream } from './audit.js';
import { ChunkTable } from './chunks.js';
import { ErrorLine, contentText, html, when } from './html.js';

export function ThreadView({ threadId, openThread }) {
  const base = `/v1/threads/${enc(threadId)}`;
  const [thread, setThread] = useState(null);
  const [states, setStates] = useState([]);
  const [checkpoints, setCheckpoints] = useState([]);
  const [selected, setSelected] = useState(null); // a stateId, or null: follow the head
  const [view, setView] = useState(null); // {state, chunks} of the selected state
  const [diff, setDiff] = useState(null);
  const [diffFrom, setDiffFrom] = useState('');
  const [error, setError] = useState('');
  const [version, setVersion] = useState(0); // bumped to reload after a change
  const refresh = () => setVersion((v) => v + 1);
  const guard = (fn) => async (...args) => {
    setError('');
    try {
      await fn(...args);
    } catch (err) {
      setError(err.message);
    }
  };

  const load = guard(async () => {
    const [t, s, c] = await Promise.all([api('GET', base), api('GET', `${base}/states`), api('GET', `${base}/checkpoints`)]);
    setThread(t);
    setStates(s.states);
    setCheckpoints(c.checkpoints);
  });
  useEffect(() => void load(), [threadId, version]);

  const shownId = selected ?? thread?.headStateId;
  const loadView = guard(async () => {
    if (!shownId || !thread) return;
    setView(shownId === thread.headStateId ? { state: thread.state, chunks: thread.chunks } : await api('GET', `${base}/states/${enc(shownId)}`));
  });
  useEffect(() => void loadView(), [shownId, thread]);

  const rollback = guard(async (stateId) => {
    await api('POST', `${base}/rollback`, { stateId, reason: 'rolled back in the inspector' });
    setSelected(null);
    refresh();
  });
  const fork = guard(async (stateId) => {
    const forked = await api('POST', `${base}/fork`, { stateId, reason: 'forked in the inspector' });
    openThread(forked.threadId);
  });
  const checkpoint = guard(async (e) => {
    e.preventDefault();
    const name = new FormData(e.target).get('name');
    await api('POST', `${base}/checkpoints`, { name });
    e.target.reset();
    refresh();
  });
  const showDiff = guard(async () => {
    if (!diffFrom) return;
    setDiff(await api('GET', `${base}/diff${qs({ from: diffFrom, to: shownId })}`));
  });

  // The live stream tells of every new operation: reload, coalescing a burst into one read.
  const pending = useRef(0);
  const onOperation = () => {
    clearTimeout(pending.current);
    pending.current = setTimeout(refresh, 150);
  };
  useEffect(() => () => clearTimeout(pending.current), []);

  if (!thread) return html`<${ErrorLine} error=${error} /><p>Loading ${threadId}…</p>`;
  const isHead = shownId === thread.headStateId;
  return html`
    <section>
      <h2>Thread <code>${thread.threadId}</code></h2>
      <p>User ${thread.userId} · head <code data-testid="head">${thread.headStateId}</code> · limits soft ${thread.limits.soft} / hard ${thread.limits.hard}
        ${thread.forkedFrom && html` · forked from <a href="#" onClick=${(e) => { e.preventDefault(); openThread(thread.forkedFrom.threadId); }}>${thread.forkedFrom.threadId}</a>`}</p>
      <${ErrorLine} error=${error} />
      <form class="inline" onSubmit=${checkpoint}>
        <input name="name" placeholder="checkpoint name" required /><button type="submit">Checkpoint the head</button>
        ${checkpoints.length > 0 && html`<span class="muted">Checkpoints: ${checkpoints.map((c) => html`<a href="#" onClick=${(e) => { e.preventDefault(); setSelected(c.stateId); }}>${c.name}</a> `)}</span>`}
      </form>
    </section>
    <section>
      <h3>States</h3>
      <table data-testid="states">
        <thead><tr><th>seq</th><th>state</th><th>operation</th><th>at</th><th></th></tr></thead>
        <tbody>
          ${[...states].reverse().map((s) => html`
            <tr key=${s.stateId} class=${s.stateId === shownId ? 'selected' : ''} data-state=${s.stateId}>
              <td>${s.seq}</td>
              <td><code>${s.stateId}</code>${s.stateId === thread.headStateId ? ' (head)' : ''}</td>
              <td>${s.operation ? `${s.operation.kind} by ${s.operation.origin}: ${s.operation.reason}` : 'created'}</td>
              <td>${when(s.at)}</td>
              <td>
                <button onClick=${() => setSelected(s.stateId)}>View</button>
                <button onClick=${() => setDiffFrom(s.stateId)}>Diff from</button>
                ${s.stateId !== thread.headStateId && html`<button onClick=${() => rollback(s.stateId)}>Rollback</button>`}
                <button onClick=${() => fork(s.stateId)}>Fork</button>
              </td>
            </tr>`)}
        </tbody>
      </table>
    </section>
    ${diffFrom && html`
      <section>
        <h3>Diff <code>${diffFrom}</code> → <code>${shownId}</code> <button onClick=${showDiff}>Show</button> <button onClick=${() => { setDiffFrom(''); setDiff(null); }}>Close</button></h3>
        ${diff && html`
          <p>${diff.added.length} added, ${diff.removed.length} removed${diff.reordered ? ', reordered' : ''}</p>
          <ul data-testid="diff">
            ${diff.added.map((c) => html`<li key=${c.id}>+ ${c.type}: ${contentText(c.content).slice(0, 200)}</li>`)}
            ${diff.removed.map((c) => html`<li key=${c.id}>− ${c.type}: ${contentText(c.content).slice(0, 200)}</li>`)}
          </ul>`}
      </section>`}
    ${view && html`<${ChunkTable} base=${base} state=${view.state} chunks=${view.chunks} limits=${thread.limits} editable=${isHead} onChanged=${refresh} />`}
    <${AuditView} base=${base} />
    <${LiveStream} base=${base} onOperation=${onOperation} />`;
}
