// The dashboard over a PostgreSQL server (`leasefence ui --db postgres://...`) in Chromium: the
// stalled-worker story (dashboard-story.mjs) with `leasefence work` processes on the server, its
// ids and owners this run's own. Needs the server scripts/postgres.sh starts (LEASEFENCE_PG_URL);
// skipped without it. The skewed Node worker stays on the SQLite variant: the npm package has no
// PostgreSQL store yet.
import { test } from 'node:test';
import { stalledStory } from './dashboard-story.mjs';

const url = process.env.LEASEFENCE_PG_URL;

test('a stalled worker on PostgreSQL in Chromium: its lease turns expired and is taken over, the lost lease counted', { skip: !url && 'needs LEASEFENCE_PG_URL (bash scripts/postgres.sh node --test tests/browser/dashboard-postgres.test.mjs)' }, async () => {
  await stalledStory({ db: url, tag: `-${process.pid}-${Date.now().toString(36)}` });
});
