#!/usr/bin/env python3
"""The benchmark corpus of scripts/rest-bench.sh and scripts/cluster-bench.sh:
N long-term memories (JSON lines for `mnemo ingest`), the first OWN of them
for `bench-user` (the user the benchmarks search; all N when OWN is absent),
the rest 100 per other user. Seeded: the same arguments give the same file.

usage: scripts/bench-corpus.py N [OWN] > corpus.jsonl
"""
import json
import random
import sys

n = int(sys.argv[1])
own = int(sys.argv[2]) if len(sys.argv) > 2 else n
random.seed(7)
S = ["the user", "my sister", "the team", "our landlord", "the dentist", "my manager"]
V = ["prefers", "booked", "cancelled", "mentioned", "asked about", "bought", "forgot", "enjoys"]
O = ["green tea", "a flight to Lisbon", "the quarterly report", "oat milk", "a new laptop",
     "vegetarian food", "a dentist appointment", "the gym membership", "a trip to Kyoto",
     "running shoes", "the book club", "the summer holiday"]
W = ["on Monday", "last week", "every morning", "next month", "in the evening", "at the weekend"]
for i in range(n):
    user = "bench-user" if i < own else f"user-{i // 100}"
    t = f"{random.choice(S)} {random.choice(V)} {random.choice(O)} {random.choice(W)} (note {i})"
    print(json.dumps({"id": f"d{i}", "text": t, "user_id": user, "memory_type": "long_term"}))
