// A user's long-term memory: facts with their validity, episodes, search over all of it, and its audit (writes and reads).
import { useEffect, useState } from 'preact/hooks';
import { api, enc } from './api.js';
import { ErrorLine, html, when } from './html.js';

export function LongTermView({ userId }) {
  const base = `/v1/users/${enc(userId)}`;
  const [facts, setFacts] = useState([]);
  const [episodes, setEpisodes] = useState([]);
  const [audit, setAudit] = useState([]);
  const [results, setResults] = useState(null);
  const [error, setError] = useState('');
  const [version, setVersion] = useState(0);

  useEffect(() => {
    setError('');
    Promise.all([api('GET', `${base}/facts?includeInvalid=true`), api('GET', `${base}/episodes`), api('GET', `${base}/memory/audit?limit=50`)]).then(
      ([f, e, a]) => { setFacts(f.facts); setEpisodes(e.episodes); setAudit(a.entries); },
      (err) => setError(err.message),
    );
  }, [userId, version]);

  async function search(e) {
    e.preventDefault();
    try {
      setError('');
      setResults((await api('POST', `${base}/memory/search`, { query: String(new FormData(e.target).get('query')), k: 20 })).results);
    } catch (err) {
      setError(err.message);
    }
  }
  async function endFact(factId) {
    try {
      await api('DELETE', `${base}/facts/${enc(factId)}`);
      setVersion((v) => v + 1);
    } catch (err) {
      setError(err.message);
    }
  }

  return html`
    <section>
      <h2>Long-term memory of ${userId}</h2>
      <${ErrorLine} error=${error} />
      <form class="inline" onSubmit=${search}><input name="query" placeholder="search facts, episodes, summaries, messages" size="40" required /><button type="submit">Search</button></form>
      ${results && html`
        <table data-testid="search-results">
          <thead><tr><th>kind</th><th>text</th><th>score</th><th>at</th></tr></thead>
          <tbody>${results.map((r) => html`<tr key=${r.kind + r.id}><td>${r.kind}</td><td>${r.text}</td><td>${r.score.toFixed(3)}</td><td>${when(r.at)}</td></tr>`)}</tbody>
        </table>`}
      <h3>Facts (${facts.length})</h3>
      <table data-testid="facts">
        <thead><tr><th>fact</th><th>valid from</th><th>valid to</th><th>confidence</th><th>mentions</th><th></th></tr></thead>
        <tbody>${facts.map((f) => html`
          <tr key=${f.id} class=${f.validTo ? 'muted' : ''}><td>${f.text}<br /><span class="muted">${f.subject} · ${f.predicate} · ${f.object}</span></td>
            <td>${when(f.validFrom)}</td><td>${f.validTo ? when(f.validTo) : 'valid'}</td><td>${f.confidence.toFixed(2)}</td><td>${f.mentions}</td>
            <td>${!f.validTo && html`<button onClick=${() => endFact(f.id)}>End</button>`}</td></tr>`)}
        </tbody>
      </table>
      <h3>Episodes (${episodes.length})</h3>
      <ul data-testid="episodes">${episodes.map((ep) => html`
        <li key=${ep.id}><b>${ep.goal}</b> → ${ep.outcome} <span class="muted">${when(ep.at)}${ep.scheduled ? ` · scheduled by ${ep.scheduled.scheduleId}` : ''}</span>
          ${ep.lessons.length > 0 && html`<br />Lessons: ${ep.lessons.join('; ')}`}</li>`)}
      </ul>
      <h3>Audit (newest ${audit.length}: every write and read)</h3>
      <table data-testid="longterm-audit">
        <thead><tr><th>at</th><th>kind</th><th>action</th><th>by</th><th>why</th><th>run</th><th>records</th></tr></thead>
        <tbody>${audit.map((a) => html`
          <tr key=${a.id}><td>${when(a.at)}</td><td>${a.kind}</td><td>${a.action}</td><td>${a.origin}</td><td>${a.reason}</td><td>${a.runId ?? ''}</td>
            <td>${a.kind === 'read' ? `${a.details?.returned ?? a.targetIds.length} returned` : a.targetIds.join(', ')}</td></tr>`)}
        </tbody>
      </table>
    </section>`;
}
