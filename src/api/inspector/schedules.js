// A user's schedules (issue 33): timing, next runs and latest runs of each, with pause / unpause / run now / cancel.
import { useEffect, useState } from 'preact/hooks';
import { api, enc, qs } from './api.js';
import { ErrorLine, html, when } from './html.js';

/** When it runs, as it was asked for. */
function timing(s) {
  const zone = s.timeZone && s.timeZone !== 'UTC' ? ` (${s.timeZone})` : '';
  if (s.spec.at !== undefined) return `once at ${s.spec.at}${zone}`;
  if (s.spec.cron !== undefined) return `cron "${s.spec.cron}"${zone}`;
  return `every ${s.spec.every}`;
}

export function SchedulesView({ userId, openRun }) {
  const [schedules, setSchedules] = useState(null);
  const [error, setError] = useState('');
  const [version, setVersion] = useState(0);

  useEffect(() => {
    setError('');
    api('GET', `/v1/schedules${qs({ userId })}`).then(
      (body) => setSchedules(body.schedules),
      (err) => setError(err.message),
    );
  }, [userId, version]);

  async function act(scheduleId, action) {
    try {
      setError('');
      if (action === 'cancel') await api('DELETE', `/v1/schedules/${enc(scheduleId)}`);
      else await api('POST', `/v1/schedules/${enc(scheduleId)}/${action}`);
      // A deleted schedule may stay in the (eventually consistent) listing a moment: leave it out here.
      if (action === 'cancel') setSchedules((list) => list.filter((s) => s.scheduleId !== scheduleId));
      setVersion((v) => v + 1);
    } catch (err) {
      setError(err.message);
    }
  }

  return html`
    <section>
      <h2>Schedules of ${userId} ${schedules && html`(${schedules.length})`}</h2>
      <${ErrorLine} error=${error} />
      <button onClick=${() => setVersion((v) => v + 1)}>Refresh</button>
      ${schedules && schedules.length === 0 && html`<p class="muted">No schedules.</p>`}
      ${schedules && schedules.length > 0 && html`
        <table data-testid="schedules">
          <thead><tr><th>schedule</th><th>when</th><th>next runs</th><th>latest runs</th><th></th></tr></thead>
          <tbody>${schedules.map((s) => html`
            <tr key=${s.scheduleId} data-schedule=${s.scheduleId} class=${s.paused ? 'muted' : ''}>
              <td><b>${s.goal}</b><br /><span class="mono">${s.scheduleId}</span>${s.sessionId ? html`<br /><span class="muted">session ${s.sessionId}</span>` : ''}</td>
              <td>${timing(s)}${s.paused ? html`<br /><b>paused</b>` : ''}</td>
              <td>${s.nextRuns.length ? s.nextRuns.slice(0, 3).map((t) => html`<div>${when(t)}</div>`) : html`<span class="muted">none</span>`}</td>
              <td>${s.recentRuns.slice(0, 5).map((r) => html`<div><button class="link" onClick=${() => openRun(r.runId)}>${r.status}</button> <span class="muted">${when(r.at)}</span></div>`)}</td>
              <td>
                ${s.paused ? html`<button onClick=${() => act(s.scheduleId, 'unpause')}>Unpause</button>` : html`<button onClick=${() => act(s.scheduleId, 'pause')}>Pause</button>`}
                <button onClick=${() => act(s.scheduleId, 'trigger')}>Run now</button>
                <button onClick=${() => act(s.scheduleId, 'cancel')}>Cancel</button>
              </td>
            </tr>`)}
          </tbody>
        </table>`}
    </section>`;
}
