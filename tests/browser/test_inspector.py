"""The memory inspector (/ui) in a real browser: headless Chromium driven by
Selenium WebDriver against the real `mnemo serve` (real store, indexes and
embedding model) on a fresh data directory.

Run by scripts/test-browser.sh (which installs Chromium, chromium-driver and
Selenium). Each scenario asserts what the page shows; the first failure stops
the run with a non-zero exit. Screenshots of the main views go to --shots
(docs/ by default); --perf N also seeds N memories for one user and
measures the first load (bytes transferred, time to first render).
"""

import argparse
import hashlib
import json
import os
import shutil
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
import uuid

from selenium import webdriver
from selenium.common.exceptions import NoAlertPresentException, TimeoutException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as EC
from selenium.webdriver.support.ui import WebDriverWait

XSS_SCRIPT = '<script>window.__xss = "script"; alert("xss")</script>'
XSS_IMG = '<img src=x onerror="window.__xss = \'img\'; alert(1)">'


def log(msg):
    print("browser test: " + msg, flush=True)


class Server:
    def __init__(self, mnemo, data_dir, port):
        self.mnemo, self.data_dir, self.port = mnemo, data_dir, port
        self.base = "http://127.0.0.1:%d" % port
        self.proc = None
        self.env = dict(os.environ, MNEMO_DATA_DIR=data_dir, MNEMO_LOG="warn")

    def cli(self, *args):
        return subprocess.run([self.mnemo, *args], env=self.env, check=True,
                              capture_output=True, text=True).stdout.strip()

    def key(self, tenant, role, user=None):
        args = ["keys", "create", "--tenant", tenant, "--role", role]
        if user:
            args += ["--user", user]
        return self.cli(*args)

    def start(self, timeout=600):
        self.log = open(os.path.join(self.data_dir, "serve.log"), "w")
        self.proc = subprocess.Popen([self.mnemo, "serve", "--listen", "127.0.0.1:%d" % self.port],
                                     env=self.env, stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.time() + timeout
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise SystemExit("mnemo serve exited: see " + self.log.name)
            try:
                with urllib.request.urlopen(self.base + "/readyz", timeout=5) as r:
                    if r.status == 200:
                        return
            except (urllib.error.URLError, ConnectionError, OSError):
                pass
            time.sleep(0.5)
        raise SystemExit("mnemo serve did not become ready")

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
        self.proc = None

    def api(self, method, path, key, body=None, ok=True):
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.base + path, data=data, method=method)
        req.add_header("Authorization", "Bearer " + key)
        if data is not None:
            req.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(req, timeout=120) as r:
                return json.loads(r.read() or b"null")
        except urllib.error.HTTPError as e:
            if ok:
                raise SystemExit("%s %s: %s %s" % (method, path, e.code, e.read()[:300]))
            return {"status": e.code}


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def browser(profile, width=1280, height=900):
    opts = webdriver.ChromeOptions()
    opts.binary_location = shutil.which("chromium") or "/usr/bin/chromium"
    for flag in ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--disable-dev-shm-usage", "--user-data-dir=" + profile, "--window-size=%d,%d" % (width, height),
                 "--lang=en-US"]:
        opts.add_argument(flag)
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver_path = shutil.which("chromedriver") or "/usr/bin/chromedriver"
    d = webdriver.Chrome(service=Service(executable_path=driver_path), options=opts)
    d.set_page_load_timeout(60)
    return d


class Page:
    def __init__(self, driver, base, shots):
        self.d, self.base, self.shots = driver, base, shots

    def wait(self, cond, timeout=60, what="condition"):
        try:
            return WebDriverWait(self.d, timeout).until(cond)
        except TimeoutException:
            shown = self.d.find_element(By.ID, "view").text[:800]
            raise AssertionError("timed out waiting for %s at %s; the view shows:\n%s" % (what, self.d.current_url, shown))

    def css(self, sel, timeout=60):
        return self.wait(EC.visibility_of_element_located((By.CSS_SELECTOR, sel)), timeout, sel)

    def all(self, sel):
        return self.d.find_elements(By.CSS_SELECTOR, sel)

    def text(self, sel, contains, timeout=60):
        self.wait(EC.text_to_be_present_in_element((By.CSS_SELECTOR, sel), contains), timeout,
                  "%r in %s" % (contains, sel))

    def open(self, hash_):
        self.d.get(self.base + "/ui#/" + hash_)

    def go(self, hash_):
        self.d.execute_script("location.hash = arguments[0]", "#/" + hash_)

    def sign_in(self, key):
        self.d.get(self.base + "/ui")
        field = self.css("#key")
        field.clear()
        field.send_keys(key)
        self.d.find_element(By.CSS_SELECTOR, "#signin-form button").click()
        self.css("#who")

    def sign_out(self):
        self.d.find_element(By.ID, "sign-out").click()
        self.css("#signin")
        assert self.d.execute_script("return sessionStorage.length") == 0

    def nav(self):
        return [a.get_attribute("data-view") for a in self.all("#nav a")]

    def shot(self, name):
        if self.shots:
            self.d.execute_script("window.scrollTo(0, 0)")
            time.sleep(0.3)
            self.d.save_screenshot(os.path.join(self.shots, name + ".png"))

    def no_xss(self):
        assert self.d.execute_script("return window.__xss === undefined"), "an XSS payload ran"
        try:
            alert = self.d.switch_to.alert
            raise AssertionError("an alert opened: " + alert.text)
        except NoAlertPresentException:
            pass
        assert not self.all('img[src="x"]'), "an injected <img> reached the DOM"
        scripts = [s.get_attribute("src") for s in self.all("script")]
        assert scripts == [self.base + "/ui/app.js"], "unexpected script elements: %r" % scripts


def seed(srv, keys):
    agent = keys["agent"]
    add = lambda user, text, **kw: srv.api("POST", "/v1/memories", agent,
                                          dict(user_id=user, text=text, refresh=True, **kw))["ids"][0]
    ids = {}
    ids["tea"] = add("ann", "Ann prefers green tea over coffee", kind="preference", importance=0.8)
    ids["zh"] = add("ann", "Ann 住在上海，最喜欢喝乌龙茶", kind="fact")
    ids["xss1"] = add("ann", XSS_SCRIPT, kind="fact")
    ids["xss2"] = add("ann", XSS_IMG, kind="fact")
    ids["peanuts"] = add("ann", "Ann may be allergic to peanuts", kind="fact", confidence=0.3)
    ids["paris"] = add("ann", "Ann lives in Paris", kind="fact")
    ids["lyon"] = srv.api("POST", "/v1/memories/%s/supersede" % ids["paris"], agent,
                          {"text": "Ann moved to Lyon in March"})["memory"]["id"]
    add("bob", "Bob drinks espresso every morning", kind="preference")
    add("bob", "Bob's flight to Berlin is on Friday", kind="event")
    srv.api("POST", "/v1/memories", keys["globex"], dict(user_id="gus", text="Gus keeps a secret recipe", refresh=True))
    thread = srv.api("POST", "/v1/threads", agent, {"user_id": "ann", "goal": "Plan Ann's trip to Kyoto in April"})
    ids["thread"] = thread["id"]
    for content in ["Hello! We need to book a ryokan near Gion.", "I think I prefer aisle seats"]:
        srv.api("POST", "/v1/threads/%s/messages" % thread["id"], agent, {"role": "user", "content": content})
    srv.api("POST", "/v1/threads/%s/messages" % thread["id"], agent,
            {"role": "assistant", "content": "Noted: a ryokan near Gion and aisle seats."})
    deadline = time.time() + 120
    while time.time() < deadline:
        pending = srv.api("GET", "/v1/memories?user_id=ann&status=pending", agent)["memories"]
        hit = [m for m in pending if "aisle" in m["text"]]
        if hit:
            ids["aisle"] = hit[0]["id"]
            break
        time.sleep(0.5)
    else:
        raise SystemExit("the extractor did not produce the pending candidate")
    return ids


def scenario_bad_key(p):
    p.d.get(p.base + "/ui")
    p.css("#key").send_keys("mnemo_" + "0" * 64)
    p.d.find_element(By.CSS_SELECTOR, "#signin-form button").click()
    p.text("#signin-error", "not valid")
    assert "mnemo_" not in p.d.current_url


def scenario_user_key(p, keys, ids):
    p.sign_in(keys["ann"])
    p.text("#who-text", "user · tenant acme · user ann")
    assert p.nav() == ["memories", "review", "why", "history", "threads", "forget"], p.nav()
    assert keys["ann"] not in p.d.current_url
    assert p.d.execute_script("return document.cookie") == ""
    assert p.d.execute_script("return sessionStorage.getItem('mnemo.inspector.key')") == keys["ann"]
    assert p.d.find_element(By.ID, "user-input").get_attribute("readonly") is not None
    p.css("table.memories")
    texts = [e.text for e in p.all("table.memories .memtext")]
    assert "Ann prefers green tea over coffee" in texts, texts
    assert "Ann 住在上海，最喜欢喝乌龙茶" in texts, texts
    assert not any("Bob" in t or "Gus" in t for t in texts), texts
    # XSS texts are shown as text, and nothing of them ran.
    assert XSS_SCRIPT in texts and XSS_IMG in texts, texts
    p.no_xss()
    p.shot("inspector-memories")
    # Another user's memories are refused, whatever the URL says.
    p.go("memories?user=bob")
    p.css("table.memories")
    texts = [e.text for e in p.all("table.memories .memtext")]
    assert not any("Bob" in t for t in texts), texts
    # Admin views are not offered and fall back to the memories view.
    p.go("ops")
    p.wait(lambda d: d.find_element(By.CSS_SELECTOR, "#view > div").get_attribute("data-view") == "memories",
           what="fallback to memories")
    # The page's own whoami is the user; the API refuses the admin routes to it.
    p.sign_out()


def scenario_agent_key(p, keys, ids):
    p.sign_in(keys["agent"])
    p.text("#who-text", "agent · tenant acme")
    assert p.nav() == ["memories", "review", "why", "history", "threads"], p.nav()
    p.css("table.users")
    users = [e.get_attribute("data-user") for e in p.all("table.users tr[data-user]")]
    assert users == ["ann", "bob"], users
    p.shot("inspector-users")

    # Review queue: the candidate extracted from the thread, with its message.
    p.go("review?user=ann")
    row = p.css('tr[data-id="%s"]' % ids["aisle"])
    p.text('tr[data-id="%s"] .source' % ids["aisle"], "I think I prefer aisle seats")
    assert p.all('tr[data-id="%s"]' % ids["peanuts"]), "the low-confidence memory is pending too"
    p.no_xss()
    p.shot("inspector-review")
    row.find_element(By.CSS_SELECTOR, "button.confirm").click()
    p.text("#toast", "Confirmed 1")
    p.wait(lambda d: not d.find_elements(By.CSS_SELECTOR, 'tr[data-id="%s"]' % ids["aisle"]), what="row to leave")
    assert p.server.api("GET", "/v1/memories/" + ids["aisle"], keys["agent"])["status"] == "active"
    # Bulk: select all, reject.
    p.css('tr[data-id="%s"] input[type=checkbox]' % ids["peanuts"]).click()
    p.d.find_element(By.ID, "bulk-reject").click()
    p.text("#toast", "Rejected 1")
    p.css("#review-empty")
    assert p.server.api("GET", "/v1/memories/" + ids["peanuts"], keys["agent"])["status"] == "deleted"

    # Why this memory: the real search, a bar per factor, the budget cut.
    p.go("why?user=ann&q=what+tea+does+ann+drink&window=600")
    p.css("#why-summary")
    p.text("#why-summary", "budget tokens")
    first = p.css("article.hit")
    assert "green tea" in first.find_element(By.CSS_SELECTOR, ".memtext").text
    bm25 = first.find_element(By.CSS_SELECTOR, '[data-factor="bm25"] .bar-value').text
    assert "rank 1" in bm25, bm25
    width = first.find_element(By.CSS_SELECTOR, '[data-factor="bm25"] .bar-fill').value_of_css_property("width")
    assert float(width.rstrip("px")) > 0, width
    for factor in ["vector", "fused", "decay", "importance", "final"]:
        assert first.find_elements(By.CSS_SELECTOR, '[data-factor="%s"]' % factor), factor
    fates = [e.text for e in p.all("article.hit .badge.kept, article.hit .badge.cut")]
    assert "in prompt" in fates and len(fates) == len(p.all("article.hit")), fates
    p.no_xss()
    p.shot("inspector-why")
    # Chinese query, Chinese memory.
    p.go("why?user=ann&q=%E4%B9%8C%E9%BE%99%E8%8C%B6")
    p.text("article.hit .memtext", "乌龙茶")

    # History: follow the supersede chain both ways.
    p.go("history?id=" + ids["paris"])
    p.css("#chain")
    versions = [e.get_attribute("data-id") for e in p.all("#chain a.version")]
    assert versions == [ids["paris"], ids["lyon"]], versions
    assert p.d.find_element(By.CSS_SELECTOR, "#chain a.current").get_attribute("data-id") == ids["paris"]
    actions = [e.get_attribute("data-action") for e in p.all("#timeline li")]
    assert "create" in actions and "supersede" in actions, actions
    p.d.find_element(By.CSS_SELECTOR, '#chain a[data-id="%s"]' % ids["lyon"]).click()
    p.wait(lambda d: d.find_elements(By.CSS_SELECTOR, '#chain a.current[data-id="%s"]' % ids["lyon"]),
           what="successor to become current")
    p.shot("inspector-history")

    # Threads: goal, turns, token breakdown of the assembled prompt.
    p.go("threads?id=" + ids["thread"])
    p.text("dd.goal", "Plan Ann's trip to Kyoto in April")
    p.css("#tokens .legend")
    total = p.d.find_element(By.CSS_SELECTOR, '#tokens [data-part="goal"]').text
    assert int(total.split()[-1]) > 0, total
    p.shot("inspector-threads")
    p.sign_out()


def scenario_admin_key(p, keys, ids, run_eval):
    p.sign_in(keys["admin"])
    p.text("#who-text", "admin · tenant acme")
    assert p.nav() == ["memories", "review", "why", "history", "threads", "forget", "evals", "ops"], p.nav()
    p.css("table.users")
    users = [e.get_attribute("data-user") for e in p.all("table.users tr[data-user]")]
    assert "gus" not in users, users

    p.go("ops")
    p.css("table.keys")
    key_rows = p.all("table.keys tr[data-key]")
    assert len(key_rows) == 3, "acme's three keys, not globex's: %d" % len(key_rows)
    form = p.css("#key-form")
    form.find_element(By.CSS_SELECTOR, "input[name=user_id]").send_keys("carol")
    form.find_element(By.CSS_SELECTOR, "button").click()
    secret = p.css("#new-secret code.secret").text
    assert secret.startswith("mnemo_") and len(secret) > 40, secret
    assert p.server.api("GET", "/v1/whoami", secret)["user_id"] == "carol"
    p.css("table.jobs")
    p.d.find_element(By.CSS_SELECTOR, 'tr[data-job="ttl-sweep"] button.dry').click()
    p.text("#dry-run", "nothing was written")
    p.text("#index", "lexical documents")
    p.text("#policy pre", "budget_fraction")
    p.shot("inspector-operations")
    p.d.find_element(By.CSS_SELECTOR, "#new-secret button:last-child").click()  # Done: the secret is gone
    p.wait(lambda d: not d.find_elements(By.CSS_SELECTOR, "#new-secret code.secret"), what="secret to go")
    # The table is drawn again after "Done"; carol's row exists only in the new one.
    carol = p.wait(lambda d: d.find_element(
        By.XPATH, "//table[contains(@class, 'keys')]//tr[td[normalize-space()='carol']]"), what="carol's key row")
    carol.find_element(By.CSS_SELECTOR, "button.reject").click()
    p.d.switch_to.alert.accept()
    p.text("#toast", "Revoked")
    assert p.server.api("GET", "/v1/whoami", secret, ok=False)["status"] == 401

    p.go("evals")
    p.css("#eval-set")
    sets = [o.get_attribute("value") for o in p.all("#eval-set option")]
    assert "memory_behaviour" in sets, sets
    if run_eval:
        from selenium.webdriver.support.ui import Select
        Select(p.d.find_element(By.ID, "eval-set")).select_by_value("memory_behaviour")
        p.d.find_element(By.ID, "eval-start").click()
        p.css('#eval-status [data-status]')
        p.wait(lambda d: d.find_elements(By.CSS_SELECTOR, "article.report"), timeout=900, what="the evaluation report")
        p.text("article.report", "ndcg@10")
    p.shot("inspector-evaluations")

    # Forget bob: typed confirmation, receipt, live verification.
    p.go("forget?user=bob")
    button = p.css("#forget-go")
    assert not button.is_enabled()
    p.css("#forget-confirm").send_keys("bo")
    assert not button.is_enabled()
    p.css("#forget-confirm").send_keys("b")
    assert button.is_enabled()
    button.click()
    p.css("#receipt table")
    erased = p.d.find_element(By.CSS_SELECTOR, '#receipt tr[data-field="memories"] td:last-child').text
    assert erased == "2", erased
    p.wait(lambda d: d.find_elements(By.CSS_SELECTOR, '#erased[data-erased="true"]'), what="verified erasure")
    for field in ["memories", "audit_events", "lexical_docs", "vectors"]:
        v = p.d.find_element(By.CSS_SELECTOR, '#verification tr[data-field="%s"] td:last-child' % field).text
        assert v == "0", (field, v)
    p.shot("inspector-forget")
    p.go("memories?user=")
    p.css("table.users")
    users = [e.get_attribute("data-user") for e in p.all("table.users tr[data-user]")]
    assert "bob" not in users and "ann" in users, users
    p.sign_out()


def scenario_phone(driver_factory, base, keys, shots):
    d = driver_factory(390, 844)
    try:
        p = Page(d, base, shots)
        p.sign_in(keys["ann"])
        p.css("table.memories")
        overflow = d.execute_script("return document.documentElement.scrollWidth - window.innerWidth")
        assert overflow <= 1, "the page scrolls sideways on a phone: %d px" % overflow
        p.shot("inspector-phone-memories")
        p.go("why?user=ann&q=green+tea")
        p.css("article.hit")
        overflow = d.execute_script("return document.documentElement.scrollWidth - window.innerWidth")
        assert overflow <= 1, "why view scrolls sideways on a phone: %d px" % overflow
        p.shot("inspector-phone-why")
    finally:
        d.quit()


def seed_many(srv, keys, n):
    """N memories for user `big`, written straight into the SQLite store
    while the server is stopped, each with a cached embedding (the vector of
    one real memory), so the start's reconcile indexes them without
    re-embedding. Status `active`, timestamps one second apart."""
    srv.api("POST", "/v1/memories", keys["agent"], dict(user_id="big", text="big user seed memory", refresh=True))
    srv.stop()
    db = sqlite3.connect(os.path.join(srv.data_dir, "mnemo.db"))
    model, vector = db.execute(
        "SELECT model_id, vector FROM embedding_cache WHERE user_id = 'big' LIMIT 1").fetchone()
    start_ms = int(time.time() * 1000) - n * 1000
    kinds = ["fact", "preference", "event", "instruction"]
    rows, cache = [], []
    for i in range(n):
        text = "Big memory %d: note about topic %d, 第%d条记录" % (i, i % 977, i)
        h = hashlib.sha256(text.encode()).hexdigest()
        at = start_ms + i * 1000
        mid = str(uuid7(at))
        rows.append((mid, "acme", "long_term", "big", None, kinds[i % 4], text, h, 0.5, 1.0, "active",
                     at, at, None, 0, None, "{}", "{}", model, 1, None, None, 0.5, None))
        cache.append(("acme", "big", model, h, vector))
    cols = ("id, tenant_id, tier, user_id, thread_id, kind, text, text_sha256, importance, confidence, status, "
            "created_at, updated_at, last_accessed_at, access_count, expires_at, source, metadata, "
            "embedding_model, version, supersedes, superseded_by, base_importance, cooled_at")
    with db:
        db.executemany("INSERT INTO memories (%s) VALUES (%s)" % (cols, ",".join("?" * 24)), rows)
        db.executemany("INSERT OR IGNORE INTO embedding_cache (tenant_id, user_id, model_id, text_sha256, vector) "
                       "VALUES (?,?,?,?,?)", cache)
    db.close()
    t = time.time()
    srv.start(timeout=3600)
    log("seeded %d memories for `big`; the restart (reconcile) took %.1f s" % (n, time.time() - t))


def uuid7(ms):
    rand = uuid.uuid4().int & ((1 << 74) - 1)
    value = (ms & ((1 << 48) - 1)) << 80 | 0x7 << 76 | (rand >> 62) << 64 | 0b10 << 62 | (rand & ((1 << 62) - 1))
    return uuid.UUID(int=value)


def measure(driver_factory, base, keys, n, runs=5):
    """First load of the memories view of `big` in a fresh profile: bytes
    transferred (page, assets and API calls) and time to first render."""
    out = []
    for _ in range(runs):
        d = driver_factory(1280, 900)
        try:
            d.get(base + "/ui/icon.svg")  # same origin, to seed the key before the page loads
            d.execute_script("sessionStorage.setItem('mnemo.inspector.key', arguments[0])", keys["agent"])
            d.get(base + "/ui#/memories?user=big")
            WebDriverWait(d, 120).until(lambda d: d.execute_script(
                "return performance.getEntriesByName('mnemo-first-render').length"))
            m = d.execute_script("""
                const nav = performance.getEntriesByType('navigation')[0];
                const res = performance.getEntriesByType('resource');
                const mark = performance.getEntriesByName('mnemo-first-render')[0].startTime;
                const assets = res.filter(r => r.name.includes('/ui/'));
                const apis = res.filter(r => r.name.includes('/v1/'));
                const sum = (xs, k) => xs.reduce((a, r) => a + (r[k] || 0), 0);
                return {render_ms: mark, html: nav.transferSize, assets: sum(assets, 'transferSize'),
                        api: sum(apis, 'transferSize'), decoded: nav.decodedBodySize + sum(assets, 'decodedBodySize'),
                        rows: document.querySelectorAll('table.memories tbody tr').length};""")
            out.append(m)
        finally:
            d.quit()
    out.sort(key=lambda m: m["render_ms"])
    med = out[len(out) // 2]
    log("first load with %d memories for one user: time to first render median %.0f ms (min %.0f, max %.0f, %d runs); "
        "transferred %.1f KB (page+assets %.1f KB, API %.1f KB; assets decoded %.1f KB); %d rows shown"
        % (n, med["render_ms"], out[0]["render_ms"], out[-1]["render_ms"], runs,
           (med["html"] + med["assets"] + med["api"]) / 1024, (med["html"] + med["assets"]) / 1024,
           med["api"] / 1024, med["decoded"] / 1024, med["rows"]))
    return med


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mnemo", required=True)
    ap.add_argument("--shots", default="")
    ap.add_argument("--perf", type=int, default=0, help="also seed N memories for one user and measure the first load")
    ap.add_argument("--eval", action="store_true", help="also run an evaluation from the page (memory_behaviour)")
    args = ap.parse_args()
    if args.shots:
        os.makedirs(args.shots, exist_ok=True)
    work = tempfile.mkdtemp(prefix="mnemo-browser-")
    data = os.path.join(work, "data")
    os.makedirs(data)
    srv = Server(os.path.abspath(args.mnemo), data, free_port())
    profiles = []

    def factory(w=1280, h=900):
        prof = tempfile.mkdtemp(prefix="profile-", dir=work)
        profiles.append(prof)
        return browser(prof, w, h)

    try:
        keys = {"admin": srv.key("acme", "admin"), "agent": srv.key("acme", "agent"),
                "ann": srv.key("acme", "user", "ann"), "globex": srv.key("globex", "agent")}
        srv.start()
        ids = seed(srv, keys)
        log("seeded; starting Chromium")
        d = factory()
        try:
            p = Page(d, srv.base, args.shots)
            p.server = srv
            steps = [("a bad key is refused", lambda: scenario_bad_key(p)),
                     ("user key: own memories only, XSS inert", lambda: scenario_user_key(p, keys, ids)),
                     ("agent key: users, review, why, history, threads", lambda: scenario_agent_key(p, keys, ids)),
                     ("admin key: keys, jobs, index, policy, evals, forget", lambda: scenario_admin_key(p, keys, ids, args.eval))]
            for name, step in steps:
                step()
                log("ok: " + name)
            errors = [e for e in d.get_log("browser") if e["level"] == "SEVERE" and "/v1/" not in e["message"]]
            assert not errors, "console errors: %r" % errors
        finally:
            d.quit()
        scenario_phone(factory, srv.base, keys, args.shots)
        log("ok: phone layout")
        if args.perf:
            seed_many(srv, keys, args.perf)
            measure(factory, srv.base, keys, args.perf)
        log("all scenarios passed")
    finally:
        srv.stop()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
