/**
 * Submit a job, or a job array, to the current project. On success the job's page opens (an
 * array's page for an array).
 */
import { useEffect, useId, useState, type FormEvent } from 'react';
import { api, ApiError } from '../api.js';
import { ErrorAlert, Loading, Notice } from '../components/Status.js';
import { TextField } from '../components/TextField.js';
import { useApp } from '../context.js';
import { parseRequests } from '../format.js';
import { useTitle } from '../hooks.js';
import { Link, navigate, paths } from '../router.js';
import type { PriorityClass, ResourceTypeView, SubmitRequest, TargetView } from '../types.js';

interface Choices {
  targets: TargetView[];
  resourceTypes: ResourceTypeView[];
  priorityClasses: PriorityClass[];
}

export function Submit() {
  useTitle('Submit a job');
  const { project, projects } = useApp();
  const [choices, setChoices] = useState<Choices | null>(null);
  const [loadError, setLoadError] = useState<string | null>(null);
  const [command, setCommand] = useState('');
  const [name, setName] = useState('');
  const [target, setTarget] = useState('');
  const [requests, setRequests] = useState('');
  const [resources, setResources] = useState<string[]>([]);
  const [priority, setPriority] = useState('');
  const [workers, setWorkers] = useState('');
  const [array, setArray] = useState('');
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const ids = { target: useId(), classes: useId() };

  useEffect(() => {
    const abort = new AbortController();
    Promise.all([
      api.targets(abort.signal),
      api.resourceTypes(abort.signal),
      api.priorityClasses(abort.signal),
    ]).then(
      ([targets, resourceTypes, priorityClasses]) => setChoices({ targets, resourceTypes, priorityClasses }),
      (e: unknown) => {
        if (!abort.signal.aborted) setLoadError(e instanceof ApiError ? e.message : String(e));
      },
    );
    return () => abort.abort();
  }, []);

  const submit = async (e: FormEvent) => {
    e.preventDefault();
    if (!project) return;
    setError(null);
    let body: SubmitRequest;
    try {
      if (!command.trim()) throw new Error('Command: enter a command line, e.g. echo hello.');
      body = { command: ['sh', '-c', command] };
      if (name.trim()) body.name = name.trim();
      if (target) body.target = target;
      const req = parseRequests(requests);
      if (Object.keys(req).length > 0) body.requests = req;
      if (resources.length > 0) body.resources = resources;
      const p = priority.trim();
      if (p) body.priority = /^-?[0-9]+$/.test(p) ? Number(p) : p;
      const w = workers.trim();
      if (w) {
        if (!/^[0-9]+$/.test(w) || Number(w) < 1) throw new Error('Workers: a whole number of at least 1.');
        body.workers = Number(w);
      }
      // Checked by the server, whose message names the part that is wrong.
      if (array.trim()) body.array = array.trim();
    } catch (err) {
      setError(err instanceof Error ? err.message : String(err));
      return;
    }
    setBusy(true);
    try {
      const job = await api.submit(project, body);
      // An array's answer is its first task, whose id is the array's.
      navigate(job.arrayId !== null ? paths.array(job.arrayId) : paths.job(job.id));
    } catch (err) {
      setError(err instanceof ApiError ? err.message : String(err));
      setBusy(false);
    }
  };

  const classes = choices?.priorityClasses ?? [];

  if (projects !== null && !project) {
    return (
      <>
        <h1 tabIndex={-1}>Submit a job</h1>
        <Notice>You are not a member of any project yet, so there is nowhere to submit to.</Notice>
      </>
    );
  }

  return (
    <>
      <div className="page-head">
        <div>
          <h1 tabIndex={-1}>Submit a job</h1>
          <p className="page-sub">
            to project <strong>{project ?? '…'}</strong> (change it with the Project switcher)
          </p>
        </div>
      </div>
      {loadError && <ErrorAlert>{loadError}</ErrorAlert>}
      <form className="card form" onSubmit={(e) => void submit(e)} noValidate>
        <TextField
          label="Command"
          value={command}
          onChange={setCommand}
          placeholder="python train.py --epochs 10"
          code
          required
          hint={
            <>
              A shell command line, run with <code>sh -c</code>.
            </>
          }
        />
        <div className="field-row">
          <TextField label="Name" value={name} onChange={setName} placeholder="optional" />
          <div className="field">
            <label htmlFor={ids.target}>Target</label>
            <select id={ids.target} value={target} onChange={(e) => setTarget(e.target.value)}>
              <option value="">the server&apos;s default</option>
              {choices?.targets.map((t) => (
                <option key={t.name} value={t.name}>
                  {t.name}
                  {t.privilege ? ` (needs ${t.privilege})` : ''}
                </option>
              ))}
            </select>
          </div>
        </div>
        <div className="field-row">
          <TextField
            label="Requests"
            value={requests}
            onChange={setRequests}
            placeholder="cpu=1,memory=1Gi"
            code
            hint={
              <>
                Quota it takes from the queue: <code>resource=quantity</code>, comma-separated.
              </>
            }
          />
          <TextField
            label="Priority"
            value={priority}
            onChange={setPriority}
            placeholder="0"
            code
            list={classes.length > 0 ? ids.classes : undefined}
            hint={`A number (higher goes first) or a priority class${
              classes.length > 0 ? `: ${classes.map((c) => c.name).join(', ')}` : ''
            }.`}
          >
            {classes.length > 0 && (
              <datalist id={ids.classes}>
                {classes.map((c) => (
                  <option key={c.name} value={c.name}>
                    {c.value}
                  </option>
                ))}
              </datalist>
            )}
          </TextField>
          <TextField
            label="Workers"
            value={workers}
            onChange={setWorkers}
            placeholder="1"
            code
            hint="More than 1 makes a gang: that many workers at once, each with its rank; requests are per worker."
          />
        </div>
        <TextField
          label="Array"
          value={array}
          onChange={setArray}
          placeholder="0-99%10"
          code
          hint={
            <>
              Optional: one task per index, each a job with <code>BERTH_ARRAY_INDEX</code> set. Indices as{' '}
              <code>N</code>, <code>N-M</code> or <code>N-M:S</code>, comma-separated; <code>%K</code> runs at
              most K tasks at once.
            </>
          }
        />
        <fieldset className="field">
          <legend>Resources</legend>
          {!choices && !loadError && <Loading what="resource types" />}
          {choices?.resourceTypes.length === 0 && <p className="muted">No resource types are configured.</p>}
          <div className="checks">
            {choices?.resourceTypes.map((r) => (
              <ResourceCheck
                key={r.name}
                type={r}
                checked={resources.includes(r.name)}
                onChange={(on) =>
                  setResources((rs) => (on ? [...rs, r.name].sort() : rs.filter((x) => x !== r.name)))
                }
              />
            ))}
          </div>
        </fieldset>
        {error && <ErrorAlert>{error}</ErrorAlert>}
        <div className="form-actions">
          <button type="submit" className="button-primary" disabled={busy || !project}>
            Submit
          </button>
          {project && <Link to={paths.jobs(project)}>Back to the list</Link>}
        </div>
      </form>
    </>
  );
}

/** A resource type's checkbox, labelled by its name; how busy it is comes as its description. */
function ResourceCheck({
  type,
  checked,
  onChange,
}: {
  type: ResourceTypeView;
  checked: boolean;
  onChange: (on: boolean) => void;
}) {
  const id = useId();
  const hint = useId();
  return (
    <div className="check">
      <input
        id={id}
        type="checkbox"
        checked={checked}
        onChange={(e) => onChange(e.target.checked)}
        aria-describedby={hint}
      />
      <label htmlFor={id}>{type.name}</label>
      <span className="muted" id={hint}>
        {type.inUse}/{type.capacity} in use{type.waiting > 0 ? `, ${type.waiting} waiting` : ''}
        {type.privilege ? `; needs ${type.privilege}` : ''}
      </span>
    </div>
  );
}
