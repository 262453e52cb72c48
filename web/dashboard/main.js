// The dashboard's controller (`leasefence ui`): asks the JSON API under /api/ (the page's cookie
// carries the token), keeps the lanes model up to date, and has the views draw; picks the
// language (en, ja, zh) as the playground does. No state but what is drawn and the lanes.
import { LANGUAGES, languageTag, pickLanguage, t as text } from '../common/i18n.js';
import { byId, h, replace, translatePage } from '../common/dom.js';
import { followLeases } from './model/lanes.js';
import { renderChart, renderCounts } from './view/counts-view.js';
import { duration } from './model/shown.js';
import { renderJob, renderJobs } from './view/jobs-view.js';
import { renderLanes } from './view/lanes-view.js';
import { renderSchedules, renderWorkers } from './view/registry-view.js';

const READ_ONLY = document.querySelector('meta[name="leasefence-read-only"]')?.content !== 'false';
const SAVED_LANGUAGE = 'leasefence.dashboard.lang';
/** How often the leases and the workers are asked for, the counts and chart, the lanes redrawn. */
const LEASES_EVERY_MS = 1000;
const COUNTS_EVERY_MS = 2000;
const LANES_EVERY_MS = 250;

let lang = 'en';
const t = (key, ...args) => text(lang, key, ...args);
const time = (seconds) => new Date(seconds * 1000).toLocaleTimeString(languageTag(lang));
// A moment that may be days old (a failure, a slot): with its date.
const date = (seconds) => new Date(seconds * 1000).toLocaleString(languageTag(lang));
// A span of time in words (`19 min 52 s`), in the page's language.
const span = (seconds) => duration(seconds, (unit, n) => t(`dash.unit.${unit}`, n));
/** The leases asked for at once: the lanes say so when there are more. */
const LEASES_SHOWN = 500;
let lanes = [];
// The server's clock, as last read, and when: the lanes count down between polls from it.
let clock = { now: 0, at: performance.now() };
const serverNow = () => clock.now + (performance.now() - clock.at) / 1000;
let next = null;
let pages = 0; // pages of jobs drawn: the first page alone follows the queue live
let shownJob = null;
const last = { stats: null, history: [], workers: null, schedules: null };

const show = (message) => {
  byId('error').textContent = message;
};

async function api(path, init) {
  const response = await fetch(path, init);
  const body = await response.json();
  if (!response.ok) throw new Error(body.error ? body.error.message : response.statusText);
  return body;
}

async function counts() {
  last.stats = await api('/api/stats');
  last.history = (await api('/api/history')).samples;
  drawCounts();
  last.schedules = await api('/api/schedules');
  renderSchedules(byId('schedules').querySelector('tbody'), last.schedules, { t, time: date });
  if (shownJob) await report(shownJob, false);
}

function drawCounts() {
  if (last.stats) byId('asof').textContent = renderCounts(byId('stats'), last.stats, { t, time, span });
  renderChart(byId('chart'), byId('legend'), last.history, { t });
}

async function leasesAndWorkers() {
  const page = await api(`/api/jobs?state=leased&limit=${LEASES_SHOWN}`);
  clock = { now: page.now, at: performance.now() };
  // More leases than one page: say how many are not drawn, rather than drop them silently.
  const cut = byId('lanes-cut');
  cut.hidden = page.next === null;
  if (page.next !== null) cut.textContent = t('dash.lanes.cut', page.jobs.length, last.stats?.all.leased ?? `${LEASES_SHOWN}+`);
  lanes = followLeases(lanes, page.jobs.map(({ id, owner, fence, until }) => ({ id, owner, fence, until })), page.now);
  drawLanes();
  last.workers = await api('/api/workers');
  renderWorkers(byId('workers').querySelector('tbody'), last.workers, { t, span });
}

function drawLanes() {
  renderLanes(byId('lanes'), lanes, serverNow(), { t, span });
}

async function jobs(more) {
  const params = new URLSearchParams({ limit: '50' });
  const state = byId('state').value;
  if (state) params.set('state', state);
  if (more && next) params.set('after', next);
  const page = await api(`/api/jobs?${params}`);
  renderJobs(byId('jobs').querySelector('tbody'), page, !more, {
    t,
    span,
    date,
    readOnly: READ_ONLY,
    onRevive: (id) =>
      api('/api/revive', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ job: id }) })
        .then(refresh, (e) => show(e.message)),
  });
  next = page.next;
  pages = more ? pages + 1 : 1;
  byId('more').hidden = !next;
  // Which filter the rows drawn belong to (a reader, or a test, can tell a stale table apart).
  byId('jobs').dataset.shown = state || 'any';
}

/** Draws job `id`'s page, and brings it into view when it was just opened. */
async function report(id, bringIntoView) {
  const answer = await api(`/api/job/${encodeURIComponent(id)}`);
  if (shownJob !== id && !bringIntoView) return; // another job was opened meanwhile
  shownJob = id;
  renderJob(byId('job'), answer, { t, span, date });
  if (bringIntoView) byId('job').scrollIntoView({ block: 'start' });
}

/** The job the address names (`#job=ID`), or null. */
function jobInAddress() {
  const match = /^#job=(.*)$/.exec(location.hash);
  if (!match) return null;
  try {
    return decodeURIComponent(match[1]);
  } catch {
    return null;
  }
}

/** Opens the job the address names, or closes the job's page when it names none. */
function followAddress() {
  const id = jobInAddress();
  if (id === null) {
    shownJob = null;
    byId('job').hidden = true;
    return;
  }
  shownJob = id;
  report(id, true).catch((e) => show(e.message));
}

function refresh() {
  show('');
  return Promise.all([counts(), jobs(false), leasesAndWorkers()]).catch((e) => show(e.message));
}

function setLanguage(code) {
  lang = code;
  document.documentElement.lang = languageTag(lang);
  translatePage(document, lang, text);
  byId('lang').value = lang;
  drawCounts();
  drawLanes();
  if (last.workers) renderWorkers(byId('workers').querySelector('tbody'), last.workers, { t, span });
  if (last.schedules) renderSchedules(byId('schedules').querySelector('tbody'), last.schedules, { t, time: date });
  jobs(false).catch((e) => show(e.message));
  if (shownJob) report(shownJob, false).catch((e) => show(e.message));
}

function start() {
  const select = byId('lang');
  replace(select, LANGUAGES.map((l) => h('option', { text: l.name, attrs: { value: l.code, lang: languageTag(l.code) } })));
  let saved = null;
  try {
    saved = localStorage.getItem(SAVED_LANGUAGE);
  } catch {
    // Storage may be off: the language then comes from the address or the browser.
  }
  const query = new URLSearchParams(location.search).get('lang');
  select.addEventListener('change', () => {
    try {
      localStorage.setItem(SAVED_LANGUAGE, select.value);
    } catch {
      // Not remembered; the page still switches.
    }
    setLanguage(select.value);
  });
  setLanguage(pickLanguage({ query, saved, browser: navigator.languages ?? [navigator.language] }));
  byId('state').addEventListener('change', () => jobs(false).catch((e) => show(e.message)));
  byId('more').addEventListener('click', () => jobs(true).catch((e) => show(e.message)));
  window.addEventListener('hashchange', followAddress);
  followAddress();
  refresh();
  setInterval(() => leasesAndWorkers().catch((e) => show(e.message)), LEASES_EVERY_MS);
  // The counts and the chart, and the jobs unless more pages were asked for (the list then stays
  // where it was paged to).
  setInterval(() => counts().then(() => (pages <= 1 ? jobs(false) : null)).catch((e) => show(e.message)), COUNTS_EVERY_MS);
  setInterval(drawLanes, LANES_EVERY_MS);
}

start();
