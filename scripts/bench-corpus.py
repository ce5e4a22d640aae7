#!/usr/bin/env python3
"""Benchmark corpora, as JSON lines for `mnemo ingest`. Seeded: the same
arguments give the same file.

    scripts/bench-corpus.py N [OWN] > corpus.jsonl
        N long-term memories, the first OWN of them for `bench-user` (the
        user scripts/rest-bench.sh and scripts/cluster-bench.sh search; all
        N when OWN is absent), the rest 100 per other user.

    scripts/bench-corpus.py scale USERS PER_USER REFERENCE > corpus.jsonl
        The deployment of scripts/scale-bench.sh: USERS users (`u0`, `u1`, …)
        with PER_USER long-term memories each (6–24 words, as extracted
        facts are), and REFERENCE reference chunks shared by the tenant
        (30–80 words, short chunks of business documents).
"""
import json
import random
import sys

random.seed(7)
S = ["the user", "my sister", "the team", "our landlord", "the dentist", "my manager"]
V = ["prefers", "booked", "cancelled", "mentioned", "asked about", "bought", "forgot", "enjoys"]
O = ["green tea", "a flight to Lisbon", "the quarterly report", "oat milk", "a new laptop",
     "vegetarian food", "a dentist appointment", "the gym membership", "a trip to Kyoto",
     "running shoes", "the book club", "the summer holiday"]
W = ["on Monday", "last week", "every morning", "next month", "in the evening", "at the weekend"]
# Words for longer texts: everyday nouns, verbs and qualifiers, so that
# queries built from them (scripts/search.lua) share words with the corpus.
NOUNS = ["account", "invoice", "order", "delivery", "refund", "password", "subscription", "plan",
         "warranty", "contract", "appointment", "ticket", "flight", "hotel", "booking", "payment",
         "card", "address", "schedule", "meeting", "report", "budget", "project", "deadline",
         "laptop", "phone", "printer", "router", "license", "backup", "policy", "holiday",
         "doctor", "prescription", "insurance", "claim", "garden", "kitchen", "recipe", "coffee",
         "tea", "bicycle", "train", "concert", "museum", "library", "course", "exam", "language"]
VERBS = ["changed", "renewed", "cancelled", "requested", "confirmed", "moved", "shared", "lost",
         "updated", "reviewed", "approved", "rejected", "scheduled", "paid", "returned", "ordered"]
QUAL = ["monthly", "annual", "urgent", "late", "new", "old", "premium", "basic", "shared",
        "personal", "weekly", "remote", "local", "international", "quiet", "early"]


def sentence():
    return (f"{random.choice(S)} {random.choice(VERBS)} the {random.choice(QUAL)} "
            f"{random.choice(NOUNS)} {random.choice(W)}")


def text(lo, hi):
    words = []
    target = random.randint(lo, hi)
    while len(words) < target:
        words.extend(sentence().split())
        if random.random() < 0.5:
            words.extend(["and", "the", random.choice(NOUNS), "was", random.choice(QUAL)])
    return " ".join(words[:target]) + "."


if len(sys.argv) > 1 and sys.argv[1] == "scale":
    users, per_user, reference = (int(a) for a in sys.argv[2:5])
    out = sys.stdout
    for u in range(users):
        for k in range(per_user):
            out.write(json.dumps({"id": f"m{u}-{k}", "text": text(6, 24), "user_id": f"u{u}",
                                  "memory_type": "long_term"}) + "\n")
    for r in range(reference):
        out.write(json.dumps({"id": f"r{r}", "text": text(30, 80), "memory_type": "reference"}) + "\n")
    sys.exit(0)

n = int(sys.argv[1])
own = int(sys.argv[2]) if len(sys.argv) > 2 else n
for i in range(n):
    user = "bench-user" if i < own else f"user-{i // 100}"
    t = f"{random.choice(S)} {random.choice(V)} {random.choice(O)} {random.choice(W)} (note {i})"
    print(json.dumps({"id": f"d{i}", "text": t, "user_id": user, "memory_type": "long_term"}))
