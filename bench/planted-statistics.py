# claim_next's cost on a large file with planted planner statistics, through a leasefence CLI.
#
#   python3 bench/planted-statistics.py PATH/TO/leasefence [JOBS] [plant]
#
# Makes a file with the CLI (`init`), fills it with JOBS jobs through Python's sqlite3, optionally
# plants sqlite_stat1 rows that make the table look tiny and the claimable index useless (what any
# connection to the file can write), then times 200 claim_next calls through `leasefence batch`.
# Every call is a durable commit, so the floor is the disk's sync. Issue 27: 743 ms per call before
# claim_next was pinned to its index, 5 ms after (200,000 jobs, debug builds).
import json, os, sqlite3, subprocess, sys, time, tempfile
cli = sys.argv[1]; n = int(sys.argv[2]) if len(sys.argv) > 2 else 200_000
d = tempfile.mkdtemp(); db = os.path.join(d, 'q.db')
# Let the CLI create the schema, then fill it fast with Python.
subprocess.run([cli, 'batch', '--db', db], input='{"op":"init"}\n', text=True, capture_output=True, check=True)
con = sqlite3.connect(db)
con.executemany('INSERT INTO jobs(id) VALUES (?)', ((f'job-{i}',) for i in range(n)))
con.commit()
if len(sys.argv) > 3 and sys.argv[3] == 'plant':
    con.executescript("""ANALYZE; DELETE FROM sqlite_stat1 WHERE tbl = 'jobs';
      INSERT INTO sqlite_stat1 VALUES ('jobs', 'leasefence_claimable', '100000000 100000000');
      INSERT INTO sqlite_stat1 VALUES ('jobs', 'sqlite_autoindex_jobs_1', '1 1');
      INSERT INTO sqlite_stat1 VALUES ('jobs', NULL, '1');""")
con.close()
calls = 200
lines = ''.join(json.dumps({"op": "claim_next", "owner": "w", "now": 1, "ttl": 30}) + '\n' for _ in range(calls))
t = time.perf_counter()
out = subprocess.run([cli, 'batch', '--db', db], input=lines, text=True, capture_output=True, check=True)
el = time.perf_counter() - t
answers = [json.loads(l) for l in out.stdout.splitlines()]
assert all(a.get('value') for a in answers), answers[:3]
print(f"{cli}: {n} jobs, stats {'planted' if len(sys.argv) > 3 else 'none'}: {el / calls * 1e3:.2f} ms per claim_next ({calls} calls incl. one process start)")
