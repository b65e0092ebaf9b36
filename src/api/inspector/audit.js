// A thread's audit trail (filtered by origin, kind and run) and its live operation stream.
import { useEffect, useState } from 'preact/hooks';
import { api, qs, streamEvents } from './api.js';
import { ErrorLine, html, when } from './html.js';

const ORIGINS = ['agent', 'user', 'system', 'observer'];
const KINDS = ['add', 'update', 'delete', 'reorder', 'replace', 'batch_replace', 'rollback', 'create', 'fork', 'checkpoint', 'read'];

const Select = ({ name, values }) => html`<select name=${name}><option value="">any ${name}</option>${values.map((v) => html`<option value=${v}>${v}</option>`)}</select>`;

function describe(record) {
  const target = record.target ? ` ${record.target}` : '';
  return `${record.kind}${target} by ${record.origin}: ${record.reason}`;
}

export function AuditView({ base }) {
  const [records, setRecords] = useState(null);
  const [error, setError] = useState('');
  async function search(e) {
    e.preventDefault();
    const form = new FormData(e.target);
    try {
      setError('');
      const { operations } = await api('GET', `${base}/audit${qs({ origin: form.get('origin'), kind: form.get('kind'), runId: form.get('runId') })}`);
      setRecords(operations);
    } catch (err) {
      setError(err.message);
    }
  }
  return html`
    <section>
      <h3>Audit</h3>
      <form class="inline" onSubmit=${search} data-testid="audit-filter">
        <${Select} name="origin" values=${ORIGINS} /> <${Select} name="kind" values=${KINDS} />
        <input name="runId" placeholder="run id" /> <button type="submit">Search</button>
      </form>
      <${ErrorLine} error=${error} />
      ${records && html`
        <table data-testid="audit">
          <thead><tr><th>seq</th><th>what</th><th>trigger</th><th>run / step</th><th>at</th></tr></thead>
          <tbody>${records.map((r) => html`<tr key=${r.id}><td>${r.seq ?? ''}</td><td>${describe(r)}</td><td>${r.trigger}</td><td>${r.runId ?? ''} ${r.stepId ?? ''}</td><td>${when(r.at)}</td></tr>`)}</tbody>
        </table>`}
    </section>`;
}

/** The thread's operations as they happen (`GET …/stream`); tells `onOperation` of each. */
export function LiveStream({ base, onOperation }) {
  const [records, setRecords] = useState([]);
  const [status, setStatus] = useState('connecting');
  useEffect(() => {
    const stop = new AbortController();
    setRecords([]);
    setStatus('live');
    streamEvents(`${base}/stream`, (event, record) => {
      if (event !== 'operation') return;
      setRecords((rs) => [record, ...rs].slice(0, 200));
      onOperation(record);
    }, stop.signal)
      .then(() => setStatus('ended'))
      .catch((err) => { if (!stop.signal.aborted) setStatus(`stopped: ${err.message}`); });
    return () => stop.abort();
  }, [base]);
  return html`
    <section>
      <h3>Live operations <span class="muted">(${status})</span></h3>
      <ul data-testid="live">${records.map((r) => html`<li key=${r.id}>#${r.seq} ${describe(r)} <span class="muted">${when(r.at)}</span></li>`)}</ul>
    </section>`;
}
