// The inspector's shell: the API key and user id, the user's threads and runs, and the view opened.
import { render } from 'preact';
import { useState } from 'preact/hooks';
import { api, getKey, qs, setKey } from './api.js';
import { ErrorLine, html, when } from './html.js';
import { LongTermView } from './longterm.js';
import { RunView } from './run.js';
import { SchedulesView } from './schedules.js';
import { ThreadView } from './thread.js';

const USER = 'threadline.inspector.userId';
const runUiPrefix = document.querySelector('meta[name="threadline-run-ui-prefix"]')?.content ?? '';

function App() {
  const [key, setKeyText] = useState(getKey());
  const [userId, setUserId] = useState(localStorage.getItem(USER) ?? '');
  const [lists, setLists] = useState(null);
  const [view, setView] = useState(null); // {kind: 'thread' | 'run', id} | {kind: 'longterm' | 'schedules'}
  const [error, setError] = useState('');

  async function load(e) {
    e?.preventDefault();
    setError('');
    localStorage.setItem(USER, userId);
    try {
      const [threads, runs] = await Promise.all([api('GET', `/v1/threads${qs({ userId })}`), api('GET', `/v1/runs${qs({ userId })}`)]);
      setLists({ threads: threads.threads, runs: runs.runs });
    } catch (err) {
      setError(err.message);
    }
  }

  const openThread = (id) => setView({ kind: 'thread', id });
  const openRun = (id) => setView({ kind: 'run', id });

  return html`
    <header>
      <h1>Threadline memory inspector</h1>
      <label>API key <input type="password" name="apiKey" value=${key} placeholder="none" onInput=${(e) => { setKeyText(e.target.value); setKey(e.target.value.trim()); }} /></label>
      <form class="inline" onSubmit=${load}>
        <label>User id <input name="userId" value=${userId} onInput=${(e) => setUserId(e.target.value.trim())} /></label>
        <button type="submit">Load</button>
      </form>
    </header>
    <${ErrorLine} error=${error} />
    <main>
      <nav>
        ${lists && html`
          <h3>Threads (${lists.threads.length})</h3>
          <ul data-testid="threads">
            ${lists.threads.map((t) => html`<li key=${t.threadId}><button onClick=${() => openThread(t.threadId)}>${t.threadId}<br /><span class="muted">${when(t.createdAt)}</span></button></li>`)}
          </ul>
          <h3>Runs (${lists.runs.length})</h3>
          <ul data-testid="runs">
            ${lists.runs.map((r) => html`<li key=${r.runId}><button onClick=${() => openRun(r.runId)}>${r.goal}<br /><span class="muted">${r.status} · ${r.runId}</span></button></li>`)}
          </ul>
          <button onClick=${() => setView({ kind: 'longterm' })}>Long-term memory</button>
          <button onClick=${() => setView({ kind: 'schedules' })}>Schedules</button>`}
      </nav>
      <div>
        ${view?.kind === 'thread' && html`<${ThreadView} key=${view.id} threadId=${view.id} openThread=${openThread} />`}
        ${view?.kind === 'run' && html`<${RunView} key=${view.id} runId=${view.id} runUiPrefix=${runUiPrefix} openThread=${openThread} openRun=${openRun} />`}
        ${view?.kind === 'longterm' && html`<${LongTermView} key=${userId} userId=${userId} />`}
        ${view?.kind === 'schedules' && html`<${SchedulesView} key=${userId} userId=${userId} openRun=${openRun} />`}
        ${!view && html`<p class="muted">Enter a user id and load, then open a thread, a run, the long-term memory or the schedules.</p>`}
      </div>
    </main>`;
}

const root = document.getElementById('root');
root.textContent = '';
render(html`<${App} />`, root);
