// The board keeps itself current: it polls its data URL every POLL_MS with If-None-Match (an
// unchanged board answers 304), asks only for the cards that changed since the version it
// holds, and moves existing card elements rather than redrawing them.
(function () {
  "use strict";
  const POLL_MS = 2000;
  const PAIRS_MS = 30000; // the likely duplicates strip: finding pairs reads every live title
  const COLUMNS = ["ready", "blocked", "claimed", "in_review", "done"];
  const board = document.getElementById("board");
  const dataUrl = board.dataset.url;
  const cards = new Map(); // task number -> card element (kept across updates)
  let etag = null;
  let version = null;
  let lastHeard = null;

  function el(tag, className, text) {
    const node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined && text !== null) node.textContent = text;
    return node;
  }

  function duration(seconds) {
    const units = [["d", 86400], ["h", 3600], ["min", 60]];
    for (const [unit, size] of units) {
      if (seconds >= size) return Math.floor(seconds / size) + " " + unit;
    }
    return Math.floor(seconds) + " s";
  }

  function ago(iso) {
    const seconds = Math.max(0, (Date.now() - Date.parse(iso)) / 1000);
    return seconds < 60 ? "just now" : duration(seconds) + " ago";
  }

  function fill(card, data) {
    card.replaceChildren();
    card.href = data.url;
    card.dataset.number = data.number;
    const head = el("div", "head");
    head.append(el("span", "num", "#" + data.number), el("span", "prio p" + data.priority, "P" + data.priority));
    if (data.slot) head.append(el("span", "slot", data.slot));
    card.append(head, el("div", "title", data.title));
    if (data.labels.length) {
      const labels = el("div", "labels");
      data.labels.forEach(function (label) { labels.append(el("span", "", label)); });
      card.append(labels);
    }
    const meta = el("div", "meta");
    if (data.holders.length) meta.append(el("span", "who", data.holders.join(", ")), " · ");
    if (data.lapsing) meta.append(el("span", "lapsing", "claim lapses soon"), " · ");
    if (data.blocked_by.length) meta.append(el("span", "wait", "waits on " + data.blocked_by.map(n => "#" + n).join(", ")), " · ");
    if (data.attempt && (data.status === "in_review" || data.status === "done")) {
      const a = data.attempt;
      const text = a.state === "waiting"
        ? "attempt " + a.number + " waiting, " + a.confirmations + "/" + a.needed + " confirmed"
        : "attempt " + a.number + " " + a.state;
      meta.append(el("span", "attempt", text), " · ");
    }
    const age = el("span", "age");
    age.dataset.verb = data.age_verb;
    age.dataset.since = data.since;
    age.textContent = data.age_verb + " " + ago(data.since);
    meta.append(age);
    if (data.blocks.length) meta.append(" · blocks " + data.blocks.map(n => "#" + n).join(", "));
    card.append(meta);
  }

  function refreshAges() {
    document.querySelectorAll(".card .age").forEach(function (age) {
      age.textContent = age.dataset.verb + " " + ago(age.dataset.since);
    });
  }

  function setFigures(s) {
    const set = (id, value) => { document.getElementById(id).textContent = value; };
    set("fig-live", s.live);
    set("fig-ready", s.ready);
    set("fig-blocked", s.blocked);
    set("fig-claimed", (s.by_status.claimed || 0) + (s.by_status.assigned || 0));
    set("fig-awaiting", s.awaiting_check);
    set("fig-done", s.done_last_7_days);
    set("fig-duplicates", s.duplicates_prevented_24h);
    set("fig-oldest", s.oldest_ready ? "#" + s.oldest_ready.task + ", " + duration(s.oldest_ready.age_seconds) : "none");
  }

  function query(extra) {
    const params = new URLSearchParams();
    const label = document.getElementById("filter-label").value.trim().toLowerCase();
    const member = document.getElementById("filter-member").value;
    if (label) params.set("label", label);
    if (member) params.set("member", member);
    if (version !== null) params.set("since", version);
    Object.entries(extra || {}).forEach(([k, v]) => params.set(k, v));
    return dataUrl + "?" + params.toString();
  }

  // SPEC §16's strip: each pair with Keep #a / Keep #b (the other is superseded) and Not a
  // duplicate, as forms posting to the admin's page for them, which sends the page back here.
  function setDuplicates(pairs) {
    const strip = document.getElementById("duplicates");
    const list = document.getElementById("duplicate-pairs");
    const csrf = document.getElementById("csrf");
    list.replaceChildren();
    strip.hidden = pairs.length === 0;
    pairs.forEach(function (pair) {
      const [a, b] = pair.tasks;
      const item = el("li", "pair");
      item.append(el("span", "score", pair.score.toFixed(2)));
      [a, b].forEach(function (t) { item.append(el("span", "task", "#" + t.id + " " + t.title)); });
      if (csrf) {
        const form = el("form", "actions");
        form.method = "post";
        form.action = strip.dataset.url;
        const fields = {csrfmiddlewaretoken: csrf.value, first: a.id, second: b.id, next: location.pathname + location.search};
        Object.entries(fields).forEach(function ([name, value]) {
          const input = el("input"); input.type = "hidden"; input.name = name; input.value = value; form.append(input);
        });
        [[a.id, "keep", "Keep #" + a.id], [b.id, "keep", "Keep #" + b.id], [1, "distinct", "Not a duplicate"]]
          .forEach(function ([value, name, label]) {
            const button = el("button", "", label); button.type = "submit"; button.name = name; button.value = value;
            form.append(button);
          });
        item.append(form);
      }
      list.append(item);
    });
  }

  async function pollPairs() {
    const url = document.getElementById("duplicates").dataset.pairs;
    try {
      const response = await fetch(url, {headers: {"Accept": "application/json"}, credentials: "same-origin",
                                         cache: "no-store"});
      if (response.ok) setDuplicates((await response.json()).duplicates);
    } catch (error) { /* the cards' state line says when the server is away */ }
    setTimeout(pollPairs, PAIRS_MS);
  }

  function apply(data) {
    setFigures(data.summary);
    Object.entries(data.cards).forEach(function ([number, card]) {
      let node = cards.get(Number(number));
      if (!node) {
        node = el("a", "card");
        node.id = "card-" + number;
        cards.set(Number(number), node);
      } else {
        node.classList.remove("flash");
        void node.offsetWidth; // restart the highlight
        node.classList.add("flash");
      }
      fill(node, card);
    });
    const shown = new Set();
    const missing = [];
    COLUMNS.forEach(function (column) {
      const list = document.getElementById("cards-" + column);
      const wanted = data.columns[column].cards;
      let cursor = list.firstElementChild;
      wanted.forEach(function (number) {
        shown.add(number);
        const node = cards.get(number);
        if (!node) { missing.push(number); return; }
        if (node !== cursor) list.insertBefore(node, cursor); // moves it, same element
        else cursor = cursor.nextElementSibling;
      });
      while (cursor) { const next = cursor.nextElementSibling; if (!shown.has(Number(cursor.dataset.number))) cursor.remove(); cursor = next; }
      document.getElementById("count-" + column).textContent = data.columns[column].total;
      const more = document.getElementById("more-" + column);
      const rest = data.columns[column].total - wanted.length;
      more.hidden = rest <= 0;
      more.textContent = rest > 0 ? "and " + rest + " more" : "";
    });
    cards.forEach(function (node, number) { if (!shown.has(number)) { node.remove(); cards.delete(number); } });
    version = data.version;
    return missing;
  }

  async function poll(extra) {
    const headers = {"Accept": "application/json"};
    if (etag && !extra) headers["If-None-Match"] = etag;
    const response = await fetch(query(extra), {headers: headers, credentials: "same-origin", cache: "no-store"});
    if (response.status === 304) return;
    if (!response.ok) throw new Error("board data: HTTP " + response.status);
    if (!extra) etag = response.headers.get("ETag");
    const missing = apply(await response.json());
    if (missing.length && !extra) await poll({numbers: missing.join(",")});
  }

  async function tick() {
    const state = document.getElementById("live-state");
    try {
      await poll();
      lastHeard = Date.now();
      state.textContent = "live";
      state.classList.remove("stale");
    } catch (error) {
      state.textContent = "reconnecting… (" + error.message + ")";
      state.classList.add("stale");
    }
    refreshAges();
    setTimeout(tick, POLL_MS);
  }

  function refilter() {
    etag = null;
    version = null; // a new filter shows other cards: fetch them whole
    poll().catch(function () {});
  }

  document.getElementById("filter-label").addEventListener("change", refilter);
  document.getElementById("filter-member").addEventListener("change", refilter);
  document.getElementById("filters").addEventListener("submit", function (event) { event.preventDefault(); refilter(); });
  tick();
  pollPairs();
})();
