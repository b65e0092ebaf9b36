// One run: its status, steps or task tree and progress, live from its event stream, with a link to the Temporal Web UI;
// a tool call it holds for approval, with buttons to approve, reject or edit it (POST /v1/runs/:runId/approval);
// the model call in progress, its reply's fields as they stream (`token` / `token_reset` events, issue 29).
import { useEffect, useState } from 'preact/hooks';
import { api, enc, streamEvents } from './api.js';
import { ErrorLine, html, when } from './html.js';

function Steps({ steps, openRun }) {
  return html`
    <table data-testid="steps">
      <thead><tr><th>#</th><th>type</th><th>description</th><th>status</th><th>tool</th></tr></thead>
      <tbody>${steps.map((s) => html`
        <tr key=${s.id}><td>${s.index}</td><td>${s.type}</td><td>${s.description}${s.question ? html`<br /><i>${s.question}</i>` : ''}</td><td>${s.status}</td>
          <td>${s.tool ?? ''}${s.childRunId && html` <a href="#" onClick=${(e) => { e.preventDefault(); openRun(s.childRunId); }}>sub-run</a>`}</td></tr>`)}
      </tbody>
    </table>`;
}

function TaskTree({ node, openRun }) {
  return html`
    <li><code>${node.index}</code> ${node.name} — <b>${node.status}</b>${node.summary ? `: ${node.summary}` : ''}
      ${node.childRunId && html` <a href="#" onClick=${(e) => { e.preventDefault(); openRun(node.childRunId); }}>child run</a>`}
      ${node.subtasks.length > 0 && html`<ul>${node.subtasks.map((n) => html`<${TaskTree} key=${n.index} node=${n} openRun=${openRun} />`)}</ul>`}
    </li>`;
}

/** The tool call the run waits to have approved: what, with which args and why, and the person's decision. */
function PendingApproval({ runId, held }) {
  const [feedback, setFeedback] = useState('');
  const [args, setArgs] = useState(() => JSON.stringify(held.args, null, 2));
  const [error, setError] = useState('');
  const [sent, setSent] = useState('');
  const decide = async (decision) => {
    setError('');
    let body = { stepId: held.stepId, decision, ...(feedback.trim() ? { feedback: feedback.trim() } : {}) };
    if (decision === 'edit') {
      try {
        body = { ...body, args: JSON.parse(args) };
      } catch (err) {
        setError(`the args are not JSON: ${err.message}`);
        return;
      }
    }
    try {
      await api('POST', `/v1/runs/${enc(runId)}/approval`, body);
      setSent(decision);
    } catch (err) {
      setError(err.message);
    }
  };
  return html`
    <div data-testid="pending-approval" class="approval">
      <h3>Waiting for your approval</h3>
      <p>Step <code>${held.stepId}</code>${held.taskIndex ? html` of task <code>${held.taskIndex}</code>` : ''} calls <b data-testid="approval-tool">${held.tool}</b>
        <span class="muted">(${held.reason})</span></p>
      <pre data-testid="approval-args">${JSON.stringify(held.args, null, 2)}</pre>
      <${ErrorLine} error=${error} />
      ${sent
        ? html`<p data-testid="approval-sent">Sent: ${sent}.</p>`
        : html`
          <p><input name="feedback" placeholder="feedback (why; the model sees it)" value=${feedback} onInput=${(e) => setFeedback(e.currentTarget.value)} size="50" /></p>
          <p><button onClick=${() => decide('approve')}>Approve</button> <button onClick=${() => decide('reject')}>Reject</button></p>
          <details><summary>Edit the args</summary>
            <textarea name="args" rows="5" cols="60" value=${args} onInput=${(e) => setArgs(e.currentTarget.value)}></textarea>
            <p><button onClick=${() => decide('edit')}>Run with these args</button></p>
          </details>`}
    </div>`;
}

/** The model call streaming now: each human-readable field of its reply as it grows. */
function LiveCall({ call }) {
  return html`
    <div data-testid="live-call" class="live">
      <h3>Live call <span class="muted">${call.taskIndex ? `task ${call.taskIndex}` : call.stepId ? `step ${call.stepId}` : ''}${call.resets ? ` · asked again ${call.resets}×` : ''}</span></h3>
      ${Object.entries(call.fields).map(([field, text]) => html`<p key=${field}><code>${field}</code> <span data-testid="live-text">${text}</span></p>`)}
    </div>`;
}

/** A call's state after a `token` or `token_reset` event (the newest call replaces the one shown). */
function nextCall(call, event, data) {
  if (event === 'token_reset') return call && call.callId === data.callId ? { ...call, fields: {}, resets: call.resets + 1 } : call;
  const base = call && call.callId === data.callId ? call : { callId: data.callId, stepId: data.stepId, taskIndex: data.taskIndex, fields: {}, resets: 0 };
  return { ...base, fields: { ...base.fields, [data.field]: (base.fields[data.field] ?? '') + data.delta } };
}

export function RunView({ runId, runUiPrefix, openThread, openRun }) {
  const path = `/v1/runs/${enc(runId)}`;
  const [run, setRun] = useState(null);
  const [error, setError] = useState('');
  const [live, setLive] = useState('');
  const [call, setCall] = useState(null);
  useEffect(() => {
    const stop = new AbortController();
    api('GET', path).then(setRun, (err) => setError(err.message));
    setLive('live');
    setCall(null);
    streamEvents(`${path}/events`, (event, data) => {
      if (event === 'state') setRun(data);
      if (event === 'token' || event === 'token_reset') setCall((c) => nextCall(c, event, data));
      if (event === 'done') {
        setLive('ended');
        setCall(null);
      }
    }, stop.signal)
      .then(() => setLive((s) => (s === 'live' ? 'ended' : s)))
      .catch((err) => { if (!stop.signal.aborted) setLive(`stopped: ${err.message}`); });
    return () => stop.abort();
  }, [runId]);

  if (!run) return html`<${ErrorLine} error=${error} /><p>Loading ${runId}…</p>`;
  return html`
    <section>
      <h2>Run <code>${run.runId}</code></h2>
      <p><b>${run.goal}</b></p>
      <p>Status <b data-testid="run-status">${run.status}</b> <span class="muted">(${live})</span> · user ${run.userId} · updated ${when(run.updatedAt)}
        · <a href=${runUiPrefix + enc(run.runId)} target="_blank" rel="noopener" data-testid="web-ui">open in the Temporal Web UI</a>
        ${run.threadId && html` · <a href="#" onClick=${(e) => { e.preventDefault(); openThread(run.threadId); }}>its memory thread</a>`}
        ${run.parentRunId && html` · <a href="#" onClick=${(e) => { e.preventDefault(); openRun(run.parentRunId); }}>parent run</a>`}</p>
      ${run.status === 'waiting_approval' && run.pendingApproval && html`<${PendingApproval} key=${run.pendingApproval.stepId} runId=${run.runId} held=${run.pendingApproval} />`}
      ${call && !run.finalAnswer && html`<${LiveCall} call=${call} />`}
      ${run.finalAnswer && html`<p>Answer: ${run.finalAnswer}</p>`}
      ${run.lastError && html`<p class="error">${run.lastError}</p>`}
      ${run.tree
        ? html`<h3>Task tree</h3><ul><${TaskTree} node=${run.tree} openRun=${openRun} /></ul>${run.progress && html`<pre>${run.progress}</pre>`}`
        : html`<h3>Steps</h3><${Steps} steps=${run.steps} openRun=${openRun} />`}
    </section>`;
}
