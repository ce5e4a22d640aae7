#!/usr/bin/env python3
"""Per-commit cost of SQLite synchronous=NORMAL vs FULL in WAL mode (docs/guide/deployment.md, "Durability").

Usage: python3 scripts/sqlite_sync_bench.py DIR   (DIR on the disk the data directory lives on)
"""
import sqlite3, time, os, sys, tempfile, uuid
def run(mode, n=2000, d=None):
    path = os.path.join(d, f"b_{mode}.db")
    for suf in ("", "-wal", "-shm"):
        try: os.remove(path+suf)
        except FileNotFoundError: pass
    c = sqlite3.connect(path, isolation_level=None)
    c.execute("PRAGMA journal_mode=WAL"); c.execute(f"PRAGMA synchronous={mode}"); c.execute("PRAGMA secure_delete=ON")
    c.execute("CREATE TABLE m (id TEXT PRIMARY KEY, t TEXT, md TEXT)")
    c.execute("CREATE TABLE a (seq INTEGER PRIMARY KEY, id TEXT, t TEXT)")
    text = "x" * 1000
    t0 = time.perf_counter()
    for i in range(n):
        c.execute("BEGIN")
        mid = str(uuid.uuid4())
        c.execute("INSERT INTO m VALUES (?,?,?)", (mid, text, "{}"))
        c.execute("INSERT INTO a (id,t) VALUES (?,?)", (mid, text))
        c.execute("COMMIT")
    el = time.perf_counter() - t0
    c.close()
    return n/el, el/n*1000
d = sys.argv[1]
os.makedirs(d, exist_ok=True)
for rep in range(3):
    for mode in ("NORMAL", "FULL"):
        tps, ms = run(mode, d=d)
        print(f"rep {rep} {mode}: {tps:.0f} commits/s ({ms:.2f} ms/commit)")
